import Bus
import Foundation
import HTTPClient
import TestSupport
import Testing
import Wire

@Suite("HTTP client over libcurl, against a real local server", .serialized)
struct HTTPClientTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "http_server.py")

    func withServer(_ body: (HTTPClient, PythonServer) async throws -> Void) async throws {
        let server = try await PythonServer(script: Self.script)
        let client = try HTTPClient(logger: testLogger("http"))
        do {
            try await body(client, server)
        } catch {
            await client.shutdown()
            await server.stop()
            throw error
        }
        await client.shutdown()
        await server.stop()
    }

    @Test("a POST carries its method, headers and body, and the response comes back whole")
    func post() async throws {
        try await withServer { client, server in
            let body = Data(#"{"hello":"wörld"}"#.utf8)
            let response = try await client.send(HTTPRequest(
                method: "POST", url: server.baseURL + "/echo", headers: [("content-type", "application/json"), ("x-trace", "t1")], body: body))
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            let echoed = try JSONValue.parse(response.body)
            #expect(echoed["method"] == .string("POST"))
            #expect(echoed["headers"]?["x-trace"] == .string("t1"))
            #expect(echoed["body"] == .string(#"{"hello":"wörld"}"#))
        }
    }

    @Test("an error status is a response, with its headers")
    func errorStatus() async throws {
        try await withServer { client, server in
            let response = try await client.send(HTTPRequest(url: server.baseURL + "/status/429"))
            #expect(response.status == 429)
            #expect(response.header("retry-after") == "7")
        }
    }

    @Test("many requests run at once on the one client thread")
    func concurrent() async throws {
        try await withServer { client, server in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<40 {
                    group.addTask { try await client.send(HTTPRequest(url: server.baseURL + "/echo/\(index)")).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 40))
        }
    }

    @Test("a request slower than its timeout fails with timedOut, mapped to DEADLINE_EXCEEDED")
    func timeout() async throws {
        try await withServer { client, server in
            let error = await #expect(throws: HTTPClientError.self) {
                _ = try await client.send(HTTPRequest(url: server.baseURL + "/slow/2000", timeout: .milliseconds(200)))
            }
            #expect(error == .timedOut)
            #expect(error?.busError.code == .deadlineExceeded)
        }
    }

    @Test("a refused connection fails with connectionRefused, mapped to UNAVAILABLE; its reason has no address")
    func refused() async throws {
        let client = try HTTPClient(logger: testLogger("http"))
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPRequest(url: "http://127.0.0.1:1/"))
        }
        guard case .connectionRefused = error else {
            Issue.record("expected connectionRefused, got \(String(describing: error))")
            return
        }
        #expect(error?.busError.code == .unavailable)
        #expect(error?.reason == "connection refused")
        await client.shutdown()
    }

    @Test("cancelling the caller cancels the exchange at once")
    func cancellation() async throws {
        try await withServer { client, server in
            let call = Task { try await client.send(HTTPRequest(url: server.baseURL + "/slow/3000")) }
            try await Task.sleep(for: .milliseconds(100))
            let started = ContinuousClock.now
            call.cancel()
            let result = await call.result
            #expect(ContinuousClock.now - started < .seconds(1))
            #expect(throws: HTTPClientError.cancelled) { try result.get() }
        }
    }

    @Test("a server-sent-event stream cut into 5-byte chunks with CRLF line ends parses into its events")
    func serverSentEvents() async throws {
        try await withServer { client, server in
            var parser = ServerSentEventParser()
            var events: [ServerSentEvent] = []
            var status = 0
            for try await part in client.stream(HTTPRequest(url: server.baseURL + "/sse")) {
                switch part {
                case .head(let code, _): status = code
                case .body(let chunk): events += parser.feed(chunk)
                }
            }
            events += parser.finish()
            #expect(status == 200)
            #expect(events == [
                ServerSentEvent(data: "one"),
                ServerSentEvent(event: "custom", data: "two\nlines"),
                ServerSentEvent(data: "three"),
            ])
        }
    }

    @Test("calls after shutdown fail at once")
    func afterShutdown() async throws {
        let client = try HTTPClient(logger: testLogger("http"))
        await client.shutdown()
        await #expect(throws: HTTPClientError.cancelled) { _ = try await client.send(HTTPRequest(url: "http://127.0.0.1:1/")) }
    }

    @Test("a multipart body has the parts, the boundary and the closing delimiter")
    func multipart() throws {
        var form = MultipartFormData(boundary: "b0")
        form.add(name: "model", value: "whisper-1")
        form.add(name: "file", fileName: "a.wav", contentType: "audio/wav", data: Data([1, 2]))
        let text = String(decoding: form.encoded, as: UTF8.self)
        #expect(form.contentType == "multipart/form-data; boundary=b0")
        #expect(text.hasPrefix("--b0\r\ncontent-disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--b0\r\n"))
        #expect(text.hasSuffix("\u{1}\u{2}\r\n--b0--\r\n"))
    }
}
