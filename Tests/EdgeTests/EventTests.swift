import BrokerCore
import Bus
import Contracts
import EdgeCore
import Foundation
import ServiceLifecycle
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import AIGatewayCore
import TestSupport
import Testing
import Wire

/// One Server-Sent Event as a client reads it.
struct SSEEvent {
    var id: String?
    var event: String?
    var data: JSONValue
}

/// A `GET /v1/events` stream read by curl, a client that is not ours.
struct SSEClient {
    let process: ChildProcess

    /// - Parameter curlArguments: more of curl's options (TLS, the HTTP version).
    init(_ baseURL: URL, token: String, lastEventID: String? = nil, curlArguments: [String] = []) throws {
        var arguments = ["-sN", "-H", "Authorization: Bearer \(token)"] + curlArguments
        if let lastEventID { arguments += ["-H", "Last-Event-ID: \(lastEventID)"] }
        process = try ChildProcess(executable: "/usr/bin/curl", arguments: arguments + [baseURL.absoluteString + "/v1/events"], captureOutput: true)
    }

    /// The next event, skipping comments and the `retry` hint; nil if none comes in time.
    func next(timeout: Duration = .seconds(10)) async -> SSEEvent? {
        var event = SSEEvent(data: .null)
        var fields = 0
        while let line = await process.readLine(timeout: timeout) {
            if line.isEmpty {
                if fields > 0 { return event }
                continue
            }
            if line.hasPrefix(":") || line.hasPrefix("retry:") { continue }
            fields += 1
            if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)) }
            if line.hasPrefix("event: ") { event.event = String(line.dropFirst(7)) }
            if line.hasPrefix("data: ") { event.data = (try? JSONValue.parse(String(line.dropFirst(6)))) ?? .null }
        }
        return nil
    }

    func close() async { await process.terminate(grace: .seconds(2)) }
}

extension SSEEvent {
    var subjectName: String? { data.objectValue?["payload"]?.objectValue?["name"]?.stringValue }
}

@Suite("Events through the edge")
struct EventTests {
    @Test("each user's /v1/events carries their own events only, with ids")
    func eventsAreTheCallersOwn() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice"), bob = try await token("bob")
            let alices = try SSEClient(world.baseURL, token: alice)
            let bobs = try SSEClient(world.baseURL, token: bob)
            try await eventually("both streams listen") { world.edge.hub.listenerCount == 2 }

            _ = try await world.call("store/subjects.create", #"{"name":"Alice 1"}"#, token: alice)
            _ = try await world.call("store/subjects.create", #"{"name":"Bob 1"}"#, token: bob)
            _ = try await world.call("store/subjects.create", #"{"name":"Alice 2"}"#, token: alice)

            let first = try #require(await alices.next())
            #expect(first.event == "subject.created")
            #expect(first.subjectName == "Alice 1")
            #expect(first.data.objectValue?["source"] == .string("store"))
            #expect(first.id?.hasPrefix("store:") == true)
            #expect(try #require(await alices.next()).subjectName == "Alice 2")
            #expect(try #require(await bobs.next()).subjectName == "Bob 1")
            await alices.close()
            await bobs.close()
        }
    }

    @Test("Last-Event-ID resumes after a reconnect to a restarted edge: nothing lost, nothing twice")
    func lastEventIDResumes() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            _ = try await world.call("store/subjects.create", #"{"name":"Before"}"#, token: alice)
            let stream = try SSEClient(world.baseURL, token: alice)
            // Stored events come first: the one made before the stream opened.
            let before = try #require(await stream.next())
            #expect(before.subjectName == "Before")
            _ = try await world.call("store/subjects.create", #"{"name":"Seen"}"#, token: alice)
            let seen = try #require(await stream.next())
            #expect(seen.subjectName == "Seen")
            await stream.close()

            _ = try await world.call("store/subjects.create", #"{"name":"Missed"}"#, token: alice)
            _ = try await world.call("store/subjects.create", #"{"name":"Bob's"}"#, token: try await token("bob"))
            // Another edge process, knowing nothing of the first: the id alone is the position.
            let (restarted, tasks) = try await EdgeWorld.startEdge(world.endpoints)
            let resumed = try SSEClient(URL(string: "http://127.0.0.1:\(restarted.boundPort!)")!, token: alice, lastEventID: seen.id)
            #expect(try #require(await resumed.next()).subjectName == "Missed")
            _ = try await world.call("store/subjects.create", #"{"name":"Live"}"#, token: alice)
            #expect(try #require(await resumed.next()).subjectName == "Live")
            await resumed.close()
            for task in tasks.reversed() { task.cancel(); _ = try? await task.value }
        }
    }

    @Test("a Last-Event-ID the edge did not write is 400")
    func foreignLastEventIDIsRefused() async throws {
        try await EdgeWorld.with { world in
            for id in ["store:zz:1", "store:12345678:-1", "store:12345678", String(repeating: "a", count: 2000)] {
                let answer = try await world.request("GET", "/v1/events", token: try await token("alice"), headers: ["Last-Event-ID": id])
                #expect(answer.status == 400, "\(id)")
            }
            #expect(try await world.request("GET", "/v1/events").status == 401)
        }
    }

    @Test("streams past the per-user or overall limit are 429 before they start; a closed one frees its place")
    func streamLimits() async throws {
        try await EdgeWorld.with({ $0.maximumEventStreamsPerUser = 2; $0.maximumEventStreams = 3 }) { world in
            let alice = try await token("alice"), bob = try await token("bob"), carol = try await token("carol")
            let first = try SSEClient(world.baseURL, token: alice)
            let second = try SSEClient(world.baseURL, token: alice)
            try await eventually("alice's two streams listen") { world.edge.hub.listenerCount == 2 }

            let third = try await world.request("GET", "/v1/events", token: alice)
            #expect(third.status == 429)
            let body = try JSONValue.parse(third.body).objectValue
            #expect(body?["status"] == .string("RESOURCE_EXHAUSTED"))
            #expect(body?["details"]?.objectValue?["setting"] == .string("EDGE_MAX_EVENT_STREAMS_PER_USER"))

            let bobs = try SSEClient(world.baseURL, token: bob)
            try await eventually("bob's stream listens") { world.edge.hub.listenerCount == 3 }
            let carols = try await world.request("GET", "/v1/events", token: carol)
            #expect(carols.status == 429)
            #expect(try JSONValue.parse(carols.body).objectValue?["details"]?.objectValue?["setting"] == .string("EDGE_MAX_EVENT_STREAMS"))

            await first.close()
            // Noticed when a write fails: at the latest the next keep-alive comment, 15 s on.
            try await eventually("the closed stream is gone") { world.edge.hub.listenerCount == 2 }
            let again = try SSEClient(world.baseURL, token: alice)
            try await eventually("alice may open a stream again") { world.edge.hub.listenerCount == 3 }
            // Events still reach both of alice's streams.
            _ = try await world.call("store/subjects.create", #"{"name":"Shared"}"#, token: alice)
            #expect(try #require(await second.next()).subjectName == "Shared")
            #expect(try #require(await again.next()).subjectName == "Shared")
            for stream in [second, bobs, again] { await stream.close() }
        }
    }

    @Test("_events.replay answers an edge caller one user's events only, and none without a user (Addition 14)")
    func replayForTheEdgeIsOneUsers() async throws {
        try await EdgeWorld.with { world in
            _ = try await world.call("store/subjects.create", #"{"name":"Alice's"}"#, token: try await token("alice"))
            _ = try await world.call("store/subjects.create", #"{"name":"Bob's"}"#, token: try await token("bob"))
            let edge = try BusIdentity(role: .edge, name: nil)
            var asEdge = CallOptions(user: "alice")
            asEdge.claimedCaller = edge
            let alices = try await world.probeBus.call(Reserved.eventsReplay("store"), ReplayRequest(after: 0), options: asEdge)
            #expect(alices.events.map(\.header.user) == ["alice"])
            #expect(alices.lastSeq == 2)

            var everyone = CallOptions()
            everyone.claimedCaller = edge
            await #expect(throws: BusError.self) { try await world.probeBus.call(Reserved.eventsReplay("store"), ReplayRequest(after: 0), options: everyone) }
            var asService = CallOptions()
            asService.claimedCaller = try BusIdentity(role: .service, name: "scheduler")
            #expect(try await world.probeBus.call(Reserved.eventsReplay("store"), ReplayRequest(after: 0), options: asService).events.count == 2)
        }
    }
}

@Suite("The tutor streamed through the edge")
struct ChatStreamTests {
    @Test("a chat with stream: true answers as text/event-stream: tokens, the final event, [DONE]")
    func chatStreams() async throws {
        try await EdgeWorld.with(aiGateway: { _ in }) { world in
            let alice = try await token("alice")
            let answer = try await world.call(
                "ai-gateway/chat", #"{"requestId":"mine","messages":[{"role":"user","content":"What does chlorophyll absorb?"}],"stream":true}"#, token: alice)
            #expect(answer.status == 200)
            #expect(answer.header("Content-Type") == "text/event-stream")
            let lines = String(decoding: answer.body, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("data: ") }.map { $0.dropFirst(6) }
            #expect(lines.last == "[DONE]")
            let events = lines.dropLast().compactMap { try? JSONValue.parse(String($0)).objectValue }
            let final = try #require(events.last)
            #expect(final["kind"] == .string("final"))
            let requestId = try #require(final["requestId"]?.stringValue)
            #expect(requestId.hasPrefix("edge-"), "the edge names the stream, not the client")
            let tokens = events.filter { $0["kind"] == .string("token") }
            #expect(!tokens.isEmpty)
            #expect(tokens.compactMap { $0["delta"]?.stringValue }.joined() == final["text"]?.stringValue)

            // Without stream: one JSON answer.
            let plain = try await world.call("ai-gateway/chat", #"{"messages":[{"role":"user","content":"Hi"}]}"#, token: alice)
            #expect(plain.header("Content-Type") == "application/json")
            #expect(plain.json.objectValue?["text"]?.stringValue?.isEmpty == false)
        }
    }

    @Test("closing a streamed chat's connection cancels the answer (chat.cancel)")
    func disconnectCancels() async throws {
        let provider = try await PythonServer(script: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../AIGatewayTests/mock_provider.py"))
        defer { Task { await provider.stop() } }
        let words = (1...60).map { "word\($0)" }.joined(separator: " ")
        let openAI = RemoteProviderConfiguration(name: "openai", kind: .openai, baseURL: provider.baseURL + "/v1", apiKey: APIKey("sk-test"), chatModel: "gpt-mock")
        try await EdgeWorld.with(aiGateway: {
            $0.openAI = openAI
            $0.routes[.chat] = ["openai"]
        }) { world in
            var script = URLRequest(url: URL(string: provider.baseURL + "/_control/script")!)
            script.httpMethod = "POST"
            script.httpBody = Data(#"{"route":"openai","steps":[{"text":"\#(words)","chunkDelayMs":100}]}"#.utf8)
            _ = try await world.session.data(for: script)
            let streams = EventCollector(try world.probeBus.subscribe(["ai.stream."]))
            try await eventually("the stream subscription reaches the broker") {
                try world.probeBus.publish(topic: "ai.stream.probe", payload: Data("{}".utf8))
                try await Task.sleep(for: .milliseconds(30))
                return streams.topics().contains("ai.stream.probe")
            }

            let curl = try ChildProcess(executable: "/usr/bin/curl", arguments: [
                "-sN", "-H", "Authorization: Bearer \(try await token("alice"))", "--json",
                #"{"messages":[{"role":"user","content":"Count."}],"stream":true}"#, world.baseURL.absoluteString + "/v1/ai-gateway/chat",
            ], captureOutput: true)
            // The first event's line; the hub's keep-alive comment may come before it.
            var first = try #require(await curl.readLine())
            while !first.hasPrefix("data: ") { first = try #require(await curl.readLine()) }
            let requestId = try #require(try JSONValue.parse(String(first.dropFirst(6))).objectValue?["requestId"]?.stringValue)
            curl.send(SIGKILL)
            await curl.waitForExit()

            let topic = "ai.stream.\(requestId)"
            try await eventually("the answer ends") {
                streams.all.contains { $0.topic == topic && (try? JSONValue.parse($0.payload).objectValue?["kind"]) == .string("final") }
            }
            let events = streams.all.filter { $0.topic == topic }.compactMap { try? JSONValue.parse($0.payload).objectValue }
            #expect(events.last?["finishReason"] == .string("cancelled"))
            #expect(events.filter { $0["kind"] == .string("token") }.count < 60, "the answer stopped before its end")
        }
    }
}

/// The subject names of the `subject.created` events in raw SSE text, in order.
private func subjectNames(_ text: String) -> [String] {
    text.split(separator: "\n").filter { $0.hasPrefix("data: ") }.compactMap {
        try? JSONValue.parse(String($0.dropFirst(6))).objectValue?["payload"]?.objectValue?["name"]?.stringValue
    }
}

@Suite("Event streams on their connections")
struct EventConnectionTests {
    @Test("a stream asked for on a keep-alive connection after other requests, pipelined, follows their answers")
    func streamAfterOtherRequests() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            _ = try await world.call("store/subjects.create", #"{"name":"Stored"}"#, token: alice)
            let connection = try LoopbackConnection.open(port: world.edge.boundPort!)
            defer { connection.close() }
            let whoami = "POST /v1/probe/whoami HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer \(alice)\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
            let events = "GET /v1/events HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer \(alice)\r\n\r\n"
            connection.send(whoami + "GET /healthz HTTP/1.1\r\nHost: edge\r\n\r\n" + events)
            let answer = await connection.read { subjectNames($0).contains("Stored") }
            // Bodies end without a line break: the next status line follows on the same line.
            let statuses = answer.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.components(separatedBy: "\r\n")[0] }
            #expect(statuses == ["200 OK", "200 OK", "200 OK"])
            #expect(answer.text.contains(#""user":"alice""#))
            let streamHead = try #require(answer.text.range(of: "HTTP/1.1 200 OK", options: .backwards))
            #expect(answer.text[streamHead.lowerBound...].lowercased().contains("content-type: text/event-stream"))
            #expect(subjectNames(answer.text) == ["Stored"])

            // Live events come on the same connection.
            _ = try await world.call("store/subjects.create", #"{"name":"Live"}"#, token: alice)
            #expect(subjectNames(await connection.read { subjectNames($0).contains("Live") }.text) == ["Live"])
        }
    }

    @Test("a refused stream is answered with its error and the connection closed")
    func refusalClosesTheConnection() async throws {
        try await EdgeWorld.with { world in
            let connection = try LoopbackConnection.open(port: world.edge.boundPort!)
            defer { connection.close() }
            connection.send("GET /v1/events HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer not-a-token\r\n\r\n")
            let answer = await connection.read()
            #expect(answer.closed)
            #expect(answer.text.hasPrefix("HTTP/1.1 401 "))
            #expect(answer.text.lowercased().contains("www-authenticate: bearer"))
            let body = try #require(answer.text.components(separatedBy: "\r\n\r\n").last)
            #expect(try JSONValue.parse(body).objectValue?["status"] == .string("UNAUTHENTICATED"))
        }
    }

    @Test("a client that closes its side, before any request or after one, gets its answer and then the edge's close")
    func halfClosedConnectionsClose() async throws {
        try await EdgeWorld.with { world in
            let silent = try LoopbackConnection.open(port: world.edge.boundPort!)
            defer { silent.close() }
            silent.shutdownWrite()
            let nothing = await silent.read()
            #expect(nothing.closed && nothing.text.isEmpty)

            let asking = try LoopbackConnection.open(port: world.edge.boundPort!)
            defer { asking.close() }
            asking.send("GET /healthz HTTP/1.1\r\nHost: edge\r\n\r\n")
            asking.shutdownWrite()
            let answer = await asking.read()
            #expect(answer.closed)
            #expect(answer.text.hasPrefix("HTTP/1.1 200 "))
        }
    }

    @Test("a stream for a configured origin carries CORS headers; another origin's none")
    func streamCORS() async throws {
        try await EdgeWorld.with({ $0.corsOrigins = ["https://app.example"] }) { world in
            let alice = try await token("alice")
            for (origin, allowed) in [("https://app.example", true), ("https://evil.example", false)] {
                let connection = try LoopbackConnection.open(port: world.edge.boundPort!)
                defer { connection.close() }
                connection.send("GET /v1/events HTTP/1.1\r\nHost: edge\r\nOrigin: \(origin)\r\nAuthorization: Bearer \(alice)\r\n\r\n")
                let head = await connection.read { $0.contains("\r\n\r\n") }.text.lowercased()
                #expect(head.hasPrefix("http/1.1 200 "))
                #expect(head.contains("access-control-allow-origin: \(origin)") == allowed, "\(origin)")
            }
        }
    }

    @Test("a producer that cannot read back yet is asked again without a new event, and the stream catches up")
    func failedReplayIsRetried() async throws {
        try await EdgeWorld.with({ $0.contracts.append(Flaky) }) { world in
            let producer = try FlakyProducer(endpoints: world.endpoints, failures: 2)
            defer { producer.stop() }
            let alice = try await token("alice")
            let connection = try LoopbackConnection.open(port: world.edge.boundPort!)
            defer { connection.close() }
            connection.send("GET /v1/events HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer \(alice)\r\n\r\n")
            // The stream's keep-alives end each wait for a read: the deadline is checked on them.
            let deadline = ContinuousClock.now + .seconds(20)
            let read = await connection.read(timeout: .seconds(20)) { $0.contains("event: flaky.ready") || ContinuousClock.now > deadline }
            #expect(subjectNames(read.text) == ["Stored"])
            #expect(producer.asked >= 3)
        }
    }

    @Test("a client that stops reading misses nothing: once it reads again it gets every event, in order, once")
    func slowReaderCatchesUp() async throws {
        try await EdgeWorld.with({ $0.ratePerSecond = 100_000; $0.rateBurst = 100_000 }) { world in
            let alice = try await token("alice")
            let connection = try LoopbackConnection.open(port: world.edge.boundPort!, receiveBuffer: 4096)
            defer { connection.close() }
            connection.send("GET /v1/events HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer \(alice)\r\n\r\n")
            _ = await connection.read { $0.contains("\r\n\r\n") }
            try await eventually("the stream listens") { world.edge.hub.listenerCount == 1 }
            // Far more than the socket's buffers and the channel's high-water mark hold, with
            // the client reading nothing meanwhile.
            let padding = String(repeating: "x", count: 150)
            let names = (1...1500).map { "\($0) \(padding)" }
            for name in names { #expect(try await world.call("store/subjects.create", #"{"name":"\#(name)"}"#, token: alice).status == 200) }
            let read = await connection.read(timeout: .seconds(30)) { subjectNames($0).count >= names.count }
            #expect(subjectNames(read.text) == names)
        }
    }
}

/// A durable producer of the tests' own, for `/v1/events` to read back from (the edge reads
/// back from the services apps can call).
struct FlakyContract: ServiceContract {
    static let serviceName = "flaky"
    let ping = Method<Empty, Empty>(Self.self, "ping", "Routes the service through the edge.", audience: .app)
}

let Flaky = FlakyContract()

/// "flaky" on the bus: a durable producer that publishes nothing live and whose first
/// `failures` reads back fail with UNAVAILABLE; later ones answer alice's one stored event.
private final class FlakyProducer: Sendable {
    private final class Calls: Sendable {
        let count = Atomic<Int>(0)
    }

    /// Reads back asked for so far.
    var asked: Int { calls.count.load(ordering: .relaxed) }
    private let calls = Calls()
    private let tasks: [Task<Void, any Error>]

    init(endpoints: Broker.Endpoints, failures: Int) throws {
        let bus = try Bus(configuration: busConfiguration(endpoints, source: "flaky"), logger: testLogger("flaky"))
        let host = ServiceHost(bus: bus, contract: Flaky)
        let calls = calls
        host.handle(Reserved.eventsReplay("flaky")) { (request: ReplayRequest, _: RequestContext) async throws -> ReplayResponse in
            guard calls.count.add(1, ordering: .relaxed).newValue > failures else { throw BusError.unavailable("not yet") }
            let header = EventHeader(id: "e1", source: "flaky", instance: "flaky-1", seq: 1, ts: 0, user: "alice")
            let stored = StoredEvent(topic: "flaky.ready", header: header, payload: .object(["name": .string("Stored")]))
            return ReplayResponse(events: request.after < 1 ? [stored] : [], lastSeq: 1, instance: "flaky-1")
        }
        let services: [any Service] = [bus, host]
        tasks = services.map { service in Task { try await service.run() } }
    }

    func stop() {
        for task in tasks { task.cancel() }
    }
}
