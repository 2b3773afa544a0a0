import AIGatewayCore
import BrokerCore
import Bus
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

/// The committed fixture files (Fixtures/make_fixtures.py writes them).
enum Fixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "Fixtures")

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: folder.appending(path: name))
    }
}

/// Settings for ingest in tests: generous job limits (loaded CI machines), no sweeping unless a
/// test calls the sweep itself.
func testIngestConfiguration(_ change: (inout IngestConfiguration) -> Void = { _ in }) -> IngestConfiguration {
    var configuration = IngestConfiguration()
    configuration.jobTimeout = .seconds(60)
    configuration.stuckAfter = .seconds(120)
    configuration.sweepInterval = .seconds(3600)
    change(&configuration)
    return configuration
}

/// The mock model provider of the ai-gateway tests (Tests/AIGatewayTests/mock_provider.py),
/// here only for its OpenAI Whisper transcription endpoint.
final class WhisperMock: Sendable, TestWorld {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "AIGatewayTests/mock_provider.py")

    let server: PythonServer
    private let http: HTTPClient

    init() async throws {
        server = try await PythonServer(script: Self.script)
        http = try HTTPClient(logger: testLogger("whisper-mock"))
    }

    /// What the next transcriptions answer: each step may set `transcript` (verbose_json),
    /// `delayMs`, `status`.
    func script(_ steps: [JSONValue]) async throws {
        let body = JSONValue.object(["route": .string("whisper"), "steps": .array(steps)])
        let response = try await http.send(HTTPRequest(
            method: "POST", url: server.baseURL + "/_control/script", headers: [("content-type", "application/json")], body: body.jsonData))
        #expect(response.status == 200)
    }

    /// ai-gateway with the local provider for everything but transcription, which goes to the
    /// mock, and its database at the URL given.
    var gatewayConfiguration: (URL) -> AIGatewayConfiguration {
        let openAI = RemoteProviderConfiguration(
            name: "openai", kind: .openai, baseURL: server.baseURL + "/v1", apiKey: nil, chatModel: "gpt-mock", transcriptionModel: "whisper-1")
        var routes: [GatewayTask: [String]] = [:]
        for task in GatewayTask.allCases where task != .transcribe { routes[task] = ["local"] }
        return { [routes] databaseURL in
            var configuration = AIGatewayConfiguration(databaseURL: databaseURL, openAI: openAI, routes: routes)
            configuration.retry = RetryPolicy(maxRetries: 0, baseDelay: .milliseconds(10), maxDelay: .milliseconds(10))
            return configuration
        }
    }

    /// The file name and size of each upload to the transcription endpoint, in arrival order
    /// (the mock records a request when it arrives, before it answers).
    func transcriptions() async throws -> [(fileName: String, bytes: Int)] {
        let response = try await http.send(HTTPRequest(url: server.baseURL + "/_control/requests"))
        return try (JSONValue.parse(response.body).arrayValue ?? []).compactMap { request in
            guard request["path"]?.stringValue?.hasPrefix("/v1/audio/transcriptions") == true, let file = request["form"]?["file"] else { return nil }
            return (file["filename"]?.stringValue ?? "", Int(file["bytes"]?.intValue ?? 0))
        }
    }

    func stop() async {
        await http.shutdown()
        await server.stop()
    }

    /// A Whisper verbose_json transcript with the given segments.
    static func transcript(_ segments: [(Double, Double, String)], language: String = "english") -> JSONValue {
        .object([
            "task": .string("transcribe"), "language": .string(language), "duration": .double(segments.last?.1 ?? 0),
            "text": .string(segments.map(\.2).joined(separator: " ")),
            "segments": .array(segments.enumerated().map { index, segment in
                .object(["id": .int(Int64(index)), "start": .double(segment.0), "end": .double(segment.1), "text": .string(" " + segment.2),
                         "avg_logprob": .double(-0.1), "no_speech_prob": .double(0.01)])
            }),
        ])
    }
}

/// A real broker, the real store and ai-gateway (in this process, each on its own bus), an
/// ingest worker (in this process too unless a test runs the binaries), and a client that
/// collects events.
final class IngestWorld: Sendable, TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let store: StoreService
    let ingest: IngestService?
    let client: Bus
    let events: EventCollector
    let directory: URL
    let storeClock: ManualWallClock?
    private let tasks: Mutex<[Task<Void, any Error>]>

    /// - Parameters:
    ///   - ingest: the in-process worker's settings; nil for none (tests that start binaries).
    ///   - gateway: ai-gateway's settings for a database file; nil to run without ai-gateway.
    ///   - storeClock: a manual clock for the store (so a test can make materials old), else real time.
    ///   - messageLimit: the largest bus message the ingest worker assumes (`BROKER_MAX_MESSAGE_BYTES`).
    ///   - callTimeout: the ingest worker's default call timeout (`BUS_CALL_TIMEOUT_MS`), else 30 s.
    init(ingest configuration: IngestConfiguration? = testIngestConfiguration(),
         gateway: ((URL) -> AIGatewayConfiguration)? = { AIGatewayConfiguration(databaseURL: $0) },
         storeClock: ManualWallClock? = nil, messageLimit: Int64? = nil, callTimeout: Duration? = nil) async throws {
        (broker, endpoints) = try await startBroker()
        directory = FileManager.default.temporaryDirectory.appending(path: "studybus-ingest-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.storeClock = storeClock
        var tasks: [Task<Void, any Error>] = []

        store = try StoreService(context: ServiceContext(
            configuration: StoreConfiguration(databaseURL: directory.appending(path: "store.sqlite"), clock: storeClock ?? SystemWallClock()),
            logger: testLogger("store"), busConfiguration: busConfiguration(endpoints, source: "store")))
        tasks += store.services.map { service in Task { try await service.run() } }

        if let gateway { tasks += try Self.runGateway(gateway, endpoints: endpoints, directory: directory) }

        var ingestBus = busConfiguration(endpoints, source: "ingest")
        if let messageLimit { ingestBus.maxMessageBytes = messageLimit }
        if let callTimeout { ingestBus.defaultTimeout = callTimeout }
        ingest = try configuration.map { configuration in
            try IngestService(context: ServiceContext(configuration: configuration, logger: testLogger("ingest"), busConfiguration: ingestBus))
        }
        if let ingest { tasks += ingest.services.map { service in Task { try await service.run() } } }
        self.tasks = Mutex(tasks)

        client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        events = EventCollector(try client.subscribe(["ingest.", "material."]))
        let client = client, events = events
        try await eventually("the store serves and events arrive", timeout: Wait.startup) {
            guard (try? await client.call(Reserved.health("store"), Empty(), options: CallOptions(timeout: .seconds(1)))) != nil else { return false }
            try client.publish(Ingest.progress, IngestProgress(materialId: "probe", userId: "probe", stage: .queued, percent: 0))
            try await Task.sleep(for: .milliseconds(30))
            return events.all.contains { $0.topic == Ingest.progress.name }
        }
        if configuration != nil { try await waitForService("ingest") }
        if gateway != nil { try await waitForService("ai-gateway") }
    }

    private static func runGateway(
        _ configuration: (URL) -> AIGatewayConfiguration, endpoints: Broker.Endpoints, directory: URL
    ) throws -> [Task<Void, any Error>] {
        let service = try AIGatewayService(context: ServiceContext(
            configuration: configuration(directory.appending(path: "ai-gateway/ai-gateway.sqlite")), logger: testLogger("ai-gateway"),
            busConfiguration: busConfiguration(endpoints, source: "ai-gateway")))
        // Each task keeps the service alive: its handlers hold it only weakly.
        return service.services.map { part in
            Task {
                try await part.run()
                withExtendedLifetime(service) {}
            }
        }
    }

    /// Starts ai-gateway (for a world made without it) and waits until it serves.
    func startGateway(_ configuration: (URL) -> AIGatewayConfiguration = { AIGatewayConfiguration(databaseURL: $0) }) async throws {
        let gatewayTasks = try Self.runGateway(configuration, endpoints: endpoints, directory: directory)
        tasks.withLock { $0 += gatewayTasks }
        try await waitForService("ai-gateway")
    }

    /// Waits until the broker has a worker of `service`.
    func waitForService(_ service: String, timeout: Duration = .seconds(30)) async throws {
        let client = client
        try await eventually("\(service) registered", timeout: timeout) {
            let reply = try? await client.callRaw(service: BrokerProtocol.mmiService, method: service, payload: Data())
            return reply.map { String(decoding: $0.payload, as: UTF8.self) == "200" } ?? false
        }
    }

    func stop() async {
        let tasks = self.tasks.withLock { $0 }
        for task in tasks.reversed() {
            task.cancel()
            _ = try? await task.value
        }
        await client.shutdown()
        await broker.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Calls

    /// Submits the fixture `name` as `user`.
    func submit(
        _ name: String, _ request: IngestSubmit? = nil, user: String? = "alice", timeout: Duration = .seconds(60)
    ) async throws -> IngestResult {
        try await submit(data: try Fixture.data(name), request ?? IngestSubmit(fileName: name), user: user, timeout: timeout)
    }

    func submit(data: Data?, _ request: IngestSubmit, user: String? = "alice", timeout: Duration = .seconds(60)) async throws(BusError) -> IngestResult {
        try await client.call(Ingest.submit, request, options: CallOptions(user: user, timeout: timeout, attachment: data))
    }

    /// The error submitting the fixture fails with (the test fails if it succeeds).
    func submitFailure(_ name: String, _ request: IngestSubmit? = nil, data: Data? = nil, user: String? = "alice",
                       sourceLocation: SourceLocation = #_sourceLocation) async throws -> BusError? {
        do {
            _ = try await submit(data: try data ?? Fixture.data(name), request ?? IngestSubmit(fileName: name), user: user)
            Issue.record("ingest.submit of \(name) succeeded; expected an error", sourceLocation: sourceLocation)
            return nil
        } catch let error as BusError {
            return error
        }
    }

    /// Expects submitting the fixture `name` (or `data` under that name) to fail with a message
    /// that contains `text`.
    func expectFailure(_ name: String, data: Data? = nil, containing text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let message = try await submitFailure(name, data: data, sourceLocation: sourceLocation)?.message ?? ""
        #expect(message.contains(text), "\(message)", sourceLocation: sourceLocation)
    }

    /// Calls the store as `user`.
    func store<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String = "alice") async throws(BusError) -> Response {
        try await client.call(method, request, options: CallOptions(user: user))
    }

    /// Every chunk of a material, in order.
    func chunks(_ materialId: String, user: String = "alice") async throws -> [NoteChunk] {
        try await all { cursor throws(BusError) in try await self.store(Store.listChunks, ChunkList(limit: 500, cursor: cursor, materialId: materialId), user: user) }
    }

    /// Every flashcard of a material.
    func flashcards(_ materialId: String, user: String = "alice") async throws -> [Flashcard] {
        try await all { cursor throws(BusError) in try await self.store(Store.listFlashcards, FlashcardList(limit: 500, cursor: cursor, materialId: materialId), user: user) }
    }

    /// The user's materials.
    func materials(user: String = "alice") async throws -> [Material] {
        try await all { cursor throws(BusError) in try await self.store(Store.listMaterials, MaterialList(limit: 500, cursor: cursor), user: user) }
    }

    private func all<Item>(_ page: (String?) async throws(BusError) -> RecordPage<Item>) async throws -> [Item] {
        var items: [Item] = [], cursor: String?
        repeat {
            let next = try await page(cursor)
            items += next.items
            cursor = next.nextCursor
        } while cursor != nil
        return items
    }

    /// The store's durable events (through `_events.replay`) of `topic`, decoded.
    func storeEvents<Payload>(_ topic: Topic<Payload>) async throws -> [Payload] {
        var all: [StoredEvent] = []
        while true {
            let page = try await client.call(Reserved.eventsReplay("store"), ReplayRequest(after: all.last?.header.seq ?? 0, limit: 1000))
            all += page.events
            if page.events.isEmpty || all.last!.header.seq >= page.lastSeq { break }
        }
        return try all.filter { $0.topic == topic.name }.map { try WireCoding.decode(Payload.self, from: $0.payload.jsonData) }
    }

    /// The `ingest.progress` events of a material, in arrival order.
    func progress(_ materialId: String) -> [IngestProgress] {
        events.all.filter { $0.topic == Ingest.progress.name }.compactMap { try? $0.decode(Ingest.progress) }.filter { $0.materialId == materialId }
    }

    /// Waits until the material reaches `status`.
    func waitFor(_ materialId: String, status: MaterialStatus, user: String = "alice", timeout: Duration = .seconds(60)) async throws -> Material {
        try await eventually("material \(materialId) \(status.rawValue)", timeout: timeout) {
            (try? await self.store(Store.getMaterial, RecordID(id: materialId), user: user))?.status == status
        }
        return try await store(Store.getMaterial, RecordID(id: materialId), user: user)
    }
}

/// Runs `body` with a world, stopping it whatever happens.
func withIngest(
    _ configuration: IngestConfiguration? = testIngestConfiguration(),
    gateway: ((URL) -> AIGatewayConfiguration)? = { AIGatewayConfiguration(databaseURL: $0) },
    storeClock: ManualWallClock? = nil, messageLimit: Int64? = nil, callTimeout: Duration? = nil, _ body: (IngestWorld) async throws -> Void
) async throws {
    try await withWorld(IngestWorld(ingest: configuration, gateway: gateway, storeClock: storeClock, messageLimit: messageLimit, callTimeout: callTimeout), body)
}

/// Runs `body` with a Whisper mock and a world whose ai-gateway transcribes through it.
func withWhisper(
    _ configuration: IngestConfiguration = testIngestConfiguration(), callTimeout: Duration? = nil, _ body: (IngestWorld, WhisperMock) async throws -> Void
) async throws {
    let mock = try await WhisperMock()
    do {
        try await withIngest(configuration, gateway: mock.gatewayConfiguration, callTimeout: callTimeout) { world in try await body(world, mock) }
    } catch {
        await mock.stop()
        throw error
    }
    await mock.stop()
}
