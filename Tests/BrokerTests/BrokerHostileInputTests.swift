import BrokerCore
import Bus
import Foundation
import Synchronization
import TestSupport
import Testing
import Wire
import ZMQ

/// A broker on ephemeral loopback ports with `configure` applied to its configuration, and a
/// heartbeat slow enough that raw workers, which do not beat, stay registered.
func startBroker(heartbeatMs: Int = BrokerRoutingTests.silentWorkerHeartbeatMs, _ configure: (inout BrokerConfiguration) -> Void) async throws -> (Broker, Broker.Endpoints) {
    var configuration = BrokerConfiguration()
    configuration.rpcBind = "tcp://127.0.0.1:*"
    configuration.pubBind = "tcp://127.0.0.1:*"
    configuration.subBind = "tcp://127.0.0.1:*"
    configuration.heartbeatInterval = .milliseconds(heartbeatMs)
    configure(&configuration)
    let broker = try Broker(configuration: configuration, logger: testLogger("broker"))
    return (broker, try await broker.start())
}

/// Calls `echo` again and again until stopped, keeping the longest round trip: what an honest
/// caller sees while someone else attacks the broker.
final class RoundTripWatch: Sendable {
    private struct Seen {
        var calls = 0
        var longest = Duration.zero
        var failures: [String] = []
    }

    private let seen = Mutex(Seen())
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ client: Bus) {
        let handle = Task { [weak self] in
            while !Task.isCancelled {
                let started = ContinuousClock.now
                var failure: String?
                do {
                    _ = try await client.call(Echo.echo, EchoRequest(text: "ping"), options: CallOptions(timeout: .seconds(20)))
                } catch {
                    failure = "\(error)"
                }
                let took = ContinuousClock.now - started
                if Task.isCancelled { break }
                self?.seen.withLock { seen in
                    seen.calls += 1
                    seen.longest = max(seen.longest, took)
                    if let failure { seen.failures.append(failure) }
                }
            }
        }
        task.withLock { $0 = handle }
    }

    /// Stops calling; returns the calls made, the longest round trip and the failures.
    func stop() async -> (calls: Int, longest: Duration, failures: [String]) {
        let handle = task.withLock { $0 }
        handle?.cancel()
        await handle?.value
        return seen.withLock { ($0.calls, $0.longest, $0.failures) }
    }
}

@Suite("Hostile peers cannot take the broker down or make it do unbounded work")
struct BrokerHostileInputTests {
    @Test("30,000 subscriptions from one socket, then its close, keep every concurrent call under a second")
    func subscriptionFlood() async throws {
        let (broker, endpoints) = try await startBroker(heartbeatMs: 1000) { _ in }
        let world = try await EchoWorld.start(broker: broker, endpoints: endpoints, heartbeatMs: 1000)
        let watch = RoundTripWatch(world.client)
        // No high-water mark: libzmq drops subscriptions a SUB cannot queue, and all must go.
        let flood = try await RawPeer.connect(endpoints.sub, type: .sub, options: [(.sendHighWaterMark, 0)], timeoutMs: 200)
        try await flood.subscribe((0..<30_000).map { "flood.\($0)." })
        // Subscriptions travel in order: once the last one delivers an event, the broker's
        // XPUB has taken in all 30,000.
        try await flood.subscribe([Echo.echoed.name])
        try await eventually("the flooding socket's subscriptions reached the broker") {
            try world.client.publish(Echo.echoed, EchoReply(text: "probe"))
            return await flood.receive() != nil
        }
        await flood.close()
        // The broker learns of the close and takes in 30,000 unsubscriptions; calls go on.
        try await Task.sleep(for: .seconds(3))
        let seen = await watch.stop()
        #expect(seen.failures.isEmpty, "\(seen.failures.prefix(3))")
        #expect(seen.calls > 10)
        #expect(seen.longest < .seconds(1), "longest round trip \(seen.longest) over \(seen.calls) calls")
        await world.stop()
    }

    @Test("a subscription longer than BROKER_MAX_SUBSCRIPTION_BYTES disconnects its subscriber; one at the limit is served")
    func subscriptionLength() async throws {
        let (broker, endpoints) = try await startBroker(heartbeatMs: 1000) { $0.maxSubscriptionBytes = 64 }
        let world = try await EchoWorld.start(broker: broker, endpoints: endpoints, heartbeatMs: 1000)
        let topic = "echo." + String(repeating: "a", count: 300)
        let atLimit = try await RawPeer.connect(endpoints.sub, type: .sub, timeoutMs: 50)
        try await atLimit.subscribe([String(topic.prefix(64))])
        let over = try await RawPeer.connect(endpoints.sub, type: .sub, timeoutMs: 50)
        try await over.subscribe([String(topic.prefix(200))])
        var received = 0
        try await eventually("events reach the subscriber whose prefix is at the limit") {
            try world.client.publish(topic: topic, payload: Data("{}".utf8))
            if await atLimit.receive() != nil { received += 1 }
            return received >= 5
        }
        #expect(await over.receive(timeoutMs: 200) == nil, "the longer subscription never took effect")
        let reply = try await world.client.call(Echo.echo, EchoRequest(text: "still routing"))
        #expect(reply.text == "still routing")
        await atLimit.close()
        await over.close()
        await world.stop()
    }
}
