import BrokerCore
import Bus
import Foundation
import Synchronization
import TestSupport
import Testing
import Wire

@Suite("Events are bounded in bytes: what a publisher may send, what a subscription holds")
struct EventLimitTests {
    @Test("an event whose payload or header is over BROKER_MAX_EVENT_BYTES is refused before it takes a seq; the stream goes on without a gap")
    func oversizedEventRefused() async throws {
        try await withWorld(PubSubWorld.start()) { world in
            let events = try await world.collect(["large."])
            var configuration = busConfiguration(world.endpoints, source: "limited")
            configuration.maxEventBytes = 10_000
            let publisher = try Bus(configuration: configuration, logger: testLogger("limited"))
            try publisher.publish(topic: "large.event", payload: Data(#"{"n":1}"#.utf8))
            let payload = Data(("\"" + String(repeating: "x", count: 20_000) + "\"").utf8)
            #expect {
                try publisher.publish(topic: "large.event", payload: payload)
            } throws: { error in
                let error = error as? BusError
                return error?.code == .resourceExhausted && error?.details?["setting"] == .string("BROKER_MAX_EVENT_BYTES")
                    && error?.details?["bytes"] == .int(Int64(payload.count))
            }
            // A header is as large as its user and meta make it.
            let hugeUser = String(repeating: "u", count: 20_000)
            #expect(throws: BusError.self) { try publisher.publish(topic: "large.event", payload: Data("{}".utf8), user: hugeUser) }
            let header = EventHeader(id: "d1", source: "durable", instance: "d-1", seq: 1, ts: Date().unixMilliseconds)
            #expect(throws: BusError.self) { try publisher.publish(topic: "large.event", header: header, payload: payload) }
            try publisher.publish(topic: "large.event", payload: Data(#"{"n":2}"#.utf8))
            try await eventually("the two small events") { events.all.filter { $0.topic == "large.event" }.count == 2 }
            let received = events.all.filter { $0.topic == "large.event" }
            #expect(received.map(\.header.seq) == [1, 2] && received.allSatisfy { $0.gap == nil })
            events.cancel()
            await publisher.shutdown()
        }
    }

    @Test("a subscription nobody reads holds at most BUS_SUBSCRIPTION_BUFFER_BYTES; the rest is dropped and shows as a gap")
    func subscriptionBufferBoundedInBytes() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let publisher = try Bus(configuration: busConfiguration(endpoints, source: "big-pub"), logger: testLogger("pub"))
            var configuration = busConfiguration(endpoints, source: "slow-sub")
            configuration.subscriptionBufferBytes = 50_000
            let subscriber = try Bus(configuration: configuration, logger: testLogger("sub"))
            let subscription = try subscriber.subscribe(["bulk."])
            // The consumer reads until the subscription is live, then stops reading until the gate
            // opens, as a consumer stuck on slow work would.
            let (gate, opening) = AsyncStream<Void>.makeStream()
            let received = Received()
            let consumer = Task {
                var iterator = subscription.makeAsyncIterator()
                while let event = await iterator.next() {
                    received.append(event)
                    if event.topic == "bulk.probe" { break }
                }
                for await _ in gate { break }
                while let event = await iterator.next() { received.append(event) }
            }
            try await eventually("subscription live") {
                try publisher.publish(topic: "bulk.probe", payload: Data("{}".utf8))
                return !received.events.isEmpty
            }
            let payload = Data(("\"" + String(repeating: "x", count: 10_000) + "\"").utf8)
            for _ in 0..<40 { try publisher.publish(topic: "bulk.item", payload: payload) }
            try await Task.sleep(for: .seconds(1))
            opening.yield()
            try await Task.sleep(for: .milliseconds(500))
            let held = received.events.filter { $0.topic == "bulk.item" }.count
            #expect(held >= 1 && held <= 5, "50 kB hold at most five events of 10 kB; held \(held)")
            try publisher.publish(topic: "bulk.last", payload: Data("{}".utf8))
            try await eventually("the next event") { received.events.contains { $0.topic == "bulk.last" } }
            let last = try #require(received.events.last)
            #expect(last.gap?.missed == Int64(40 - held), "the dropped events show as a gap: \(String(describing: last.gap))")
            consumer.cancel()
            await publisher.shutdown()
            await subscriber.shutdown()
        }
    }
}

/// Events a task received, readable from others.
final class Received: Sendable {
    private let list = Mutex<[BusEvent]>([])
    func append(_ event: BusEvent) { list.withLock { $0.append(event) } }
    var events: [BusEvent] { list.withLock { $0 } }
}
