import BrokerCore
import Bus
import Foundation
import Glibc
import ServiceKit
import Threads
import ServiceLifecycle
import TestSupport
import Testing
import Wire

/// A service host with its monitoring port, behind a real broker.
private struct MonitoredEcho: TestWorld {
    let broker: Broker
    let serviceBus: Bus
    let client: Bus
    let host: ServiceHost
    let monitoring: Monitoring
    let tasks: [Task<Void, any Error>]
    let port: Int

    static func start() async throws -> MonitoredEcho {
        let (broker, endpoints) = try await startBroker()
        let monitoring = Monitoring(service: "echo", address: Monitoring.Address(host: "127.0.0.1", port: 0))
        let serviceBus = try Bus(configuration: busConfiguration(endpoints, source: "echo"), logger: testLogger("echo"))
        let host = ServiceHost(bus: serviceBus, contract: Echo, logger: testLogger("echo"), metrics: monitoring.factory)
        registerEcho(on: host)
        monitoring.watchReadiness(of: [host])
        let server = MonitoringServer(monitoring: monitoring, logger: testLogger("monitoring"), connectionLifetime: .seconds(2))
        let tasks = [Task { try await host.run() }, Task { try await server.run() }]
        let client = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("client"))
        let port = try await withTimeout { await monitoring.listeningPort() }
        return MonitoredEcho(broker: broker, serviceBus: serviceBus, client: client, host: host, monitoring: monitoring, tasks: tasks, port: port)
    }

    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
        await client.shutdown()
        await serviceBus.shutdown()
        await broker.stop()
    }
}

@Suite("The monitoring port: metrics, health and readiness of one process")
struct MonitoringTests {
    @Test("requests are counted per method and status code, and timed")
    func requestMetrics() async throws {
        try await withWorld(MonitoredEcho.start()) { world in
            try await eventually("echo serves", timeout: Wait.startup) { (try? await world.client.call(Echo.echo, EchoRequest(text: "a"), options: CallOptions(user: "u1"))) != nil }
            _ = try await world.client.call(Echo.echo, EchoRequest(text: "b"), options: CallOptions(user: "u1"))
            _ = try? await world.client.call(Echo.fail, FailRequest(kind: .notFound), options: CallOptions(user: "u1"))
            _ = try? await world.client.call(Echo.upper, EchoRequest(text: ""), options: CallOptions(user: "u1"))
            let metrics = try await httpGet(port: world.port, "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect((metricValue(metrics.body, #"studybus_requests_total{service="echo",method="echo",code="OK"}"#) ?? 0) >= 2)
            #expect(metricValue(metrics.body, #"studybus_requests_total{service="echo",method="fail",code="NOT_FOUND"}"#) == 1)
            #expect(metricValue(metrics.body, #"studybus_requests_total{service="echo",method="upper",code="INVALID_ARGUMENT"}"#) == 1)
            #expect((metricValue(metrics.body, #"studybus_request_duration_seconds_count{service="echo",method="echo"}"#) ?? 0) >= 2)
            #expect(metrics.body.contains("# HELP studybus_requests_total "))
            #expect(metrics.body.contains(#"studybus_build_info{service="echo",version="\#(BuildInfo.version)""#))
        }
    }

    @Test("a method the service does not have is counted under one label, whatever its name")
    func unknownMethodsShareOneLabel() async throws {
        try await withWorld(MonitoredEcho.start()) { world in
            try await eventually("echo serves", timeout: Wait.startup) { (try? await world.client.call(Echo.echo, EchoRequest(text: "a"), options: CallOptions(user: "u1"))) != nil }
            for index in 0..<5 {
                _ = try? await world.client.callRaw(service: "echo", method: "made.up.\(index)", payload: Data("{}".utf8))
            }
            let metrics = try await httpGet(port: world.port, "/metrics").body
            #expect(metricValue(metrics, #"studybus_requests_total{service="echo",method="_unknown",code="UNIMPLEMENTED"}"#) == 5)
            #expect(!metrics.contains("made.up"))
        }
    }

    @Test("/healthz answers while the process runs; /readyz once the broker answers, and not while draining")
    func healthAndReadiness() async throws {
        try await withWorld(MonitoredEcho.start()) { world in
            #expect(try await httpGet(port: world.port, "/healthz").status == 200)
            try await eventually("ready") { try await httpGet(port: world.port, "/readyz").status == 200 }
            world.host.setServing(false)
            let draining = try await httpGet(port: world.port, "/readyz")
            #expect(draining.status == 503)
            #expect(draining.body.contains("echo: draining"))
            world.host.setServing(true)
            await world.broker.stop()
            try await eventually("not ready without a broker") {
                let readiness = try await httpGet(port: world.port, "/readyz")
                return readiness.status == 503 && readiness.body.contains("not registered with the broker")
            }
            #expect(try await httpGet(port: world.port, "/healthz").status == 200)
        }
    }

    @Test("strangers get a defined answer: unknown paths, other methods, bodies, garbage")
    func hostileRequests() async throws {
        try await withWorld(MonitoredEcho.start()) { world in
            #expect(try await httpGet(port: world.port, "/admin").status == 404)
            let post = try await httpGet(port: world.port, "/metrics", method: "POST")
            #expect(post.status == 405)
            #expect(post.headers["allow"] == "GET, HEAD")
            #expect(try await httpGet(port: world.port, "/metrics", method: "GET", body: "x=1").status == 413)
            let head = try await httpGet(port: world.port, "/healthz", method: "HEAD")
            #expect(head.status == 200 && head.body.isEmpty)
            let garbage = try await rawHTTP(port: world.port, Array("\u{1}\u{2}not http at all\r\n\r\n".utf8))
            #expect(garbage.hasPrefix("HTTP/1.1 400"))
            let hugeHeader = "GET /metrics HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 200_000) + "\r\n\r\n"
            #expect(!(try await rawHTTP(port: world.port, Array(hugeHeader.utf8))).hasPrefix("HTTP/1.1 200"))
            // Still serving.
            #expect(try await httpGet(port: world.port, "/healthz?verbose=1").status == 200)
        }
    }

    @Test("a client that trickles its request a byte at a time is cut off when the connection's time is up")
    func tricklingClient() async throws {
        try await withWorld(MonitoredEcho.start()) { world in
            let started = ContinuousClock.now
            let answer = try await trickle(port: world.port, Array("GET /metrics HTTP/1.1\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 100))
            #expect(answer.isEmpty, "the server answered a request it never got whole: \(answer)")
            // Cut after its 2 s, well before the 13 s the whole request would take at 100 ms a byte
            // (the margin is for a busy machine).
            #expect(ContinuousClock.now - started < .seconds(9))
            #expect(try await httpGet(port: world.port, "/healthz").status == 200)
        }
    }

    @Test("METRICS_ADDRESS is host:port, [v6]:port or :port, and off when unset")
    func address() throws {
        #expect(Monitoring.Address("127.0.0.1:9464") == Monitoring.Address(host: "127.0.0.1", port: 9464))
        #expect(Monitoring.Address(":9464") == Monitoring.Address(host: "0.0.0.0", port: 9464))
        #expect(Monitoring.Address("[::1]:9464") == Monitoring.Address(host: "::1", port: 9464))
        #expect(Monitoring.Address("9464") == nil)
        #expect(Monitoring.Address("host:99999") == nil)
        #expect(try Monitoring.fromEnvironment(service: "x", Environment([:])).isEnabled == false)
        #expect(throws: BusError.self) { try Monitoring.fromEnvironment(service: "x", Environment(["METRICS_ADDRESS": "nowhere"])) }
    }
}

/// Sends `bytes` one at a time, 100 ms apart, until the server closes the connection; returns what
/// it answered.
private func trickle(port: Int, _ bytes: [UInt8]) async throws -> String {
    try await offThePool { () throws(any Error) -> String in
        let fd = try connectLoopback(port: port)
        defer { close(fd) }
        for byte in bytes {
            var one = byte
            if send(fd, &one, 1, Int32(MSG_NOSIGNAL)) <= 0 { break }
            var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&probe, 1, 100) == 1 { break }  // closed (or answered)
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }
}
