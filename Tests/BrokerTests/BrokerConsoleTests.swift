@testable import BrokerCore
import Bus
import Foundation
import ServiceKit
import TestSupport
import Testing
import Wire

/// A broker feeding a console, the echo service and a client, with the console served on a
/// monitoring port of its own.
private struct ConsoleWorld {
    let world: EchoWorld
    let feed: ConsoleFeed
    let server: Task<Void, any Error>
    let port: Int

    static func start(token: String? = nil) async throws -> ConsoleWorld {
        let feed = ConsoleFeed()
        let monitoring = Monitoring(service: "broker", address: Monitoring.Address(host: "127.0.0.1", port: 0))
        let (broker, endpoints) = try await startBroker(metrics: monitoring.factory, console: feed)
        var consoleToken: ConsoleToken?
        if let token {
            let file = FileManager.default.temporaryDirectory.appending(path: "console-token-\(UUID().uuidString)")
            try Data((token + "\n").utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            consoleToken = try ConsoleToken(file: file.path)
        }
        let console = ConsoleServer(feed: feed, token: consoleToken)
        monitoring.serve(ConsoleServer.path) { request in await console.respond(to: request) }
        let server = MonitoringServer(monitoring: monitoring, logger: testLogger("monitoring"), connectionLifetime: .seconds(20))
        let task = Task { try await server.run() }
        let world = try await EchoWorld.start(broker: broker, endpoints: endpoints)
        return ConsoleWorld(world: world, feed: feed, server: task, port: try await withTimeout { await monitoring.listeningPort() })
    }

    func get(_ path: String, token: String? = nil) async throws -> HTTPProbeResponse {
        try await httpGet(port: port, path, headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
    }

    func json(_ path: String, token: String? = nil) async throws -> JSONValue {
        let response = try await get(path, token: token)
        #expect(response.status == 200, "\(path): \(response.body)")
        return try JSONValue.parse(response.body)
    }

    func stop() async {
        server.cancel()
        _ = try? await server.value
        await world.stop()
    }

    /// Starts a world, runs `body` with it, and stops it whether `body` succeeds or throws.
    static func run(token: String? = nil, _ body: (ConsoleWorld) async throws -> Void) async throws {
        try await running(try await start(token: token), stop: { await $0.stop() }, body)
    }
}

@Suite("The broker's operator console")
struct BrokerConsoleTests {
    @Test("the overview lists each service's workers with the build they named, and per-method rates, errors and latencies")
    func overview() async throws {
        try await ConsoleWorld.run { console in
            let client = console.world.client
            for index in 0..<5 { _ = try await client.call(Echo.echo, EchoRequest(text: "\(index)"), options: CallOptions(user: "u1")) }
            _ = try? await client.call(Echo.fail, FailRequest(kind: .notFound), options: CallOptions(user: "u1"))
            _ = try? await client.callRaw(service: "nosuch", method: "x", payload: Data())
            var overview = JSONValue.null
            try await eventually("the worker answered the broker's _health and the calls are counted") {
                overview = try await console.json("/console/api/overview?window=60")
                let echo = overview["services"]?.arrayValue?.first { $0["name"] == .string("echo") }
                let worker = echo?["instances"]?.arrayValue?.first
                return worker?["health"] == .string("SERVING") && overview["methods"]?.arrayValue?.count ?? 0 >= 3
            }
            let worker = try #require(overview["services"]?.arrayValue?.first { $0["name"] == .string("echo") }?["instances"]?.arrayValue?.first)
            #expect(worker["build"]?["version"] == .string(BuildInfo.version))
            #expect(worker["build"]?["commit"] == .string(BuildInfo.commit))
            #expect(worker["credit"] == .int(16))
            let methods = try #require(overview["methods"]?.arrayValue)
            let echo = try #require(methods.first { $0["service"] == .string("echo") && $0["method"] == .string("echo") })
            #expect(echo["requests"] == .int(5) && echo["notOK"] == .int(0) && echo["errors"] == .int(0))
            #expect(echo["p50Ms"]?.doubleValue != nil && echo["p99Ms"]?.doubleValue != nil)
            let failed = try #require(methods.first { $0["method"] == .string("fail") })
            #expect(failed["notOK"] == .int(1) && failed["errors"] == .int(0), "NOT_FOUND is the caller's error, not a failure")
            // A service the broker keeps no record of counts under one name, whatever the caller sent.
            let unknown = try #require(methods.first { $0["service"] == .string("_unknown") })
            #expect(unknown["method"] == .string("*") && unknown["errors"] == .int(1))
            #expect(overview["broker"]?["build"]?["version"] == .string(BuildInfo.version))
        }
    }

    @Test("the tail shows events and calls once someone reads it, filtered by NATS-style topic patterns")
    func tail() async throws {
        try await ConsoleWorld.run { console in
            // Nothing is copied before someone reads the tail.
            _ = try await console.world.client.call(Echo.echo, EchoRequest(text: "unseen"), options: CallOptions(user: "u1"))
            let first = try await console.json("/console/api/tail")
            #expect(first["entries"]?.arrayValue?.isEmpty == true)
            let after = first["next"]?.intValue ?? 0

            _ = try await console.world.client.call(Echo.echo, EchoRequest(text: "seen"), options: CallOptions(user: "u2"))
            try console.world.serviceBus.publish(Echo.echoed, EchoReply(text: "<img src=x onerror=alert(1)>"), user: "u2")
            var entries: [JSONValue] = []
            try await eventually("the call and the event reach the tail") {
                entries = try await console.json("/console/api/tail?wait=1&after=\(after)")["entries"]?.arrayValue ?? []
                return entries.contains { $0["kind"] == .string("event") } && entries.contains { $0["kind"] == .string("call") }
            }
            let call = try #require(entries.first { $0["subject"] == .string("bus.rpc.echo.echo") })
            #expect(call["call"]?["user"] == .string("u2") && call["call"]?["code"] == .int(0))
            let event = try #require(entries.first { $0["kind"] == .string("event") })
            #expect(event["subject"] == .string(Echo.echoed.name))
            // The user's text is data in the JSON; the page shows it as text.
            #expect(event["payload"]?.stringValue?.contains("<img src=x onerror=alert(1)>") == true)

            let events = try await console.json("/console/api/tail?after=\(after)&topic=\(Echo.echoed.name)")
            #expect(events["entries"]?.arrayValue?.allSatisfy { $0["kind"] == .string("event") } == true)
            #expect(events["entries"]?.arrayValue?.count == 1)
            let calls = try await console.json("/console/api/tail?after=\(after)&topic=bus.rpc.%3E")
            #expect(calls["entries"]?.arrayValue?.allSatisfy { $0["kind"] == .string("call") } == true)
            let invalid = try await console.get("/console/api/tail?topic=a..b")
            #expect(invalid.status == 400 && invalid.body.contains("invalid pattern"))
        }
    }

    @Test("with an operator token the API answers 401 without it; the page comes with a strict content security policy")
    func token() async throws {
        let secret = "s3cret-operator-token-0123456789"
        try await ConsoleWorld.run(token: secret) { console in
            let refused = try await console.get("/console/api/overview")
            #expect(refused.status == 401)
            #expect(refused.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
            #expect(refused.body.contains("operator token") && !refused.body.contains(secret))
            #expect(try await console.get("/console/api/tail", token: "wrong-token-0123456789abcdef").status == 401)
            #expect(try await console.get("/console/api/overview", token: secret).status == 200)

            let page = try await console.get("/console")
            #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.body.contains("<script src=\"/console/app.js\""))
            #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
            #expect(page.headers["x-frame-options"] == "DENY" && page.headers["cache-control"] == "no-store")
            let script = try await console.get("/console/app.js")
            #expect(script.status == 200 && !script.body.contains("innerHTML"))
            #expect(try await console.get("/console/nosuch").status == 404)
            #expect(try await console.get("/metrics").status == 200, "the metrics need no token")
        }
    }

    @Test("a token file with a short token is refused at start")
    func shortToken() throws {
        let file = FileManager.default.temporaryDirectory.appending(path: "console-token-\(UUID().uuidString)")
        try Data("short\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(throws: BusError.self) { try ConsoleToken(file: file.path) }
        #expect(throws: BusError.self) { try ConsoleToken(file: file.path + "-missing") }
    }

    @Test("the feed is bounded: methods past the limit count as _other, the tail keeps the newest entries")
    func bounds() {
        let feed = ConsoleFeed()
        var samples: [MethodKey: MethodSample] = [:]
        for index in 0..<(ConsoleFeed.maximumMethods + 50) {
            var sample = MethodSample()
            sample.add(code: .ok, latencyUs: 100)
            samples[MethodKey(service: "s", method: "m\(index)")] = sample
        }
        let entries = (0..<(ConsoleFeed.tailCapacity + 10)).map { ConsoleTailEntry(ts: Int64($0), kind: .event, subject: "a.b") }
        feed.deliver(samples: samples, tail: entries, services: [], epoch: ConsoleFeed.epoch(of: Date()))
        let methods = feed.overview(window: 60).methods
        #expect(methods.count == ConsoleFeed.maximumMethods + 1)
        #expect(methods.first { $0.service == "_other" }?.requests == 50)
        let tail = feed.tail(after: 0, matching: nil, limit: 5000)
        #expect(tail.entries.count == ConsoleFeed.tailCapacity && tail.entries.last?.seq == Int64(ConsoleFeed.tailCapacity + 10))
        #expect(feed.tail(after: 2, matching: nil, limit: 1).missed)
    }

    @Test("latency quantiles are the upper bound of their bucket, within 25 %")
    func quantiles() throws {
        var histogram = LatencyHistogram()
        for _ in 0..<98 { histogram.add(1000) }
        histogram.add(200_000)
        histogram.add(200_000)
        let p50 = try #require(histogram.quantile(0.5))
        let p99 = try #require(histogram.quantile(0.99))
        #expect(p50 >= 1 && p50 < 1.25)
        #expect(p99 >= 200 && p99 < 250)
        #expect(LatencyHistogram().quantile(0.5) == nil)
    }
}

@Suite("The broker asks each worker for its build (Addition 19)")
struct BrokerWorkerBuildTests {
    @Test("mmi.services lists each worker with the build and health its _health answered; a silent worker has none")
    func workersWithBuilds() async throws {
        let (broker, endpoints) = try await startBroker()
        let world = try await EchoWorld.start(broker: broker, endpoints: endpoints)
        let named = try await RawPeer.connect(endpoints.rpc)
        let silent = try await RawPeer.connect(endpoints.rpc)
        try await running((named, silent, world), stop: { peers in
            await peers.0.close()
            await peers.1.close()
            await peers.2.stop()
        }) { _ in
            await named.answerProbes(with: #"{"status":"NOT_SERVING","build":{"version":"9.9.9","commit":"feedfacecafe"}}"#)
            try await named.ready("raw", credit: 3)
            try await silent.ready("raw", credit: 2)
            var raw: ServiceStatus?
            try await eventually("the named worker answered") {
                // Raw workers heartbeat themselves; reading answers (or skips) the broker's question.
                try await named.heartbeat()
                try await silent.heartbeat()
                _ = await named.receiveSkippingHeartbeats(timeoutMs: 20)
                _ = await silent.receiveSkippingHeartbeats(timeoutMs: 20)
                raw = try await world.client.call(BrokerProtocol.services, Empty()).first { $0.name == "raw" }
                return raw?.instances?.contains { $0.health != nil } == true
            }
            let instances = try #require(raw?.instances)
            #expect(instances.count == 2)
            let answered = try #require(instances.first { $0.credit == 3 })
            #expect(answered.build == BuildStamp(version: "9.9.9", commit: "feedfacecafe") && answered.health == "NOT_SERVING")
            #expect(answered.id.count == 10 && answered.inFlight == 0)
            let unanswered = try #require(instances.first { $0.credit == 2 })
            #expect(unanswered.build == nil && unanswered.health == nil)
            #expect(await silent.probesSeen >= 1)

            try await eventually("echo answered") {
                try await world.client.call(BrokerProtocol.services, Empty()).first { $0.name == "echo" }?.instances?.first?.health == "SERVING"
            }
            let echo = try #require(try await world.client.call(BrokerProtocol.services, Empty()).first { $0.name == "echo" })
            #expect(echo.instances?.count == 1 && echo.requests == 0, "the broker's own questions are not requests of the service")
        }
    }
}
