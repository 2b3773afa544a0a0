import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

/// Two real brokers, and every bus given both: the pair of docs/operations.md, "A broker pair".
private struct BrokerPair {
    let first: (broker: Broker, endpoints: Broker.Endpoints)
    let second: (broker: Broker, endpoints: Broker.Endpoints)

    static func start() async throws -> BrokerPair {
        BrokerPair(first: try await startBroker(), second: try await startBroker())
    }

    /// A configuration naming both brokers, the first preferred.
    func configuration(source: String, heartbeatMs: Int = testHeartbeatMs) -> BusConfiguration {
        var configuration = busConfiguration(first.endpoints, source: source, heartbeatMs: heartbeatMs)
        configuration.rpcEndpoint = "\(first.endpoints.rpc),\(second.endpoints.rpc)"
        configuration.pubEndpoint = "\(first.endpoints.pub),\(second.endpoints.pub)"
        configuration.subEndpoint = "\(first.endpoints.sub),\(second.endpoints.sub)"
        return configuration
    }
}

@Suite("A broker pair: every process connected to two brokers")
struct BrokerPairTests {
    @Test("a subscriber connected to two brokers sees each event once, also from a restarted publisher whose seq starts over")
    func eventsOnce() async throws {
        let pair = try await BrokerPair.start()
        var publisherConfiguration = pair.configuration(source: "pair-pub")
        publisherConfiguration.instance = "pair-pub:1"
        let publisher = try Bus(configuration: publisherConfiguration, logger: testLogger("pub"))
        let subscriber = try Bus(configuration: pair.configuration(source: "pair-sub"), logger: testLogger("sub"))
        // A subscriber of the second broker alone shows that events reach both brokers.
        let secondOnly = try Bus(configuration: busConfiguration(pair.second.endpoints, source: "second-only"), logger: testLogger("second"))
        let events = EventCollector(try subscriber.subscribe(["pair.", "probe."]))
        let throughSecond = EventCollector(try secondOnly.subscribe(["pair.", "probe."]))
        try await eventually("both subscriptions live on both brokers") {
            try publisher.publish(topic: "probe.ping", payload: Data("{}".utf8))
            return throughSecond.all.contains { $0.topic == "probe.ping" } && events.all.contains { $0.topic == "probe.ping" }
        }
        // Both brokers forward to the subscriber now: wait until a probe came through each twice.
        try await Task.sleep(for: .milliseconds(300))
        let probesBefore = events.all.count

        for index in 1...200 { try publisher.publish(topic: "pair.event", payload: Data(#"{"n":\#(index)}"#.utf8)) }
        try await eventually("the 200 events through the second broker") { throughSecond.topics().filter { $0 == "pair.event" }.count == 200 }
        try await eventually("the 200 events at the pair's subscriber") { events.topics().filter { $0 == "pair.event" }.count >= 200 }
        try await Task.sleep(for: .milliseconds(500))
        let received = events.all.dropFirst(probesBefore).filter { $0.topic == "pair.event" }
        #expect(received.count == 200, "each event once, not once per broker")
        #expect(Set(received.map(\.header.seq)).count == 200)
        // The subscriber was connected to the second broker too: with the first gone, events
        // still come.
        await pair.first.broker.stop()
        try await eventually("events through the second broker alone") {
            try publisher.publish(topic: "pair.survivor", payload: Data("{}".utf8))
            return events.topics().contains("pair.survivor")
        }

        // The same instance name starts over at seq 1, as a restarted container does: new
        // events, new ids, so they pass.
        await publisher.shutdown()
        let restarted = try Bus(configuration: publisherConfiguration, logger: testLogger("pub2"))
        try await eventually("the restarted publisher's first events arrive") {
            try restarted.publish(topic: "pair.after", payload: Data("{}".utf8))
            return events.topics().contains("pair.after")
        }
        let after = events.all.filter { $0.topic == "pair.after" }
        #expect(after.first?.header.seq == 1, "seq started over and was not taken for a duplicate")
        #expect(Set(after.map(\.header.id)).count == after.count, "no event of the restarted publisher twice")

        events.cancel()
        throughSecond.cancel()
        await restarted.shutdown()
        await subscriber.shutdown()
        await secondOnly.shutdown()
        await pair.second.broker.stop()
    }

    @Test("a host registers with both brokers; when the first stops, calls on it fail UNAVAILABLE and later calls go through the second")
    func callsFailOver() async throws {
        let pair = try await BrokerPair.start()
        // The service keeps the brokers' heartbeat; the client notices a lost broker sooner.
        let serviceBus = try Bus(configuration: pair.configuration(source: "echo"), logger: testLogger("echo"))
        let host = ServiceHost(bus: serviceBus, contract: Echo, credit: 8, logger: testLogger("echo"))
        registerEcho(on: host)
        let hostTask = Task { try await host.run() }
        let client = try Bus(configuration: pair.configuration(source: "client", heartbeatMs: 200), logger: testLogger("client"))
        for (name, endpoints) in [("first", pair.first.endpoints), ("second", pair.second.endpoints)] {
            let direct = try Bus(configuration: busConfiguration(endpoints, source: "direct"), logger: testLogger(name))
            try await eventually("echo registered with the \(name) broker", timeout: Wait.startup) {
                let reply = try? await direct.call(Echo.echo, EchoRequest(text: name), options: CallOptions(timeout: .seconds(1)))
                return reply?.text == name
            }
            await direct.shutdown()
        }
        #expect(try await client.call(Echo.echo, EchoRequest(text: "before")).text == "before")

        // A call the first broker holds when it goes.
        let slow = Task { try await client.call(Echo.echo, EchoRequest(text: "slow", delayMs: 5_000), options: CallOptions(timeout: .seconds(20))) }
        try await Task.sleep(for: .milliseconds(300))
        let stoppedAt = ContinuousClock.now
        await pair.first.broker.stop()
        let outcome = await slow.result
        let waited = ContinuousClock.now - stoppedAt
        #expect(throws: BusError.self) { try outcome.get() }
        if case .failure(let error as BusError) = outcome { #expect(error.code == .unavailable, "\(error)") }
        #expect(waited < .seconds(3), "the call on the lost broker failed after \(waited), not at its deadline")

        var servedAgain: Duration?
        try await eventually("calls served through the second broker", timeout: .seconds(10)) {
            guard let reply = try? await client.call(Echo.echo, EchoRequest(text: "after"), options: CallOptions(timeout: .milliseconds(500))) else { return false }
            servedAgain = ContinuousClock.now - stoppedAt
            return reply.text == "after"
        }
        #expect(servedAgain.map { $0 < .seconds(5) } == true, "served again after \(String(describing: servedAgain))")

        hostTask.cancel()
        _ = try? await hostTask.value
        await client.shutdown()
        await serviceBus.shutdown()
        await pair.second.broker.stop()
    }

    @Test("the first broker listed is down from the start: the first calls fail UNAVAILABLE within the liveness, then calls go through the second")
    func firstBrokerNeverUp() async throws {
        try await withWorld(EchoWorld.start()) { world in
            // A port nothing listens on: connections are refused, the broker never answers.
            var configuration = busConfiguration(world.endpoints, source: "client", heartbeatMs: 200)
            configuration.rpcEndpoint = "tcp://127.0.0.1:1,\(world.endpoints.rpc)"
            let client = try Bus(configuration: configuration, logger: testLogger("client"))
            let started = ContinuousClock.now
            do throws(BusError) {
                _ = try await client.call(Echo.echo, EchoRequest(text: "first"), options: CallOptions(timeout: .seconds(20)))
            } catch {
                #expect(error.code == .unavailable, "\(error)")
            }
            #expect(ContinuousClock.now - started < .seconds(3), "the call sent to the dead broker ended at the liveness, not its deadline")
            try await eventually("calls served through the second broker", timeout: .seconds(5)) {
                (try? await client.call(Echo.echo, EchoRequest(text: "second"), options: CallOptions(timeout: .seconds(1))))?.text == "second"
            }
            await client.shutdown()
        }
    }

    @Test("an endpoint setting lists one to three distinct brokers; anything else is INVALID_ARGUMENT naming the variable")
    func endpointLists() throws {
        let pair = try BusConfiguration.fromEnvironment(service: "t", [
            "BUS_SECURITY": "off", "BUS_RPC": "tcp://10.0.0.1:5555, tcp://broker-backup:5555", "BUS_SUB": "tcp://a:1,tcp://b:2,ipc:///tmp/c",
        ])
        #expect(pair.rpcEndpoints == ["tcp://10.0.0.1:5555", "tcp://broker-backup:5555"])
        #expect(pair.subEndpoints.count == 3)
        #expect(pair.pubEndpoints == ["tcp://127.0.0.1:5556"])
        for bad in ["tcp://a:1,,tcp://b:2", "tcp://a:1,tcp://a:1", "tcp://a:1,tcp://b:1,tcp://c:1,tcp://d:1", "tcp://a", "tcp://a:99999",
                    "tcp://a:1,http://b:2", "tcp://:5555", String(repeating: "tcp://a:1,", count: 10_000)] {
            #expect {
                _ = try BusConfiguration.fromEnvironment(service: "t", ["BUS_SECURITY": "off", "BUS_PUB": bad])
            } throws: { error in
                (error as? BusError)?.code == .invalidArgument && (error as? BusError)?.message.contains("BUS_PUB") == true
            }
        }
    }
}
