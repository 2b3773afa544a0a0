import Foundation
import HTTPClient
import TestSupport
import Testing
import Wire

/// A client with a destination policy against a real local server: what the policy refuses is
/// refused at connect time, by the address the name resolves to, and the server sees nothing.
@Suite("HTTP client: destination policy, body limit, no decompression, no redirects", .serialized)
struct OutboundLimitTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "http_server.py")

    /// The server, a client with `policy` and an unrestricted one for checking the server.
    func withServer(policy: DestinationPolicy?, _ body: (HTTPClient, PythonServer, _ count: () async throws -> Int) async throws -> Void) async throws {
        let server = try await PythonServer(script: Self.script)
        let client = try HTTPClient(logger: testLogger("http"), destinationPolicy: policy)
        let checker = try HTTPClient(logger: testLogger("checker"))
        func count() async throws -> Int {
            let response = try await checker.send(HTTPRequest(url: server.baseURL + "/_count"))
            return try JSONValue.parse(response.body)["count"]?.intValue.map(Int.init) ?? -1
        }
        do {
            try await body(client, server, count)
        } catch {
            await client.shutdown()
            await checker.shutdown()
            await server.stop()
            throw error
        }
        await client.shutdown()
        await checker.shutdown()
        await server.stop()
    }

    /// What sending to `url` ended with: the status, or the error.
    func outcome(_ client: HTTPClient, _ url: String) async -> Result<Int, HTTPClientError> {
        do throws(HTTPClientError) {
            return .success(try await client.send(HTTPRequest(url: url, timeout: .seconds(20), connectTimeout: .seconds(20))).status)
        } catch {
            return .failure(error)
        }
    }

    @Test("public addresses only: loopback in every spelling is refused before connecting, and the server sees no request")
    func loopbackSpellings() async throws {
        try await withServer(policy: DestinationPolicy()) { client, server, count in
            let port = server.port
            let loopback = ["127.0.0.1", "localhost", "127.1", "2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.0.0.2", "[::1]",
                            "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]"]
            for host in loopback {
                let result = await outcome(client, "http://\(host):\(port)/echo")
                #expect(result == .failure(.destinationNotAllowed(.loopback)), "\(host)")
            }
            for host in ["0", "0.0.0.0", "[::]"] {
                #expect(await outcome(client, "http://\(host):\(port)/echo") == .failure(.destinationNotAllowed(.unspecified)), "\(host)")
            }
            let reached = try await count()
            #expect(reached == 0, "nothing reached the server")
            let error = HTTPClientError.destinationNotAllowed(.loopback)
            #expect(error.reason == "destination not allowed: loopback address" && error.busError.code == .permissionDenied)
        }
    }

    @Test("private, carrier-grade NAT, link-local (cloud metadata), multicast and reserved addresses are refused without a connection attempt")
    func nonPublicRanges() async throws {
        let client = try HTTPClient(logger: testLogger("http"), destinationPolicy: DestinationPolicy())
        let cases: [(String, AddressClass)] = [
            ("10.0.0.1", .private), ("172.16.5.4", .private), ("172.31.255.254", .private), ("192.168.1.1", .private),
            ("100.64.0.1", .private), ("[fd00:ec2::254]", .private), ("[fc00::1]", .private), ("169.254.169.254", .linkLocal),
            ("[fe80::1]", .linkLocal), ("[::ffff:169.254.169.254]", .linkLocal), ("[64:ff9b::a00:1]", .private), ("224.0.0.1", .multicast),
            ("[ff02::1]", .multicast), ("192.0.2.1", .reserved), ("240.0.0.1", .reserved), ("255.255.255.255", .reserved),
        ]
        let started = ContinuousClock.now
        for (host, kind) in cases {
            #expect(await outcome(client, "http://\(host):8080/latest/meta-data/") == .failure(.destinationNotAllowed(kind)), "\(host)")
        }
        // A connection attempt to any of them would wait out its 20 s connect timeout or fail
        // with an unreachable network: refused, they all end at once.
        #expect(ContinuousClock.now - started < .seconds(15))
        await client.shutdown()
    }

    @Test("allowed networks are reached, by the address a name resolves to; a network that does not cover it is not enough")
    func allowedNetworks() async throws {
        try await withServer(policy: DestinationPolicy(allowing: [IPNetwork("127.0.0.0/8")!])) { client, server, count in
            for host in ["localhost", "127.0.0.1", "127.1", "[::ffff:127.0.0.1]"] {
                #expect(await outcome(client, "http://\(host):\(server.port)/echo") == .success(200), "\(host)")
            }
            let reached = try await count()
            #expect(reached == 4)
            #expect(await outcome(client, "http://10.0.0.1:\(server.port)/echo") == .failure(.destinationNotAllowed(.private)))
        }
        try await withServer(policy: DestinationPolicy(allowing: [IPNetwork("127.0.0.2/32")!, IPNetwork("10.0.0.0/8")!])) { client, server, count in
            #expect(await outcome(client, "http://localhost:\(server.port)/echo") == .failure(.destinationNotAllowed(.loopback)))
            let reached = try await count()
            #expect(reached == 0)
        }
        // An IPv4-mapped network covers the IPv4 addresses it maps.
        try await withServer(policy: DestinationPolicy(allowing: [IPNetwork("::ffff:127.0.0.1/128")!])) { client, server, _ in
            #expect(await outcome(client, "http://127.0.0.1:\(server.port)/echo") == .success(200))
        }
    }

    @Test("a body longer than maximumBodyBytes is cut there: an endless body ends with its status and the first bytes")
    func bodyLimit() async throws {
        try await withServer(policy: nil) { client, server, _ in
            let response = try await client.send(HTTPRequest(url: server.baseURL + "/endless", timeout: .seconds(20), maximumBodyBytes: 1000))
            #expect(response.status == 200 && response.bodyTruncated)
            #expect(response.body == Data(repeating: UInt8(ascii: "x"), count: 1000))
            let small = try await client.send(HTTPRequest(url: server.baseURL + "/echo", maximumBodyBytes: 100_000))
            #expect(small.status == 200 && !small.bodyTruncated && small.body.count > 0)
        }
    }

    @Test("a stream with maximumBodyBytes delivers that many bytes of an endless body and ends, however slowly it is read")
    func streamBodyLimit() async throws {
        try await withServer(policy: nil) { client, server, _ in
            var received = 0
            for try await event in client.stream(HTTPRequest(url: server.baseURL + "/endless", timeout: .seconds(20), maximumBodyBytes: 100_000)) {
                guard case .body(let chunk) = event else { continue }
                received += chunk.count
                // A slow reader: the client thread must stop reading by itself.
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(received == 100_000)
        }
    }

    @Test("without decompress no Accept-Encoding is sent and a gzip bomb arrives as its few compressed bytes")
    func noDecompression() async throws {
        try await withServer(policy: nil) { client, server, _ in
            let echo = try await client.send(HTTPRequest(url: server.baseURL + "/echo", decompress: false))
            #expect(try JSONValue.parse(echo.body)["headers"]?["accept-encoding"] == nil)
            let bomb = try await client.send(HTTPRequest(url: server.baseURL + "/gzip", decompress: false))
            #expect(bomb.status == 200 && bomb.body.count < 64 * 1024 && bomb.body.prefix(2) == Data([0x1f, 0x8b]))
            // The default (ai-gateway's providers) still asks for and inflates compressed answers.
            let asked = try await client.send(HTTPRequest(url: server.baseURL + "/echo"))
            #expect(try JSONValue.parse(asked.body)["headers"]?["accept-encoding"] != nil)
            let inflated = try await client.send(HTTPRequest(url: server.baseURL + "/gzip"))
            #expect(inflated.body.count == 8 << 20)
        }
    }

    @Test("a redirect is the answer: not followed, even to an allowed place")
    func redirectsNotFollowed() async throws {
        try await withServer(policy: DestinationPolicy(allowing: [IPNetwork("127.0.0.1")!])) { client, server, count in
            let response = try await client.send(HTTPRequest(method: "POST", url: server.baseURL + "/redirect", body: Data("x".utf8)))
            #expect(response.status == 302 && response.header("location") == "/echo/redirected")
            let reached = try await count()
            #expect(reached == 1)
        }
    }

    @Test("other schemes than http and https are not spoken")
    func otherSchemes() async throws {
        let client = try HTTPClient(logger: testLogger("http"))
        for url in ["file:///etc/hostname", "gopher://127.0.0.1:1/_x", "dict://127.0.0.1:1/x"] {
            guard case .failure(.transport) = await outcome(client, url) else {
                Issue.record("\(url) was not refused as a transport error")
                continue
            }
        }
        await client.shutdown()
    }

    @Test("addresses are classified after the IANA special-purpose registries")
    func classification() {
        let cases: [(String, AddressClass)] = [
            ("8.8.8.8", .public), ("1.1.1.1", .public), ("172.15.255.255", .public), ("172.32.0.0", .public), ("100.63.255.255", .public),
            ("100.128.0.0", .public), ("169.253.255.255", .public), ("2606:4700::1111", .public), ("2a00:1450:4001::200e", .public),
            ("127.255.255.255", .loopback), ("::1", .loopback), ("::ffff:127.0.0.1", .loopback), ("0.1.2.3", .unspecified), ("::", .unspecified),
            ("10.255.255.255", .private), ("172.16.0.0", .private), ("192.168.255.255", .private), ("100.127.255.255", .private),
            ("fdff:ffff::1", .private), ("fec0::1", .private), ("64:ff9b:1::1", .private), ("64:ff9b::7f00:1", .loopback),
            ("64:ff9b::808:808", .public), ("169.254.0.1", .linkLocal), ("febf::1", .linkLocal), ("239.255.255.250", .multicast),
            ("ff05::2", .multicast), ("198.18.0.1", .reserved), ("203.0.113.9", .reserved), ("2001:db8::1", .reserved),
            ("2001::1", .reserved), ("2002:7f00:1::", .reserved), ("::7f00:1", .reserved), ("4000::1", .reserved), ("3fff::1", .reserved),
        ]
        for (text, kind) in cases {
            #expect(IPAddress(text).map(AddressClass.init) == kind, "\(text)")
        }
        #expect(IPAddress("127.1") == nil && IPAddress("0x7f.0.0.1") == nil && IPAddress("localhost") == nil, "only the standard forms")
        #expect(IPAddress("fe80::1")?.description == "fe80::1" && IPAddress("10.1.2.3")?.description == "10.1.2.3")
    }

    @Test("CIDRs parse strictly; host bits are cleared; an IPv4-mapped network is its IPv4 network")
    func networks() {
        #expect(IPNetwork("10.1.2.3/8")?.description == "10.0.0.0/8")
        #expect(IPNetwork("fd00::1/8")?.description == "fd00::/8")
        #expect(IPNetwork("192.168.1.20")?.description == "192.168.1.20/32")
        #expect(IPNetwork("::ffff:10.0.0.0/104")?.description == "10.0.0.0/8")
        #expect(IPNetwork("0.0.0.0/0")?.contains(IPAddress("203.0.113.1")!) == true)
        #expect(IPNetwork("0.0.0.0/0")?.contains(IPAddress("::1")!) == false, "families do not mix")
        for bad in ["10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/", "10/8", "localhost/8", "", "/8", "10.0.0.0/8/8"] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
        let policy = DestinationPolicy(allowing: [IPNetwork("10.0.0.0/8")!])
        #expect(policy.refusal(for: IPAddress("10.9.9.9")!) == nil && policy.refusal(for: IPAddress("::ffff:10.9.9.9")!) == nil)
        #expect(policy.refusal(for: IPAddress("192.168.0.1")!) == .private && policy.refusal(for: IPAddress("8.8.4.4")!) == nil)
    }

    @Test("URLs are read as libcurl reads them: scheme, host, user information")
    func parsedURLs() {
        let url = ParsedURL("HTTPS://Example.com:8443/a?b")
        #expect(url?.scheme == "https" && url?.host == "Example.com" && url?.hasUserInfo == false)
        #expect(ParsedURL("http://user:pw@example.com/")?.hasUserInfo == true)
        #expect(ParsedURL("http://user@example.com/")?.hasUserInfo == true)
        #expect(ParsedURL("http://2130706433/")?.host == "127.0.0.1", "numeric spellings are normalised")
        #expect(ParsedURL("example.com/x") == nil && ParsedURL("http://exa mple.com/") == nil && ParsedURL("http://") == nil)
    }
}
