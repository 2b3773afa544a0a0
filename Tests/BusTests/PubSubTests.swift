import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

/// A publisher bus and a subscriber bus on one broker, with the subscription known to be live.
struct PubSubWorld: TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let publisher: Bus
    let subscriber: Bus

    static func start() async throws -> PubSubWorld {
        let (broker, endpoints) = try await startBroker()
        return PubSubWorld(
            broker: broker, endpoints: endpoints,
            publisher: try Bus(configuration: busConfiguration(endpoints, source: "pub-test"), logger: testLogger("pub")),
            subscriber: try Bus(configuration: busConfiguration(endpoints, source: "sub-test"), logger: testLogger("sub")))
    }

    /// Subscribes to `prefixes` plus a probe topic, and returns once a probe got through, so the
    /// subscription is known to have reached the broker.
    func collect(_ prefixes: [String]) async throws -> EventCollector {
        let collector = EventCollector(try subscriber.subscribe(prefixes + ["probe."]))
        try await eventually("subscription live") {
            try publisher.publish(topic: "probe.ping", payload: Data("{}".utf8))
            return collector.all.contains { $0.topic == "probe.ping" }
        }
        return collector
    }

    func stop() async {
        await publisher.shutdown()
        await subscriber.shutdown()
        await broker.stop()
    }
}

@Suite("Events through the broker's proxy")
struct PubSubTests {
    @Test("a subscription receives the topics its prefixes match, and only those")
    func prefixFilter() async throws {
        try await withWorld(PubSubWorld.start()) { world in
            let events = try await world.collect(["timer."])
            for topic in ["timer.completed", "habit.due", "timer.paused", "timerx.odd"] {
                try world.publisher.publish(topic: topic, payload: Data(#"{"t":"\#(topic)"}"#.utf8), user: "u1")
            }
            try await eventually("timer events arrive") { events.topics().filter { $0 != "probe.ping" }.count >= 2 }
            try world.publisher.publish(topic: "timer.last", payload: Data("{}".utf8))
            try await eventually("the last one arrives") { events.topics().contains("timer.last") }
            #expect(events.topics().filter { $0 != "probe.ping" } == ["timer.completed", "timer.paused", "timer.last"])
            let first = try #require(events.all.first { $0.topic == "timer.completed" })
            #expect(first.header.source == "pub-test" && first.header.user == "u1")
            #expect(first.header.instance == world.publisher.configuration.instance)
            events.cancel()
        }
    }

    @Test("the publisher stamps seq 1, 2, 3 … on its stream and the subscriber decodes typed payloads")
    func typedAndSequenced() async throws {
        try await withWorld(PubSubWorld.start()) { world in
            let events = try await world.collect([Echo.echoed.name])
            for index in 1...5 { try world.publisher.publish(Echo.echoed, EchoReply(text: "n\(index)")) }
            try await eventually("five events") { events.all.filter { $0.topic == Echo.echoed.name }.count == 5 }
            let echoed = events.all.filter { $0.topic == Echo.echoed.name }
            #expect(try echoed.map { try $0.decode(Echo.echoed).text } == ["n1", "n2", "n3", "n4", "n5"])
            let seqs = echoed.map(\.header.seq)
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 })
            #expect(events.all.allSatisfy { $0.gap == nil })
            events.cancel()
        }
    }

    @Test("a burst of events from several tasks arrives complete, each stream in seq order")
    func burst() async throws {
        try await withWorld(PubSubWorld.start()) { world in
            let events = try await world.collect(["burst."])
            let publisher = world.publisher
            await withTaskGroup(of: Void.self) { group in
                for task in 0..<4 {
                    group.addTask {
                        for index in 0..<500 { try? publisher.publish(topic: "burst.t\(task)", payload: Data(#"{"n":\#(index)}"#.utf8)) }
                    }
                }
            }
            try await eventually("2000 events") { events.all.filter { $0.topic.hasPrefix("burst.") }.count == 2000 }
            let seqs = events.all.filter { $0.topic.hasPrefix("burst.") }.map(\.header.seq)
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 })
            for task in 0..<4 {
                let payloads = events.all.filter { $0.topic == "burst.t\(task)" }.map { String(decoding: $0.payload, as: UTF8.self) }
                #expect(payloads == (0..<500).map { #"{"n":\#($0)}"# })
            }
            #expect(events.all.allSatisfy { $0.gap == nil })
            events.cancel()
        }
    }

    @Test("a jump in seq is reported as a gap with the missed count")
    func gapDetection() async throws {
        try await withWorld(PubSubWorld.start()) { world in
            let events = try await world.collect(["stream."])
            for seq: Int64 in [1, 2, 5, 6] {
                let header = EventHeader(id: "e\(seq)", source: "durable", instance: "d-1", seq: seq, ts: Date().unixMilliseconds)
                try world.publisher.publish(topic: "stream.item", header: header, payload: Data("{}".utf8))
            }
            try await eventually("four events") { events.all.filter { $0.topic == "stream.item" }.count == 4 }
            let gaps = events.all.filter { $0.topic == "stream.item" }.map(\.gap)
            #expect(gaps == [nil, nil, SeqGap(source: "durable", instance: "d-1", expected: 3, received: 5), nil])
            #expect(gaps[2]?.missed == 2)
            events.cancel()
        }
    }

    @Test("events published right after a publisher starts are held until the broker subscribed, not lost")
    func noSlowJoinerLoss() async throws {
        try await withWorld(PubSubWorld.start()) { world in
            let events = try await world.collect(["early."])
            let fresh = try Bus(configuration: busConfiguration(world.endpoints, source: "fresh"), logger: testLogger("fresh"))
            for index in 1...3 { try fresh.publish(topic: "early.bird", payload: Data(#"{"n":\#(index)}"#.utf8)) }
            try await eventually("all three early events") { events.all.filter { $0.topic == "early.bird" }.count == 3 }
            #expect(events.all.filter { $0.topic == "early.bird" }.map(\.header.seq) == [1, 2, 3])
            events.cancel()
            await fresh.shutdown()
        }
    }

    @Test("a topic not of the protocol's form is refused before anything is sent or stamped", arguments: [
        "", "timer", "Timer.completed", "timer.Completed", "timer completed", "timer..completed", ".timer", "timer.", "bus.rpc", "timer/x.y", "tímer.x",
    ])
    func topicForm(_ topic: String) async throws {
        try await withWorld(PubSubWorld.start()) { world in
            let events = try await world.collect(["timer.", "bus.", ""])
            let error = #expect(throws: BusError.self) { try world.publisher.publish(topic: topic, payload: Data("{}".utf8)) }
            #expect(error?.code == .invalidArgument)
            try world.publisher.publish(topic: "timer.ai-stream_2", payload: Data("{}".utf8))
            try await eventually("the valid one arrives") { events.topics().contains("timer.ai-stream_2") }
            // Nothing was sent for the refused topic, and it took no seq: the valid one follows the
            // last probe (probes sent before the subscription was live are lost, so seqs start later).
            #expect(!events.topics().contains(topic))
            let seqs = events.all.map(\.header.seq)
            #expect(seqs == Array(seqs[0]...(seqs[0] + Int64(seqs.count) - 1)))
            events.cancel()
        }
    }

    @Test("a seq tracker reports jumps but not first sightings, repeats or restarts")
    func seqTracker() {
        var tracker = SeqTracker()
        func header(_ source: String, _ seq: Int64) -> EventHeader {
            EventHeader(id: "x", source: source, instance: "i", seq: seq, ts: 0)
        }
        #expect(tracker.observe(header("a", 7)) == nil)
        #expect(tracker.observe(header("a", 8)) == nil)
        #expect(tracker.observe(header("a", 11))?.missed == 2)
        #expect(tracker.observe(header("b", 1)) == nil)
        #expect(tracker.observe(header("a", 3)) == nil)
        #expect(tracker.observe(header("a", 5))?.missed == 1)
    }
}

@Suite("Subscriptions and shutdown")
struct SubscriptionLifetimeTests {
    @Test("iterating a subscription ends when the bus shuts down")
    func endsOnShutdown() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let bus = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("sub"))
            let subscription = try bus.subscribe(["anything."])
            let iteration = Task { for await _ in subscription {} }
            try await Task.sleep(for: .milliseconds(50))
            await bus.shutdown()
            try await withTimeout(.seconds(5)) { await iteration.value }
        }
    }
}
