import BrokerCore
import Bus
import Contracts
import Crypto
import Foundation
import GRDB
import HTTPClient
import Logging
import NotifierCore
import ServiceKit
import ServiceLifecycle
import Storage
import Synchronization
import TestSupport
import Testing
import Wire

// What the notifier's tests share: a real broker, the notifier running in-process on its own
// SQLite file, stand-in producers with real outboxes (timer-ticker, scheduler, store), and the
// local receivers in Python that speak the webhook/ntfy and APNs wire formats.

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appending(path: "notifier-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The folder of this file (fixtures live beside it).
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

/// A stand-in for a producing service: its own database with an outbox, answering `_events.replay`.
final class FakeProducer: Sendable {
    let service: String
    let bus: Bus
    let database: ServiceDatabase
    let outbox: Outbox
    private let tasks: [Task<Void, any Error>]

    init(service: String, endpoints: Broker.Endpoints, directory: URL) throws {
        self.service = service
        bus = try Bus(configuration: busConfiguration(endpoints, source: service), logger: testLogger(service))
        var migrator = DatabaseMigrator()
        Outbox.registerMigrations(&migrator)
        database = try ServiceDatabase.open(at: directory.appending(path: "\(service).sqlite"), migrator: migrator, logger: testLogger(service))
        outbox = try Outbox(source: service, database: database, publisher: bus, logger: testLogger(service))
        let host = ServiceHost(bus: bus, service: service, logger: testLogger(service))
        host.serveReplay(from: outbox)
        tasks = [Task { [host] in try await host.run() }, Task { [outbox] in try await outbox.run() }]
    }

    /// Publishes `payload` (JSON text) on `topic` durably; returns the event id.
    @discardableResult
    func publish(_ topic: String, _ payload: JSONValue, user: String) throws -> String {
        let id = try database.pool.write { db -> String in
            let seq = try Outbox.append(db, Topic<JSONValue>(service: service, topic, ""), payload, user: user)
            return try String.fetchOne(db, sql: "SELECT id FROM bus_outbox WHERE seq = ?", arguments: [seq])!
        }
        outbox.notifyCommitted()
        return id
    }

    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
        await bus.shutdown()
    }
}

/// timer-ticker's events, built from its contract's types (as JSON for FakeProducer.publish).
enum Payloads {
    static func countdown(
        _ id: String, user: String, label: String = "Tea", run: Int = 1, status: TimerStatus = .completed, sound: Bool = true, vibration: Bool = true
    ) -> CountdownTimer {
        let now = Date()
        return CountdownTimer(
            id: id, userId: user, label: label, hours: 0, minutes: 5, seconds: 0, isSoundOn: sound, isVibrationOn: vibration, status: status,
            endDate: now, remainingSeconds: 0, pendingDeletionAt: nil, endAction: .keep, presetId: nil, run: run, createdAt: now, updatedAt: now)
    }

    static func json<P: Encodable>(_ value: P) -> JSONValue {
        try! JSONValue.parse(try! WireCoding.encode(value))
    }

    static func timer(_ id: String, user: String, status: TimerStatus = .stopped) -> JSONValue {
        json(countdown(id, user: user, status: status))
    }

    static func timerCompleted(_ id: String, user: String, label: String = "Tea", run: Int = 1, sound: Bool = true, vibration: Bool = true) -> JSONValue {
        let now = Date()
        let timer = countdown(id, user: user, label: label, run: run, sound: sound, vibration: vibration)
        return json(TimerCompleted(timer: timer, endDate: now, firedAt: now, latenessSeconds: 0, late: false))
    }

    static func timerDeleted(_ id: String, user: String, reason: TimerDeletionReason = .deleted) -> JSONValue {
        json(TimerDeleted(timer: countdown(id, user: user), reason: reason))
    }

    static func timing() -> ReminderTiming {
        ReminderTiming(localDate: "2026-11-22", localTime: "09:00", timeZone: "UTC", scheduledFor: Date(), late: false)
    }

    /// scheduler's `review.due`; an empty title and body ask for notifier's own wording.
    static func reviewDue(user: String, dueCount: Int, title: String = "", body: String = "") -> JSONValue {
        json(ReviewDueEvent(reminderId: "review.due:\(user):2026-11-22", userId: user, dueCount: dueCount, overdueCount: 3, newCount: 4,
                            streakDays: 5, timing: timing(), title: title, body: body))
    }

    static func habitDue(user: String, taskName: String, title: String, body: String) -> JSONValue {
        json(HabitDueEvent(reminderId: "habit.due:\(user):k1", userId: user, taskId: "k1", taskName: taskName, systemId: "s1",
                           systemName: "Reading", identity: "a Consistent Reader", cue: nil, currentStreak: 2, timing: timing(), title: title, body: body))
    }

    static func testDue(user: String, testName: String) -> JSONValue {
        json(TestDueEvent(reminderId: "test.due:\(user):p1", userId: user, testId: "p1", testName: testName, unit: "min", dueDate: "2026-11-22",
                          lastValue: nil, lastDate: nil, best: nil, timing: timing(), title: "", body: ""))
    }

    static func materialIngested(_ id: String, user: String, title: String, flashcardIds: [String]) -> JSONValue {
        let now = Date()
        let material = Material(id: id, userId: user, title: title, sourceKind: .md, status: .ready, createdAt: now, updatedAt: now)
        return json(MaterialIngested(material: material, sourceDocumentId: "d-\(id)", chunkCount: 4, flashcardIds: flashcardIds, setId: nil))
    }

    static func ingestFailed(_ id: String, user: String, title: String, reason: String = "Empty.") -> JSONValue {
        json(IngestFailed(materialId: id, userId: user, title: title, reason: reason, failedAt: Date()))
    }
}

/// The notifier in-process, with a broker, a client bus and the stand-in producers.
final class NotifierWorld: Sendable, TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let directory: URL
    let client: Bus
    let timers: FakeProducer
    let scheduler: FakeProducer
    let store: FakeProducer
    private let running: Mutex<(service: NotifierService, group: ServiceGroup, task: Task<Void, any Error>)?>

    /// A world with the notifier started (unless not `startNotifier`) with the test timing, the
    /// system clock and `settings` applied.
    static func start(
        settings: (inout NotifierConfiguration) -> Void = { _ in }, startNotifier: Bool = true
    ) async throws -> NotifierWorld {
        let (broker, endpoints) = try await startBroker()
        let directory = try temporaryDirectory()
        let world = try NotifierWorld(broker: broker, endpoints: endpoints, directory: directory)
        if startNotifier { try await world.startNotifier(settings: settings) }
        return world
    }

    private init(broker: Broker, endpoints: Broker.Endpoints, directory: URL) throws {
        self.broker = broker
        self.endpoints = endpoints
        self.directory = directory
        client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        timers = try FakeProducer(service: "timer-ticker", endpoints: endpoints, directory: directory)
        scheduler = try FakeProducer(service: "scheduler", endpoints: endpoints, directory: directory)
        store = try FakeProducer(service: "store", endpoints: endpoints, directory: directory)
        running = Mutex(nil)
    }

    var service: NotifierService { running.withLock { $0!.service } }
    var database: ServiceDatabase { service.owner.database }

    /// Starts the notifier on the world's database with the test timing and `settings` applied.
    func startNotifier(settings: (inout NotifierConfiguration) -> Void = { _ in }) async throws {
        var configuration = NotifierConfiguration.fast(databaseURL: directory.appending(path: "notifier.sqlite"))
        settings(&configuration)
        let service = try NotifierService(context: ServiceContext(
            configuration: configuration, logger: testLogger("notifier"), busConfiguration: busConfiguration(endpoints, source: "notifier")))
        let group = ServiceGroup(services: service.services, logger: testLogger("notifier"))
        let task = Task { try await group.run() }
        running.withLock { $0 = (service, group, task) }
        try await eventually("notifier serves", timeout: Wait.startup) { (try? await client.call(Reserved.health("notifier"), Empty())) != nil }
    }

    /// Stops the notifier as SIGTERM would.
    func stopNotifier() async {
        guard let current = running.withLock({ $0 }) else { return }
        await current.group.triggerGracefulShutdown()
        _ = try? await current.task.value
        running.withLock { $0 = nil }
    }

    func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String = "u1", idem: String? = nil) async throws -> Response {
        try await client.call(method, request, options: CallOptions(user: user, idempotencyKey: idem))
    }

    /// Adds a webhook channel for `user`; returns its id.
    @discardableResult
    func addWebhook(_ url: String, user: String = "u1", kinds: [NotificationKind]? = nil) async throws -> String {
        try await call(Notifier.channelsAdd, AddChannelRequest(type: .webhook, name: "hook", url: url, secret: testSecret, kinds: kinds), user: user).id
    }

    func deliveries(user: String = "u1") async throws -> [Delivery] {
        try await call(Notifier.deliveriesList, DeliveriesListRequest(limit: 200), user: user).deliveries
    }

    func inbox(user: String = "u1") async throws -> [NotificationRecord] {
        try await call(Notifier.inboxList, InboxListRequest(limit: 100), user: user).items
    }

    func stop() async {
        await stopNotifier()
        await timers.stop()
        await scheduler.stop()
        await store.stop()
        await client.shutdown()
        await broker.stop()
    }
}

/// A webhook signing secret for the tests (24 bytes, as in the Standard Webhooks vector).
let testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

extension NotifierConfiguration {
    /// Test timing: quick retries, short timeouts, a quick poll; loopback allowed, where the
    /// local receivers listen (DestinationTests run without it).
    static func fast(databaseURL: URL) -> NotifierConfiguration {
        var configuration = NotifierConfiguration(databaseURL: databaseURL)
        configuration.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
        configuration.alarmInterval = .milliseconds(400)
        configuration.retryBase = .milliseconds(50)
        configuration.retryMaximum = .milliseconds(400)
        configuration.maximumAttempts = 5
        configuration.httpTimeout = .seconds(3)
        configuration.pollInterval = .milliseconds(20)
        configuration.catchUpInterval = .milliseconds(300)
        configuration.reminderWindow = .seconds(2)
        return configuration
    }
}

/// One request a local receiver recorded.
struct Received: Decodable {
    var path: String
    var headers: [String: String]
    var body: String
    var t_ns: Int64
    var claims: JSONValue?
    var jwtHeader: JSONValue?
}

/// The webhook/ntfy receiver (webhook_receiver.py).
final class WebhookReceiver: Sendable, TestWorld {
    let server: PythonServer
    let http: HTTPClient

    init() async throws {
        server = try await PythonServer(script: fixtures.appending(path: "webhook_receiver.py"))
        http = try HTTPClient(logger: testLogger("receiver-client"))
    }

    func url(_ path: String) -> String { server.baseURL + path }

    func received(_ prefix: String = "/") async throws -> [Received] {
        let response = try await http.send(HTTPRequest(url: server.baseURL + "/_received?path=" + prefix, version: .http1))
        return try JSONDecoder().decode([Received].self, from: response.body)
    }

    func stop() async {
        await server.stop()
        await http.shutdown()
    }
}

/// The APNs receiver (apns_receiver.py) and the key the notifier signs with.
final class APNsReceiver: Sendable, TestWorld {
    let server: PythonServer
    let http: HTTPClient
    let caFile: String
    let keyPEM: String

    init(directory: URL) async throws {
        let key = P256.Signing.PrivateKey()
        keyPEM = key.pemRepresentation
        let publicFile = directory.appending(path: "apns-public.pem")
        try key.publicKey.pemRepresentation.write(to: publicFile, atomically: true, encoding: .utf8)
        caFile = directory.appending(path: "apns-ca.pem").path
        server = try await PythonServer(script: fixtures.appending(path: "apns_receiver.py"), arguments: [publicFile.path, caFile])
        http = try HTTPClient(logger: testLogger("apns-client"))
    }

    var configuration: APNsConfiguration {
        APNsConfiguration(host: "https://localhost:\(server.port)", privateKeyPEM: keyPEM, keyID: "KEY1234567", teamID: "TEAM123456",
                          topic: "com.example.quicklabeltimer", caFile: caFile)
    }

    func received() async throws -> [Received] {
        let response = try await http.send(HTTPRequest(url: "https://localhost:\(server.port)/_received", version: .http2WhenOffered, caFile: caFile))
        return try JSONDecoder().decode([Received].self, from: response.body)
    }

    func stop() async {
        await server.stop()
        await http.shutdown()
    }
}

/// A device token (64 hex digits) ending in `suffix`, which tells the APNs receiver how to answer.
func deviceToken(_ suffix: String) -> String {
    String(repeating: "a", count: 64 - suffix.count) + suffix
}

// Literals for the stand-in producers' payloads (test code only).
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByDictionaryLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(uniqueKeysWithValues: elements)) }
}
