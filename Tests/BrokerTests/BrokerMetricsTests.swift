import BrokerCore
import Bus
import Foundation
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("The broker's metrics")
struct BrokerMetricsTests {
    private func withMonitoredBroker(_ body: (EchoWorld, Monitoring) async throws -> Void) async throws {
        let monitoring = Monitoring(service: "broker", address: Monitoring.Address(host: "127.0.0.1", port: 0))
        let (broker, endpoints) = try await startBroker(metrics: monitoring.factory)
        try await withWorld(EchoWorld.start(broker: broker, endpoints: endpoints)) { world in try await body(world, monitoring) }
    }

    private func exposition(_ monitoring: Monitoring) async -> String {
        String(decoding: await monitoring.exposition(), as: UTF8.self)
    }

    @Test("workers, credit and requests per service are sampled at each heartbeat")
    func perServiceGauges() async throws {
        try await withMonitoredBroker { world, monitoring in
            for index in 0..<3 { _ = try await world.client.call(Echo.echo, EchoRequest(text: "\(index)"), options: CallOptions(user: "u1")) }
            try await eventually("sampled") {
                let metrics = await exposition(monitoring)
                return metricValue(metrics, #"studybus_broker_workers{service="echo"}"#) == 1
                    && metricValue(metrics, #"studybus_broker_credit{service="echo"}"#) == 16
                    && (metricValue(metrics, #"studybus_broker_requests_total{service="echo"}"#) ?? 0) >= 3
                    && metricValue(metrics, #"studybus_broker_in_flight{service="echo"}"#) == 0
                    && metricValue(metrics, #"studybus_broker_queued{service="echo"}"#) == 0
            }
        }
    }

    @Test("refusals count by status code, a service the broker does not know under _unknown; passed deadlines as expired")
    func refusedAndExpired() async throws {
        try await withMonitoredBroker { world, monitoring in
            for index in 0..<4 {
                _ = try? await world.client.callRaw(service: "nosuch-\(index)", method: "x", payload: Data())
            }
            // Every slot of the worker busy, so the next request waits in the broker past its deadline.
            let client = world.client
            let busy = (0..<16).map { _ in
                Task { _ = try? await client.call(Echo.echo, EchoRequest(text: "busy", delayMs: 1000), options: CallOptions(user: "u1")) }
            }
            try await eventually("worker busy") { world.gauge.current == 16 }
            _ = try? await world.client.call(Echo.echo, EchoRequest(text: "late"), options: CallOptions(user: "u1", timeout: .milliseconds(50)))
            try await eventually("expired in the broker") {
                metricValue(await exposition(monitoring), #"studybus_broker_expired_total{service="echo"}"#) == 1
            }
            let metrics = await exposition(monitoring)
            #expect(metricValue(metrics, #"studybus_broker_refused_total{service="_unknown",code="UNAVAILABLE"}"#) == 4)
            #expect(!metrics.contains("nosuch"))
            for task in busy { await task.value }
        }
    }

    @Test("forwarded events are counted")
    func events() async throws {
        try await withMonitoredBroker { world, monitoring in
            let subscriber = try await EventCollector.active(world.client, Echo.echoed, probe: EchoReply(text: "probe"))
            try world.serviceBus.publish(Echo.echoed, EchoReply(text: "one"))
            try await eventually("delivered") { subscriber.all.contains { (try? $0.decode(Echo.echoed))?.text == "one" } }
            #expect((metricValue(await exposition(monitoring), "studybus_broker_events_total") ?? 0) >= 2)
            subscriber.cancel()
        }
    }
}
