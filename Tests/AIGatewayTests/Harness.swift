import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import ServiceKit
import ServiceLifecycle
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
                                    prices: Prices(inputPerMillionTokens: 1, outputPerMillionTokens: 2, audioPerMinute: 0.006, speechPerMillionCharacters: 15))
    }

    var gemini: RemoteProviderConfiguration {
        RemoteProviderConfiguration(name: "gemini", kind: .gemini, baseURL: server.baseURL + "/v1beta", apiKey: APIKey("gm-test-gemini-secret"),
                                    chatModel: "gemini-mock", burst: 5, prices: Prices(inputPerMillionTokens: 3, outputPerMillionTokens: 4))
    }
}

/// A broker, the gateway running on it (in this process), and a client bus.
struct GatewayWorld: TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let gateway: AIGatewayService
    let client: Bus
    let group: ServiceGroup
    let task: Task<Void, any Error>
    let directory: URL

    /// A gateway with the local provider only, or `mock`'s providers with `routes`; its database
    /// in `directory` (a new temporary folder by default); `settings` applied last.
    static func start(
        mock: MockProvider? = nil, routes: [GatewayTask: [String]] = [:], directory: URL? = nil,
        settings: (inout AIGatewayConfiguration) -> Void = { _ in }
    ) async throws -> GatewayWorld {
        let directory = directory ?? FileManager.default.temporaryDirectory.appending(path: "ai-gateway-test-\(UUID().uuidString)")
        let (broker, endpoints) = try await startBroker()
        var configuration = AIGatewayConfiguration(
            databaseURL: directory.appending(path: "ai-gateway.sqlite"), openAI: mock?.openAI, gemini: mock?.gemini, routes: routes)
        settings(&configuration)
        let gateway = try AIGatewayService(context: ServiceContext(
            configuration: configuration, logger: testLogger("ai-gateway"), busConfiguration: busConfiguration(endpoints, source: "ai-gateway")))
        let group = ServiceGroup(services: gateway.services, logger: testLogger("ai-gateway"))
        let task = Task { try await group.run() }
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        let world = GatewayWorld(broker: broker, endpoints: endpoints, gateway: gateway, client: client, group: group, task: task, directory: directory)
        try await eventually("ai-gateway registered", timeout: Wait.startup) {
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

    /// Stops the gateway as SIGTERM would, then the client and the broker.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        await client.shutdown()
        await broker.stop()
    }
}

/// Runs `body` with a world (``GatewayWorld/start(mock:routes:directory:settings:)``), stopping it
/// whatever happens; a temporary folder of its own is removed afterwards.
func withGateway(
    mock: MockProvider? = nil, routes: [GatewayTask: [String]] = [:], directory: URL? = nil,
    settings: (inout AIGatewayConfiguration) -> Void = { _ in }, _ body: (GatewayWorld) async throws -> Void
) async throws {
    try await withWorld(GatewayWorld.start(mock: mock, routes: routes, directory: directory, settings: settings)) { world in
        defer { if directory == nil { try? FileManager.default.removeItem(at: world.directory) } }
        try await body(world)
    }
}

/// Runs `body` with a mock provider and a gateway configured against it, with fast retries.
func withMockGateway(
    routes: [GatewayTask: [String]] = [:], configure: (inout AIGatewayConfiguration) -> Void = { _ in },
    _ body: (GatewayWorld, MockProvider) async throws -> Void
) async throws {
    let mock = try await MockProvider()
    do {
        try await withGateway(mock: mock, routes: routes, settings: { configuration in
            configuration.retry = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(20), maxDelay: .milliseconds(200))
            configure(&configuration)
        }) { world in try await body(world, mock) }
    } catch {
        await mock.stop()
        throw error
    }
    await mock.stop()
}
