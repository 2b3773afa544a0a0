import BrokerCore
import Bus
import ConnectorsCore
import Contracts
import Foundation
import HTTPClient
import IngestCore
import ServiceKit
import ServiceLifecycle
import StoreCore
import Synchronization
import TestSupport
import Testing
import Wire

/// The fake Google (fake_google.py): Google's token endpoint and the Calendar, Gmail and Drive
/// REST APIs on a local port, driven through `/_control`.
final class FakeGoogle: Sendable {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "fake_google.py")
    static let clientID = "test-client.apps.googleusercontent.com"

    let server: PythonServer
    private let http: HTTPClient

    init() async throws {
        server = try await PythonServer(script: Self.script)
        http = try HTTPClient(logger: testLogger("fake-google"))
    }

    var baseURL: String { server.baseURL }

    /// Sends a control command (`action` and its fields).
    func control(_ action: String, _ fields: [String: JSONValue] = [:]) async throws {
        var object = fields
        object["action"] = .string(action)
        let response = try await http.send(HTTPRequest(
            method: "POST", url: baseURL + "/_control", headers: [("content-type", "application/json")], body: JSONValue.object(object).jsonData))
        #expect(response.status == 200, "control \(action)")
    }

    /// Every request the fake saw: (path, query, time).
    func log() async throws -> [(path: String, query: [String: [String]], time: Double)] {
        let response = try await http.send(HTTPRequest(url: baseURL + "/_log"))
        let json = try JSONValue.parse(response.body)
        return (json["log"]?.arrayValue ?? []).map { entry in
            let query = (entry["query"]?.objectValue ?? [:]).mapValues { $0.arrayValue?.compactMap(\.stringValue) ?? [] }
            return (entry["path"]?.stringValue ?? "", query, entry["t"]?.doubleValue ?? 0)
        }
    }

    func revoked() async throws -> [String] {
        let response = try await http.send(HTTPRequest(url: baseURL + "/_log"))
        return (try JSONValue.parse(response.body)["revoked"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    func stop() async {
        await http.shutdown()
        await server.stop()
    }
}

/// A real broker, the real store and an ingest worker (each on its own bus, in this process),
/// the connectors service pointed at the fake Google, and a client bus.
final class ConnectorsWorld: Sendable, TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let google: FakeGoogle
    let store: StoreService
    let ingest: IngestService
    let client: Bus
    let directory: URL
    let clock: ManualWallClock
    let connectors: Mutex<ConnectorsService?>
    private let tasks: Mutex<[Task<Void, any Error>]>
    private let connectorTasks = Mutex<[Task<Void, any Error>]>([])
    let settings: @Sendable (inout ConnectorsConfiguration) -> Void

    static let key = [UInt8](repeating: 7, count: 32)

    var databaseURL: URL { directory.appending(path: "connectors.sqlite") }

    init(_ settings: @escaping @Sendable (inout ConnectorsConfiguration) -> Void = { _ in }) async throws {
        self.settings = settings
        (broker, endpoints) = try await startBroker()
        google = try await FakeGoogle()
        directory = FileManager.default.temporaryDirectory.appending(path: "studybus-connectors-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        clock = ManualWallClock(Date())
        var tasks: [Task<Void, any Error>] = []
        store = try StoreService(context: ServiceContext(
            configuration: StoreConfiguration(databaseURL: directory.appending(path: "store.sqlite")),
            logger: testLogger("store"), busConfiguration: busConfiguration(endpoints, source: "store")))
        tasks += store.services.map { service in Task { try await service.run() } }
        var ingestConfiguration = IngestConfiguration()
        ingestConfiguration.sweepInterval = .seconds(3600)
        ingest = try IngestService(context: ServiceContext(
            configuration: ingestConfiguration, logger: testLogger("ingest"), busConfiguration: busConfiguration(endpoints, source: "ingest")))
        tasks += ingest.services.map { service in Task { try await service.run() } }
        self.tasks = Mutex(tasks)
        client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        connectors = Mutex(nil)
        try await startConnectors()
        let client = client
        try await eventually("store and ingest serve", timeout: Wait.startup) {
            let store = (try? await client.call(Reserved.health("store"), Empty(), options: CallOptions(timeout: .seconds(1)))) != nil
            let ingest = (try? await client.call(Reserved.health("ingest"), Empty(), options: CallOptions(timeout: .seconds(1)))) != nil
            return store && ingest
        }
    }

    /// Starts (or starts again, on the same database) the connectors service.
    func startConnectors() async throws {
        var configuration = ConnectorsConfiguration(databaseURL: databaseURL, sealingKey: Self.key)
        configuration.clientID = FakeGoogle.clientID
        configuration.clientSecret = "test-secret"
        configuration.tokenURL = google.baseURL + "/token"
        configuration.revokeURL = google.baseURL + "/revoke"
        configuration.apiURL = google.baseURL
        configuration.wallClock = clock
        configuration.syncInterval = .seconds(3600)
        configuration.retry.baseDelay = .milliseconds(20)
        configuration.retry.maxRetryAfter = .seconds(5)
        settings(&configuration)
        let service = try ConnectorsService(context: ServiceContext(
            configuration: configuration, logger: testLogger("connectors"), busConfiguration: busConfiguration(endpoints, source: "connectors")))
        connectors.withLock { $0 = service }
        connectorTasks.withLock { $0 = service.services.map { item in Task { try await item.run() } } }
        let client = client
        try await eventually("connectors serves", timeout: Wait.startup) {
            (try? await client.call(Reserved.health("connectors"), Empty(), options: CallOptions(timeout: .seconds(1)))) != nil
        }
    }

    func stopConnectors() async {
        let tasks = connectorTasks.withLock { tasks in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in tasks.reversed() {
            task.cancel()
            _ = try? await task.value
        }
        await connectors.withLock { $0 }?.owner.bus.shutdown()
    }

    var service: ConnectorsService { connectors.withLock { $0! } }

    /// Calls a method as `user`.
    func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String = "u1") async throws(BusError) -> Response {
        try await client.call(method, request, options: CallOptions(user: user, timeout: .seconds(60)))
    }

    /// The error a call fails with (nil when it succeeds).
    func failure<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String = "u1") async -> BusError? {
        do {
            _ = try await call(method, request, user: user)
            return nil
        } catch {
            return error
        }
    }

    /// Links a Google account: the fake issues `code` with `refresh`, then `connectors.link`.
    func link(user: String = "u1", code: String = "4/code-1", refresh: String = "1//refresh-secret-AAAA", sub: String = "g-1") async throws -> ConnectorAccount {
        try await google.control("code", ["code": .string(code), "refresh": .string(refresh), "sub": .string(sub), "email": .string("student@example.org")])
        return try await call(Connectors.link, ConnectorLinkRequest(code: code, redirectUri: "com.example.mirrorbuddy:/oauth2redirect"), user: user)
    }

    /// Adds (or changes) an event in the fake calendar.
    func event(_ id: String, summary: String, start: String, end: String? = nil, status: String = "confirmed", calendar: String = "primary") async throws {
        var event: [String: JSONValue] = ["id": .string(id), "summary": .string(summary), "status": .string(status), "start": .object(["dateTime": .string(start)])]
        if let end { event["end"] = .object(["dateTime": .string(end)]) }
        try await google.control("event", ["calendar": .string(calendar), "event": .object(event)])
    }

    /// The user's tasks and sessions in the store.
    func tasks(user: String = "u1") async throws -> [StudyTask] {
        try await client.call(Store.listTasks, StudyTaskList(limit: 500), options: CallOptions(user: user)).items
    }

    func sessions(user: String = "u1") async throws -> [StudySession] {
        try await client.call(Store.listSessions, StudySessionList(limit: 500), options: CallOptions(user: user)).items
    }

    func materials(user: String = "u1") async throws -> [Material] {
        try await client.call(Store.listMaterials, MaterialList(limit: 200), options: CallOptions(user: user)).items
    }

    func stop() async {
        await stopConnectors()
        let tasks = self.tasks.withLock { $0 }
        for task in tasks.reversed() {
            task.cancel()
            _ = try? await task.value
        }
        await client.shutdown()
        await store.owner.bus.shutdown()
        await google.stop()
        await broker.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body` in a fresh world and stops it after, whatever happens.
    static func with(_ settings: @escaping @Sendable (inout ConnectorsConfiguration) -> Void = { _ in }, _ body: (ConnectorsWorld) async throws -> Void) async throws {
        try await running(try await ConnectorsWorld(settings), stop: { await $0.stop() }, body)
    }
}
