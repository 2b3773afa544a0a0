import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

@Suite("busctl end to end: the real binary against a real broker and service")
struct BusCtlEndToEndTests {
    @Test("call prints the response JSON and takes user, idempotency key and metadata")
    func call() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let result = try await busctl(["call", "echo", "echo", #"{"text":"hi"}"#, "--user", "u1", "--idem", "k9", "--meta", "traceparent=00-1-2-01", "--compact"], world.endpoints)
            #expect(result.status == 0)
            let reply = try JSONValue.parse(result.out.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(reply == .object(["text": .string("hi"), "user": .string("u1"), "idem": .string("k9"), "traceparent": .string("00-1-2-01")]))
        }
    }

    @Test("a failed call prints the status name and message on stderr and exits with the code")
    func failedCall() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let notFound = try await busctl(["call", "echo", "fail", #"{"kind":"notFound"}"#], world.endpoints)
            #expect(notFound.status == 5)
            #expect(notFound.err.contains("NOT_FOUND: material m1 not found"))
            let invalid = try await busctl(["call", "echo", "echo", #"{"text":1}"#], world.endpoints)
            #expect(invalid.status == 3)
            #expect(invalid.err.contains("INVALID_ARGUMENT: field 'text' must be a string"))
            let badJSON = try await busctl(["call", "echo", "echo", "{oops"], world.endpoints)
            #expect(badJSON.status == 64)
            #expect(badJSON.err.contains("not valid JSON"))
        }
    }

    @Test("services, health and describe show what the broker and the service report")
    func inspection() async throws {
        try await withWorld(EchoWorld.start(credit: 7)) { world in
            let services = try await busctl(["services"], world.endpoints)
            #expect(services.status == 0)
            #expect(services.out.contains("SERVICE") && services.out.contains("echo") && services.out.contains("7"))
            // Then each worker with the build its _health named to the broker (Addition 19).
            try await eventually("the worker's build listed") {
                let listed = try await busctl(["services"], world.endpoints).out
                return listed.contains("WORKER") && listed.contains(BuildInfo.commit) && listed.contains("SERVING")
            }
            let json = try JSONValue.parse(try await busctl(["services", "--json"], world.endpoints).out)
            let worker = json.arrayValue?.first { $0["name"] == .string("echo") }?["instances"]?.arrayValue?.first
            #expect(worker?["build"]?["version"] == .string(BuildInfo.version) && worker?["credit"] == .int(7))
            let health = try await busctl(["health"], world.endpoints)
            #expect(health.status == 0)
            // Each answer names the build that gave it (wire protocol, Addition 17).
            #expect(health.out == "broker SERVING \(BuildInfo.description)\necho SERVING \(BuildInfo.description)\n")
            let missing = try await busctl(["health", "nosuch"], world.endpoints)
            #expect(missing.status == 14)
            let describe = try await busctl(["describe", "echo"], world.endpoints)
            #expect(describe.out.contains("echo — 5 methods, 2 events, \(BuildInfo.description)"))
            #expect(describe.out.contains(#"request:  {"delayMs?":"integer","text":"string"}"#))
        }
    }

    @Test("--version names the release and the commit, like every other binary")
    func version() async throws {
        let result = try await busctl(["--version"], nil)
        #expect(result.status == 0)
        #expect(result.out == "busctl \(BuildInfo.description)\n")
        for binary in ["broker", "store", "ingest", "scheduler", "timer-ticker", "ai-gateway", "notifier"] {
            let process = try ChildProcess(executable: builtProductsDirectory.appending(path: binary).path, arguments: ["--version"], captureOutput: true)
            #expect(await process.waitForExit() == 0)
            let output = String(decoding: process.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
            #expect(output == "\(binary) \(BuildInfo.description)\n")
        }
    }

    @Test("tail prints events matching NATS-style patterns, as JSON lines when asked")
    func tailEvents() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let publisher = world.serviceBus
            let result = try await busctl(["tail", "echo.*", "--json", "--count", "2"], world.endpoints) {
                var index = 0
                while !Task.isCancelled {
                    index += 1
                    try publisher.publish(topic: "other.thing", payload: Data("{}".utf8))
                    try publisher.publish(Echo.echoed, EchoReply(text: "e\(index)"), user: "u1")
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(result.status == 0)
            let lines = result.out.split(separator: "\n").map { try? JSONValue.parse(String($0)) }
            #expect(lines.count == 2)
            for line in lines {
                #expect(line?["topic"] == .string("echo.echoed"))
                #expect(line?["header"]?["source"] == .string("echo") && line?["header"]?["user"] == .string("u1"))
                #expect(line?["payload"]?["text"]?.stringValue?.hasPrefix("e") == true)
            }
        }
    }

    @Test("tail prints one readable line per event, and --headers-only leaves the payload out")
    func tailPlainLines() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let publisher = world.serviceBus
            let publish: @Sendable () async throws -> Void = {
                while !Task.isCancelled {
                    try publisher.publish(Echo.echoed, EchoReply(text: "payload-text"), user: "u1")
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let full = try await busctl(["tail", "echo.>", "--count", "1"], world.endpoints, whileRunning: publish)
            #expect(full.status == 0)
            let line = full.out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(line.contains("echo.echoed echo[") && line.contains(" seq=") && line.contains(" user=u1"))
            #expect(line.contains(#""text":"payload-text""#))
            #expect(line.firstMatch(of: #/^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} /#) != nil, "starts with the event's time: \(line)")

            let headers = try await busctl(["tail", "echo.>", "--count", "1", "--headers-only"], world.endpoints, whileRunning: publish)
            #expect(headers.status == 0)
            #expect(headers.out.contains("echo.echoed") && !headers.out.contains("payload-text"))
            let json = try await busctl(["tail", "echo.>", "--count", "1", "--headers-only", "--json"], world.endpoints, whileRunning: publish)
            let object = try JSONValue.parse(json.out.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(object["header"]?["user"] == .string("u1") && object["payload"] == nil)
        }
    }

    @Test("endpoints come from BUS_RPC, BUS_PUB and BUS_SUB; --timeout bounds a call; --help explains every command")
    func environmentTimeoutAndHelp() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let viaEnvironment = try await busctl(["call", "echo", "echo", #"{"text":"env"}"#, "--compact"], world.endpoints, endpointsFromEnvironment: true)
            #expect(viaEnvironment.status == 0 && viaEnvironment.out.contains(#""text":"env""#))

            let started = ContinuousClock.now
            let slow = try await busctl(["call", "echo", "echo", #"{"text":"slow","delayMs":5000}"#, "--timeout", "0.5"], world.endpoints)
            #expect(slow.status == Int32(StatusCode.deadlineExceeded.rawValue))
            #expect(slow.err.contains("DEADLINE_EXCEEDED"))
            #expect(ContinuousClock.now - started < .seconds(4.5), "it gave up at its timeout, not when the handler finished")

            let help = try await busctl(["--help"], world.endpoints)
            for command in ["call", "tail", "services", "health", "describe", "backup"] {
                #expect(help.out.contains(command), "--help lists \(command)")
            }
            for command in ["call", "tail", "services", "health", "describe", "backup"] {
                let sub = try await busctl([command, "--help"], world.endpoints)
                #expect(sub.status == 0 && sub.out.contains("USAGE"), "\(command) --help")
            }
        }
    }

    @Test("tail --rpc prints each finished call")
    func tailCalls() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let client = world.client
            let result = try await busctl(["tail", "--rpc", "--count", "1"], world.endpoints) {
                while !Task.isCancelled {
                    _ = try? await client.call(Echo.echo, EchoRequest(text: "traced"), options: CallOptions(user: "u3"))
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(result.status == 0)
            #expect(result.out.contains("echo/echo OK"))
            #expect(result.out.contains("user=u3"))
        }
    }

    @Test("tail warns on standard error when a stream skips seq numbers")
    func tailGap() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let publisher = world.serviceBus
            let result = try await busctl(["tail", "gap.>", "--count", "3"], world.endpoints) {
                // Repeat the sequence until busctl has seen three events with the jump among them.
                var round: Int64 = 0
                while !Task.isCancelled {
                    round += 1
                    for seq: Int64 in [1, 2, 4] {
                        let header = EventHeader(id: "g\(round)-\(seq)", source: "gappy", instance: "r\(round)", seq: seq, ts: Date().unixMilliseconds)
                        try publisher.publish(topic: "gap.item", header: header, payload: Data("{}".utf8))
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(result.status == 0)
            #expect(result.err.contains("missed 1 event(s) from gappy"))
        }
    }

    @Test("--json: health as an array, a failure as one JSON object on standard error")
    func jsonOutput() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let health = try await busctl(["health", "--json"], world.endpoints)
            #expect(health.status == 0)
            let build = try JSONValue.parse(WireCoding.encode(BuildInfo.stamp))
            #expect(try JSONValue.parse(Data(health.out.utf8)) == .array([
                .object(["service": .string("broker"), "status": .string("SERVING"), "build": build]),
                .object(["service": .string("echo"), "status": .string("SERVING"), "build": build]),
            ]))
            let failed = try await busctl(["call", "echo", "fail", #"{"kind":"notFound"}"#, "--json"], world.endpoints)
            #expect(failed.status == 5)
            let lastLine = failed.err.split(separator: "\n").last.map(String.init) ?? ""
            #expect(try JSONValue.parse(Data(lastLine.utf8)) == .object(["error": .object([
                "code": .int(5), "name": .string("NOT_FOUND"), "message": .string("material m1 not found"),
            ])]))
        }
    }

    @Test("nothing listening at the broker's address is UNAVAILABLE naming it, not a deadline")
    func brokerNotReachable() async throws {
        let (broker, endpoints) = try await startBroker()
        await broker.stop()  // its port is now closed
        let result = try await busctl(["health", "--timeout", "1"], endpoints)
        #expect(result.status == 14)
        #expect(result.err.contains("UNAVAILABLE: cannot reach the broker at \(endpoints.rpc): Connection refused"))
    }

    @Test("backup of a service without a database fails with UNIMPLEMENTED and writes nothing")
    func backupWithoutDatabase() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let target = FileManager.default.temporaryDirectory.appending(path: "echo-\(UUID().uuidString).sqlite")
            let result = try await busctl(["backup", "echo", target.path], world.endpoints)
            #expect(result.status == 12)
            #expect(result.err.contains("UNIMPLEMENTED: echo keeps no database to back up"))
            #expect(!FileManager.default.fileExists(atPath: target.path))
            let broker = try await busctl(["backup", "broker", target.path], world.endpoints)
            #expect(broker.status == 12)
            #expect(!FileManager.default.fileExists(atPath: target.path))
        }
    }

    @Test("an invalid pattern is a usage error")
    func invalidPattern() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let result = try await busctl(["tail", "a.>.b"], endpoints)
            #expect(result.status == 64)
            #expect(result.err.contains("'>' may only be the last token"))
        }
    }
}
