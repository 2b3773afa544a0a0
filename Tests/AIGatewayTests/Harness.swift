import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import ServiceKit
import Storage
import TestSupport
import Testing
import Wire

/// The mock provider (mock_provider.py) and the means to script it.
final class MockProvider: Sendable {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "mock_provider.py")

    let server: PythonServer
    private let http: HTTPClient

    init() async throws {
        server = try await PythonServer(script: Self.script)
        http = try HTTPClient(logger: testLogger("mock-control"))
    }

    /// Queues what the next requests of `route` (`openai`, `gemini`, `whisper`) get.
    func script(_ route: String, _ steps: [[String: JSONValue]]) async throws {
        let body = JSONValue.object(["route": .string(route), "steps": .array(steps.map { JSONValue.object($0) })])
        let response = try await http.send(HTTPRequest(method: "POST", url: server.baseURL + "/_control/script",
                                                       headers: [("content-type", "application/json")], body: body.jsonData))
        #expect(response.status == 200)
    }

    /// Every request the mock received, oldest first.
    func requests() async throws -> [JSONValue] {
        let response = try await http.send(HTTPRequest(url: server.baseURL + "/_control/requests"))
        return try JSONValue.parse(response.body).arrayValue ?? []
    }

    func requests(containing path: String) async throws -> [JSONValue] {
        try await requests().filter { $0["path"]?.stringValue?.contains(path) == true }
    }

    func stop() async {
        await http.shutdown()
        await server.stop()
    }

    var openAI: RemoteProviderConfiguration {
        RemoteProviderConfiguration(name: "openai", kind: .openai, baseURL: server.baseURL + "/v1", apiKey: APIKey("sk-test-openai-secret"),
                                    chatModel: "gpt-mock", transcriptionModel: "whisper-1", burst: 5,
                                    prices: Prices(inputPerMillionTokens: 1, outputPerMillionTokens: 2, audioPerMinute: 0.006))
    }

    var gemini: RemoteProviderConfiguration {
        RemoteProviderConfiguration(name: "gemini", kind: .gemini, baseURL: server.baseURL + "/v1beta", apiKey: APIKey("gm-test-gemini-secret"),
                                    chatModel: "gemini-mock", burst: 5, prices: Prices(inputPerMillionTokens: 3, outputPerMillionTokens: 4))
    }
}

/// A broker, the gateway running on it (in this process), and a client bus.
struct GatewayWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let serviceBus: Bus
    let gateway: AIGatewayService
    let client: Bus
    let task: Task<Void, any Error>
    let directory: URL
    let clock: ManualWallClock?

    /// A gateway with `configuration` (fast retries unless the test says otherwise) and its
    /// database in `directory` (a new temporary folder by default).
    static func start(
        _ configuration: GatewayConfiguration = GatewayConfiguration(), directory: URL? = nil, clock: ManualWallClock? = nil
    ) async throws -> GatewayWorld {
        let directory = directory ?? FileManager.default.temporaryDirectory.appending(path: "ai-gateway-test-\(UUID().uuidString)")
        let (broker, endpoints) = try await startBroker()
        let serviceBus = try Bus(configuration: busConfiguration(endpoints, source: "ai-gateway"), logger: testLogger("ai-gateway"))
        let database = try GatewayDatabase.open(in: directory, logger: testLogger("db"))
        let gateway = try AIGatewayService(bus: serviceBus, configuration: configuration, database: database,
                                           clock: clock ?? SystemWallClock(), logger: testLogger("ai-gateway"))
        let task = Task { try await gateway.run() }
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        let world = GatewayWorld(broker: broker, endpoints: endpoints, serviceBus: serviceBus, gateway: gateway, client: client,
                                 task: task, directory: directory, clock: clock)
        try await eventually("ai-gateway registered") {
            let reply = try? await client.callRaw(service: BrokerProtocol.mmiService, method: "ai-gateway", payload: Data())
            return reply.map { String(decoding: $0.payload, as: UTF8.self) == "200" } ?? false
        }
        return world
    }

    /// Calls the gateway as `user`.
    func call<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, user: String? = "u1", timeout: Duration = .seconds(20), attachment: Data? = nil
    ) async throws(BusError) -> Response {
        try await client.call(method, request, options: CallOptions(user: user, timeout: timeout, attachment: attachment))
    }

    /// Subscribes to a chat stream and waits until the subscription reaches the broker (a probe
    /// event on the same topic comes back), so no token is missed.
    func subscribe(requestId: String) async throws -> EventCollector {
        try await .active(client, AIGateway.chatStream(requestId: requestId), probe: ChatStreamEvent(requestId: requestId, index: -1, kind: .token, delta: "probe"))
    }

    /// The chat events collected, probes left out, in arrival order.
    static func chatEvents(_ collector: EventCollector) -> [ChatStreamEvent] {
        collector.all.compactMap { try? WireCoding.decode(ChatStreamEvent.self, from: $0.payload) }.filter { $0.index >= 0 }
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
        await client.shutdown()
        await serviceBus.shutdown()
        await broker.stop()
    }
}

/// Runs `body` with a world, stopping it whatever happens.
func withGateway(
    _ configuration: GatewayConfiguration = GatewayConfiguration(), directory: URL? = nil, clock: ManualWallClock? = nil,
    _ body: (GatewayWorld) async throws -> Void
) async throws {
    let world = try await GatewayWorld.start(configuration, directory: directory, clock: clock)
    defer { if directory == nil { try? FileManager.default.removeItem(at: world.directory) } }
    do {
        try await body(world)
    } catch {
        await world.stop()
        throw error
    }
    await world.stop()
}

/// Runs `body` with a mock provider and a gateway configured against it.
func withMockGateway(
    routes: [GatewayTask: [String]] = [:], configure: (inout GatewayConfiguration) -> Void = { _ in },
    _ body: (GatewayWorld, MockProvider) async throws -> Void
) async throws {
    let mock = try await MockProvider()
    var configuration = GatewayConfiguration(openAI: mock.openAI, gemini: mock.gemini, routes: routes)
    configuration.retry = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(20), maxDelay: .milliseconds(200))
    configure(&configuration)
    do {
        try await withGateway(configuration) { world in try await body(world, mock) }
    } catch {
        await mock.stop()
        throw error
    }
    await mock.stop()
}
