import Contracts
import EdgeCore
import Foundation
import TestSupport
import Testing
import Wire

@Suite("Calls through the edge")
struct CallTests {
    @Test("a call acts for the token's user, whatever the body and headers say")
    func callActsForTheTokensUser() async throws {
        try await EdgeWorld.with { world in
            let answer = try await world.call(
                "probe/whoami", #"{"user":"bob","userId":"bob"}"#, token: try await token("alice"),
                headers: ["X-User": "bob", "User": "bob", "Caller": #"{"role":"operator"}"#])
            #expect(answer.status == 200)
            #expect(answer.header("Content-Type") == "application/json")
            #expect(try answer.decode(ProbeSeen.self).user == "alice")
        }
    }

    @Test("Idempotency-Key, traceparent and Request-Timeout reach the bus header")
    func headersReachTheBus() async throws {
        try await EdgeWorld.with { world in
            let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            let answer = try await world.call(
                "probe/whoami", token: try await token("alice"),
                headers: ["Idempotency-Key": "key-1", "traceparent": traceparent, "Request-Timeout": "2.5"])
            let seen = try answer.decode(ProbeSeen.self)
            #expect(seen.idem == "key-1")
            #expect(seen.traceparent == traceparent)
            let deadline = try #require(seen.deadlineMs)
            #expect((1000...2500).contains(deadline))

            let malformedTrace = try await world.call("probe/whoami", token: try await token("alice"), headers: ["traceparent": "00-zz"])
            #expect(try malformedTrace.decode(ProbeSeen.self).traceparent == nil)
            let defaultDeadline = try #require(try await world.call("probe/whoami", token: try await token("alice")).decode(ProbeSeen.self).deadlineMs)
            #expect(defaultDeadline > 20_000)
        }
    }

    @Test("a Request-Timeout or Idempotency-Key out of range is 400 naming the header")
    func badHeadersAreInvalidArgument() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            for headers in [["Request-Timeout": "soon"], ["Request-Timeout": "-1"], ["Request-Timeout": "nan"], ["Idempotency-Key": String(repeating: "k", count: 129)]] {
                let answer = try await world.call("probe/whoami", token: alice, headers: headers)
                #expect(answer.status == 400, "\(headers)")
                #expect(answer.json.objectValue?["status"] == .string("INVALID_ARGUMENT"))
                #expect(answer.json.objectValue?["details"]?.objectValue?["field"] == .string(headers.keys.first!))
            }
        }
    }

    @Test("every gRPC status code maps to grpc-gateway's HTTP status, with the error body")
    func statusCodesMapAsGrpcGatewayDoes() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            let expected: [Int: Int] = [
                1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409, 11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401,
            ]
            for (code, status) in expected.sorted(by: { $0.key < $1.key }) {
                let answer = try await world.call("probe/raise", #"{"code":\#(code),"message":"because \#(code)"}"#, token: alice)
                #expect(answer.status == status, "code \(code)")
                let body = try #require(answer.json.objectValue)
                #expect(body["code"] == .int(Int64(code)))
                #expect(body["status"] == .string(StatusCode(wireValue: code).name))
                #expect(body["message"] == .string("because \(code)"))
                #expect(body["details"] == .object(["asked": .int(Int64(code))]))
            }
        }
    }

    @Test("only app-facing methods are routable: service, operator and reserved methods are 404")
    func onlyAppMethodsAreRoutable() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            for route in ["probe/internal", "probe/operator", "store/materials.put", "store/_backup", "store/_events.replay", "store/_describe",
                          "store/_health", "nosuch/thing", "store/nosuch", "store/materials.list/extra", "store"] {
                let answer = try await world.call(route, token: alice)
                #expect(answer.status == 404, "\(route)")
                #expect(answer.json.objectValue?["status"] == .string("NOT_FOUND"), "\(route)")
            }
            #expect(try await world.request("GET", "/v1/store/materials.list", token: alice).status == 404)
            #expect(try await world.request("GET", "/nowhere").status == 404)
        }
    }

    @Test("a JSON body that does not decode is 400; one over the limit is 413")
    func bodiesAreChecked() async throws {
        try await EdgeWorld.with({ $0.maximumBodyBytes = 1024 }) { world in
            let alice = try await token("alice")
            let notJSON = try await world.call("store/subjects.create", "{nope", token: alice)
            #expect(notJSON.status == 400)
            let large = try await world.call("probe/whoami", #"{"pad":"\#(String(repeating: "x", count: 2000))"}"#, token: alice)
            #expect(large.status == 413)
            #expect(large.json.objectValue?["status"] == .string("RESOURCE_EXHAUSTED"))
            let atLimit = try await world.call("probe/whoami", #"{"pad":"\#(String(repeating: "x", count: 1000))"}"#, token: alice)
            #expect(atLimit.status == 200)
        }
    }

    @Test("two tokens see only their own data")
    func usersAreIsolated() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice"), bob = try await token("bob")
            let created = try await world.call("store/subjects.create", #"{"name":"Biology"}"#, token: alice)
            #expect(created.status == 200, "\(String(decoding: created.body, as: UTF8.self))")
            let subject = try #require(created.json.objectValue)
            #expect(subject["userId"] == .string("alice"))
            let id = try #require(subject["id"]?.stringValue)

            let bobsList = try await world.call("store/subjects.list", token: bob)
            #expect(bobsList.json.objectValue?["items"] == .array([]))
            #expect(try await world.call("store/subjects.get", #"{"id":"\#(id)"}"#, token: bob).status == 404)
            #expect(try await world.call("store/subjects.delete", #"{"id":"\#(id)"}"#, token: bob).status == 404)

            let alicesList = try await world.call("store/subjects.list", token: alice)
            #expect(alicesList.json.objectValue?["items"]?.arrayValue?.count == 1)
        }
    }

    @Test("each user has a token bucket: past the burst, 429 with Retry-After; others are not slowed")
    func rateLimitIsPerUser() async throws {
        try await EdgeWorld.with({
            // A token every 50 s: a slow machine cannot refill the bucket between the calls.
            $0.ratePerSecond = 0.02
            $0.rateBurst = 3
        }) { world in
            let alice = try await token("alice"), bob = try await token("bob")
            for _ in 0..<3 { #expect(try await world.call("probe/whoami", token: alice).status == 200) }
            let limited = try await world.call("probe/whoami", token: alice)
            #expect(limited.status == 429)
            #expect((Int(limited.header("Retry-After") ?? "") ?? 0) > 1, "Retry-After says when the next token comes")
            #expect(limited.json.objectValue?["status"] == .string("RESOURCE_EXHAUSTED"))
            #expect(try await world.call("probe/whoami", token: bob).status == 200)
        }
    }

    @Test("/healthz answers while the process runs; /readyz when every routed service serves")
    func healthAndReadiness() async throws {
        try await EdgeWorld.with { world in
            #expect(try await world.request("GET", "/healthz").status == 200)
            // Of the catalog's services, only the store runs here.
            let notReady = try await world.request("GET", "/readyz")
            #expect(notReady.status == 503)
            let states = try #require(notReady.json.objectValue?["services"]?.objectValue)
            #expect(states["store"] == .string("SERVING"))
            #expect(states["probe"] == .string("SERVING"))
            #expect(states["scheduler"] == .string("UNAVAILABLE"))
        }
        try await EdgeWorld.with({ $0.contracts = [Store, Probe] }) { world in
            let ready = try await world.request("GET", "/readyz")
            #expect(ready.status == 200)
        }
    }
}


@Suite("The OpenAPI document")
struct OpenAPITests {
    @Test("/openapi.json is OpenAPI 3.1 with every app-facing method, its schemas, the error body and bearer auth")
    func documentFollowsTheContracts() async throws {
        try await EdgeWorld.with { world in
            let answer = try await world.request("GET", "/openapi.json")
            #expect(answer.status == 200)
            let document = try #require(answer.json.objectValue)
            #expect(document["openapi"] == .string("3.1.0"))
            let paths = try #require(document["paths"]?.objectValue)
            let appMethods = (Catalog.contracts + [Probe]).flatMap(\.methods).filter { $0.audience == .app }
            #expect(Set(paths.keys) == Set(appMethods.map { "/v1/\($0.service)/\($0.name)" } + ["/v1/events", "/healthz", "/readyz"]))
            #expect(paths["/v1/store/materials.put"] == nil && paths["/v1/probe/internal"] == nil)

            let create = try #require(paths["/v1/store/subjects.create"]?.objectValue?["post"]?.objectValue)
            #expect(create["operationId"] == .string("store_subjects_create"))
            let schema = try #require(create["requestBody"]?.objectValue?["content"]?.objectValue?["application/json"]?.objectValue?["schema"]?.objectValue)
            #expect(schema["required"] == .array([.string("name")]))
            #expect(schema["properties"]?.objectValue?["color"] == .object(["type": .string("string")]))
            let subject = create["responses"]?.objectValue?["200"]?.objectValue?["content"]?.objectValue?["application/json"]?.objectValue?["schema"]?.objectValue
            #expect(subject?["properties"]?.objectValue?["createdAt"] == .object(["type": .string("string"), "format": .string("date-time")]))
            let original = paths["/v1/store/materials.original"]?.objectValue?["post"]?.objectValue?["responses"]?.objectValue?["200"]?.objectValue?["content"]?.objectValue
            #expect(original?["*/*"] != nil, "a method that answers with a file says so")
            let components = try #require(document["components"]?.objectValue)
            #expect(components["securitySchemes"]?.objectValue?["bearer"]?.objectValue?["scheme"] == .string("bearer"))
            #expect(components["schemas"]?.objectValue?["Error"]?.objectValue?["required"] == .array([.string("code"), .string("status"), .string("message")]))
        }
    }
}

@Suite("Web apps")
struct CORSTests {
    @Test("configured origins get CORS headers and a preflight answer; others get none")
    func corsForConfiguredOrigins() async throws {
        try await EdgeWorld.with({ $0.corsOrigins = ["https://app.example.org"] }) { world in
            let preflight = try await world.request(
                "OPTIONS", "/v1/store/subjects.list",
                headers: ["Origin": "https://app.example.org", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"])
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Origin") == "https://app.example.org")
            #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Authorization") == true)

            let call = try await world.call("store/subjects.list", token: try await token("alice"), headers: ["Origin": "https://app.example.org"])
            #expect(call.status == 200)
            #expect(call.header("Access-Control-Allow-Origin") == "https://app.example.org")
            let refused = try await world.call("store/subjects.list", token: nil, headers: ["Origin": "https://app.example.org"])
            #expect(refused.header("Access-Control-Expose-Headers")?.contains("WWW-Authenticate") == true)

            let other = try await world.call("store/subjects.list", token: try await token("alice"), headers: ["Origin": "https://evil.example"])
            #expect(other.header("Access-Control-Allow-Origin") == nil)
            let otherPreflight = try await world.request("OPTIONS", "/v1/store/subjects.list", headers: ["Origin": "https://evil.example", "Access-Control-Request-Method": "POST"])
            #expect(otherPreflight.header("Access-Control-Allow-Origin") == nil)
        }
    }
}

@Suite("Compression")
struct CompressionTests {
    @Test("large JSON is gzipped for clients that take gzip; small JSON and other clients get it plain")
    func largeJSONIsGzipped() async throws {
        try await EdgeWorld.with { world in
            let file = world.directory.appending(path: "openapi.json.gz").path
            let headers = try await runProgram("/usr/bin/curl", ["-s", "-H", "Accept-Encoding: br, gzip;q=0.8", "-D", "-", "-o", file, world.baseURL.absoluteString + "/openapi.json"])
            #expect(String(decoding: headers, as: UTF8.self).lowercased().contains("content-encoding: gzip"))
            let unzipped = try await runProgram("/bin/gzip", ["-dc", file])
            #expect(try JSONValue.parse(unzipped).objectValue?["openapi"] == .string("3.1.0"))

            let refused = try await runProgram("/usr/bin/curl", ["-s", "-H", "Accept-Encoding: gzip;q=0", "-D", "-", "-o", "/dev/null", world.baseURL.absoluteString + "/openapi.json"])
            #expect(!String(decoding: refused, as: UTF8.self).lowercased().contains("content-encoding"))
            let small = try await runProgram("/usr/bin/curl", ["-s", "-H", "Accept-Encoding: gzip", "-D", "-", "-o", "/dev/null", world.baseURL.absoluteString + "/healthz"])
            #expect(!String(decoding: small, as: UTF8.self).lowercased().contains("content-encoding"))
        }
    }
}
