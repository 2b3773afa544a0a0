import AIGatewayCore
import BrokerCore
import Crypto
import Bus
import Contracts
import EdgeCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JWTKit
import ServiceKit
import ServiceLifecycle
import StoreCore
import TestSupport
import Threads
import Testing
import Wire

// The edge between a real broker with real services behind it and real HTTP requests in front:
// the store, and "probe", a small service of the tests' own that answers with what reached it
// (user, idempotency key, traceparent, deadline) or fails with the status code asked for.

struct ProbeRaise: Codable, Sendable {
    var code: Int
    var message: String?
}

struct ProbeSeen: Codable, Sendable, Equatable {
    var user: String?
    var idem: String?
    var traceparent: String?
    /// Milliseconds from the request's arrival to its deadline.
    var deadlineMs: Int?
}

struct ProbeContract: ServiceContract {
    static let serviceName = "probe"
    let whoami = Method<JSONValue, ProbeSeen>(Self.self, "whoami", "What reached the service: user, idem, traceparent, deadline.", audience: .app)
    let raise = Method<ProbeRaise, Empty>(Self.self, "raise", "Fails with the status code asked for.", audience: .app)
    let internalOnly = Method<Empty, Empty>(Self.self, "internal", "A service-to-service method.", audience: .service)
    let operatorOnly = Method<Empty, Empty>(Self.self, "operator", "An operator's method.", audience: .operator)
}

let Probe = ProbeContract()

/// The secret the edge of the tests checks HS256 tokens with.
let testSecret = Array("edge-tests-secret-0123456789abcdef".utf8)

/// A real broker, the store and probe on their own buses, the edge on its own bus and a loopback port.
struct EdgeWorld: TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let edge: EdgeService
    /// Held so that its handlers, which hold it weakly, keep answering.
    let store: StoreService
    let gateway: AIGatewayService?
    let probeBus: Bus
    let directory: URL
    let tasks: [Task<Void, any Error>]
    let baseURL: URL
    let session: URLSession

    /// - Parameter aiGateway: also run ai-gateway (with its offline local provider unless the
    ///   closure configures others).
    static func start(
        aiGateway: ((inout AIGatewayConfiguration) -> Void)? = nil, configure: (inout EdgeConfiguration) -> Void = { _ in }
    ) async throws -> EdgeWorld {
        let (broker, endpoints) = try await startBroker()
        let directory = FileManager.default.temporaryDirectory.appending(path: "studybus-edge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try StoreService(context: ServiceContext(
            configuration: StoreConfiguration(databaseURL: directory.appending(path: "store.sqlite")),
            logger: testLogger("store"), busConfiguration: busConfiguration(endpoints, source: "store")))
        let probeBus = try Bus(configuration: busConfiguration(endpoints, source: "probe"), logger: testLogger("probe"))
        let probe = ServiceHost(bus: probeBus, contract: Probe)
        probe.handle(Probe.whoami) { _, context in
            ProbeSeen(user: context.user, idem: context.idempotencyKey, traceparent: context.meta["traceparent"],
                      deadlineMs: context.timeRemaining.map { Int($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000) })
        }
        probe.handle(Probe.raise) { (request: ProbeRaise, _: RequestContext) async throws(BusError) -> Empty in
            throw BusError(StatusCode(wireValue: request.code), request.message ?? "raised \(request.code)", details: .object(["asked": .int(Int64(request.code))]))
        }
        probe.handle(Probe.internalOnly) { _, _ in Empty() }
        probe.handle(Probe.operatorOnly) { _, _ in Empty() }

        let (edge, edgeTasks) = try await startEdge(endpoints, configure: configure)
        var services: [any Service] = store.services + [probeBus, probe]
        var gateway: AIGatewayService?
        if let aiGateway {
            var configuration = AIGatewayConfiguration(databaseURL: directory.appending(path: "ai-gateway.sqlite"))
            aiGateway(&configuration)
            gateway = try AIGatewayService(context: ServiceContext(
                configuration: configuration,
                logger: testLogger("ai-gateway"), busConfiguration: busConfiguration(endpoints, source: "ai-gateway")))
            services += gateway!.services
        }
        let tasks = services.map { service in Task { try await service.run() } } + edgeTasks
        let session = URLSession(configuration: .ephemeral)
        let world = EdgeWorld(
            broker: broker, endpoints: endpoints, edge: edge, store: store, gateway: gateway, probeBus: probeBus, directory: directory, tasks: tasks,
            baseURL: URL(string: "http://127.0.0.1:\(edge.boundPort!)")!, session: session)
        for service in ["store", "probe"] + (aiGateway != nil ? ["ai-gateway"] : []) {
            try await eventually("\(service) serves", timeout: Wait.startup) { (try? await probeBus.call(Reserved.health(service), Empty())) != nil }
        }
        return world
    }

    /// An edge on the broker at `endpoints`, listening on a free loopback port, and the tasks
    /// that run it.
    static func startEdge(
        _ endpoints: Broker.Endpoints, configure: (inout EdgeConfiguration) -> Void = { _ in }
    ) async throws -> (EdgeService, [Task<Void, any Error>]) {
        var configuration = EdgeConfiguration(tokens: TokenSettings(hmacSecret: testSecret))
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.contracts = Catalog.contracts + [Probe]
        configure(&configuration)
        let edge = try EdgeService(context: ServiceContext(
            configuration: configuration, logger: testLogger("edge"), busConfiguration: busConfiguration(endpoints, source: "edge")))
        let tasks = edge.services.map { service in Task { try await service.run() } }
        try await eventually("the edge listens") { edge.boundPort != nil }
        return (edge, tasks)
    }

    /// Runs `body` with a new world and stops it afterwards, also when `body` throws.
    static func with(
        aiGateway: ((inout AIGatewayConfiguration) -> Void)? = nil, _ configure: (inout EdgeConfiguration) -> Void = { _ in },
        _ body: (EdgeWorld) async throws -> Void
    ) async throws {
        try await running(try await start(aiGateway: aiGateway, configure: configure), stop: { await $0.stop() }, body)
    }

    func stop() async {
        for task in tasks.reversed() {
            task.cancel()
            _ = try? await task.value
        }
        await broker.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Makes an HTTP request; the answer's status, headers and body.
    func request(
        _ method: String, _ path: String, body: Data? = nil, token: String? = nil, headers: [String: String] = [:]
    ) async throws -> HTTPAnswer {
        var request = URLRequest(url: try #require(URL(string: baseURL.absoluteString + path)))
        request.httpMethod = method
        request.httpBody = body
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if body != nil, headers["Content-Type"] == nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return HTTPAnswer(status: http.statusCode, headers: http.allHeaderFields as? [String: String] ?? [:], body: data)
    }

    /// `POST /v1/SERVICE/METHOD` with a JSON body.
    func call(_ route: String, _ json: String = "{}", token: String?, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        try await request("POST", "/v1/\(route)", body: Data(json.utf8), token: token, headers: headers)
    }
}

struct HTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: Data

    /// A header by name, case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }

    /// The body decoded as `type`.
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: body) }
}

/// Claims of tokens the tests make, to be able to make wrong ones.
struct TestClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    init(_ user: String, expires: TimeInterval = 3600, notBefore: TimeInterval? = nil, issuer: String? = "studybus", audience: String? = "studybus") {
        sub = SubjectClaim(value: user)
        exp = ExpirationClaim(value: Date().addingTimeInterval(expires))
        nbf = notBefore.map { NotBeforeClaim(value: Date().addingTimeInterval($0)) }
        iss = issuer.map { IssuerClaim(value: $0) }
        aud = audience.map { AudienceClaim(value: [$0]) }
    }
}

/// An HS256 token signed with `secret` (the edge's by default).
func hs256(_ claims: TestClaims, secret: [UInt8] = testSecret) async throws -> String {
    let keys = JWTKeyCollection()
    await keys.add(hmac: HMACKey(key: SymmetricKey(data: secret)), digestAlgorithm: .sha256)
    return try await keys.sign(claims)
}

/// A development token for `user`, as `busctl token issue` makes them.
func token(_ user: String) async throws -> String {
    try await TokenIssuer.issue(user: user, lifetime: 3600, settings: TokenSettings(hmacSecret: testSecret))
}

/// Runs a program (curl, gzip, openssl) to its end and returns its standard output. The wait
/// blocks a thread, so it happens off the cooperative pool: with both of a small machine's pool
/// threads waiting on curl, the edge under test could not answer it.
func runProgram(_ executable: String, _ arguments: [String]) async throws -> Data {
    try await offThePool { () throws -> Data in try runBlocking(executable, arguments) }
}

private func runBlocking(_ executable: String, _ arguments: [String]) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return output
}

func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }
