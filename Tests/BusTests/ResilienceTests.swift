import BrokerCore
import Bus
import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import Testing
import Wire

@Suite("Reconnecting and draining")
struct ResilienceTests {
    @Test("after the broker restarts, services re-register and clients call again by themselves")
    func brokerRestart() async throws {
        let (first, endpoints) = try await startBroker()
        try await withWorld(EchoWorld.start(broker: first, endpoints: endpoints)) { world in
            #expect(try await world.client.call(Echo.echo, EchoRequest(text: "before")).text == "before")

            await first.stop()
            let outage = await #expect(throws: BusError.self) {
                _ = try await world.client.call(Echo.echo, EchoRequest(text: "during"), options: CallOptions(timeout: .milliseconds(300)))
            }
            #expect(outage?.code == .deadlineExceeded)

            try await withBroker(startBroker(rpc: endpoints.rpc, pub: endpoints.pub, sub: endpoints.sub)) { second, _ in
                try await eventually("echo answers through the new broker") {
                    (try? await world.client.call(Echo.echo, EchoRequest(text: "after"), options: CallOptions(timeout: .milliseconds(500))))?.text == "after"
                }
            }
        }
    }

    @Test("a host runs at most its credit of handlers also across a broker restart, when the new broker grants the credit again")
    func creditAcrossRestart() async throws {
        let (first, endpoints) = try await startBroker()
        try await withWorld(EchoWorld.start(broker: first, endpoints: endpoints, credit: 2)) { world in
            let client = world.client
            let before = (0..<2).map { n in
                Task { try? await client.call(Echo.echo, EchoRequest(text: "old \(n)", delayMs: 3000), options: CallOptions(timeout: .seconds(1))) }
            }
            try await eventually("two handlers run") { world.gauge.total == 2 }
            await first.stop()
            try await withBroker(startBroker(rpc: endpoints.rpc, pub: endpoints.pub, sub: endpoints.sub)) { second, _ in
                try await world.waitForService("echo")
                // The new broker hands over two more at once; they wait for the old two to finish.
                let after = (0..<2).map { n in
                    Task { try await client.call(Echo.echo, EchoRequest(text: "new \(n)", delayMs: 200), options: CallOptions(timeout: .seconds(15))) }
                }
                for task in after { #expect(try await task.value.text.hasPrefix("new")) }
                for task in before { _ = await task.value }
                #expect(world.gauge.total == 4)
                #expect(world.gauge.maximum == 2, "never more handlers at once than the credit")
            }
        }
    }

    @Test("on graceful shutdown a host refuses new requests, finishes those in flight, then leaves")
    func gracefulDrain() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let serviceBus = try Bus(configuration: busConfiguration(endpoints, source: "echo"), logger: testLogger("echo"))
            let host = ServiceHost(bus: serviceBus, contract: Echo, credit: 8, logger: testLogger("echo"))
            registerEcho(on: host)
            let group = ServiceGroup(configuration: .init(services: [host], logger: testLogger("group")))
            let running = Task { try await group.run() }
            let client = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("client"))
            try await eventually("echo serves", timeout: Wait.startup) { (try? await client.call(Echo.echo, EchoRequest(text: "up"))) != nil }

            // Long enough that a loaded machine still sees the refusals while it is in flight.
            let inFlight = Task { try await client.call(Echo.echo, EchoRequest(text: "slow", delayMs: 4000)) }
            try await eventually("the slow request reached the handler") {
                (try? await client.call(BrokerProtocol.services, Empty()))?.first { $0.name == "echo" }?.inFlight == 1
            }
            await group.triggerGracefulShutdown()
            try await eventually("new requests are refused") {
                do {
                    _ = try await client.call(Echo.echo, EchoRequest(text: "new"))
                    return false
                } catch let error as BusError {
                    return error.code == .unavailable && error.message.contains("shutting down")
                }
            }
            #expect(try await inFlight.value.text == "slow")
            try await running.value
            let after = await #expect(throws: BusError.self) { _ = try await client.call(Echo.echo, EchoRequest(text: "gone")) }
            #expect(after?.message.contains("no responders") == true)
            await client.shutdown()
            await serviceBus.shutdown()
        }
    }

    @Test("the broker traces finished calls on bus.rpc while someone subscribes, its own answers included")
    func callTraces() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let traces = EventCollector(try world.client.subscribe([BrokerProtocol.rpc.name]))
            try await eventually("a trace arrives") {
                _ = try? await world.client.call(Echo.echo, EchoRequest(text: "t"), options: CallOptions(user: "u7"))
                return !traces.all.isEmpty
            }
            let trace = try #require(traces.all.last).decode(BrokerProtocol.rpc)
            #expect(trace.service == "echo" && trace.method == "echo" && trace.code == 0 && trace.user == "u7")
            #expect(trace.latencyUs > 0 && trace.requestBytes > 0 && trace.replyBytes > 0 && !trace.fromBroker)

            _ = try? await world.client.callRaw(service: "nosuch", method: "m", payload: Data())
            try await eventually("the broker's own answer is traced") {
                traces.all.contains { (try? $0.decode(BrokerProtocol.rpc))?.service == "nosuch" }
            }
            let refused = try #require(traces.all.compactMap { try? $0.decode(BrokerProtocol.rpc) }.first { $0.service == "nosuch" })
            #expect(refused.code == StatusCode.unavailable.rawValue && refused.fromBroker)

            // What the broker answers successfully itself is traced too.
            _ = try await world.client.call(BrokerProtocol.services, Empty(), options: CallOptions(user: "u7"))
            _ = try await world.client.call(Reserved.health(BrokerProtocol.serviceName), Empty())
            try await eventually("mmi.services and broker/_health are traced") {
                let services = Set(traces.all.compactMap { try? $0.decode(BrokerProtocol.rpc) }.filter { $0.code == 0 && $0.fromBroker }.map(\.service))
                return services.isSuperset(of: [BrokerProtocol.mmiServices, BrokerProtocol.serviceName])
            }
            let listed = try #require(traces.all.compactMap { try? $0.decode(BrokerProtocol.rpc) }.first { $0.service == BrokerProtocol.mmiServices })
            #expect(listed.user == "u7" && listed.replyBytes > 0 && !listed.id.isEmpty)
            #expect(traces.all.allSatisfy { $0.header.source == "broker" })
            traces.cancel()
        }
    }
}
