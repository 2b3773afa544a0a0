import BrokerCore
import Bus
import Contracts
import Foundation
import SchedulerCore
import ServiceKit
import ServiceLifecycle
import Storage
import TestSupport
import Testing
import Wire

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appending(path: "scheduler-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Parses an ISO 8601 instant in a test.
func instant(_ text: String) -> Date {
    guard let date = ISO8601.parse(text) else { fatalError("bad test instant \(text)") }
    return date
}

/// The scheduler's database opened as the service opens it, without the service (in a new
/// directory unless given); close it when done.
func openDatabase(in directory: URL? = nil) throws -> ServiceDatabase {
    let settings = SchedulerDatabase.settings(at: try (directory ?? temporaryDirectory()).appending(path: "scheduler.sqlite"))
    let database = try ServiceDatabase.open(at: settings.url, migrator: settings.migrator, durability: settings.durability, logger: testLogger("scheduler"))
    try SchedulerDatabase.prepare(database, logger: testLogger("scheduler"))
    return database
}

extension BusError {
    /// Whether this is the `INVALID_ARGUMENT` of a field check: "field '`field`' must …", with
    /// the field in the details.
    func isInvalid(_ field: String) -> Bool {
        code == .invalidArgument && message.hasPrefix("field '\(field)' must ") && details == .object(["field": .string(field)])
    }
}

/// A real broker, the scheduler on its own bus with a manual clock and its own SQLite file,
/// and a client bus; `stopScheduler()` and `startScheduler()` restart it on the same file.
final class SchedulerWorld: @unchecked Sendable, TestWorld {
    // @unchecked: the mutable fields are only touched by the test that owns the world, in order.
    let broker: Broker
    let endpoints: Broker.Endpoints
    let client: Bus
    let clock: ManualWallClock
    let directory: URL
    private(set) var scheduler: SchedulerService
    private var tasks: [Task<Void, any Error>] = []

    /// A new world; its scheduler opens `directory`'s database (a new one by default).
    static func start(at start: Date = instant("2026-11-22T10:00:00Z"), directory: URL? = nil) async throws -> SchedulerWorld {
        let (broker, endpoints) = try await startBroker()
        let directory = try directory ?? temporaryDirectory()
        let clock = ManualWallClock(start)
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        let scheduler = try Self.makeScheduler(endpoints: endpoints, directory: directory, clock: clock)
        let world = SchedulerWorld(broker: broker, endpoints: endpoints, client: client, clock: clock, directory: directory, scheduler: scheduler)
        try await world.run()
        return world
    }

    private init(broker: Broker, endpoints: Broker.Endpoints, client: Bus, clock: ManualWallClock, directory: URL, scheduler: SchedulerService) {
        self.broker = broker
        self.endpoints = endpoints
        self.client = client
        self.clock = clock
        self.directory = directory
        self.scheduler = scheduler
    }

    private static func makeScheduler(endpoints: Broker.Endpoints, directory: URL, clock: ManualWallClock) throws -> SchedulerService {
        var configuration = SchedulerConfiguration(databaseURL: directory.appending(path: "scheduler.sqlite"))
        configuration.clock = clock
        configuration.reminderPoll = .milliseconds(20)
        configuration.catchUpInterval = .milliseconds(200)
        return try SchedulerService(context: ServiceContext(
            configuration: configuration, logger: testLogger("scheduler"),
            busConfiguration: busConfiguration(endpoints, source: "scheduler")))
    }

    private func run() async throws {
        tasks = scheduler.services.map { service in Task { try await service.run() } }
        try await eventually("scheduler serves", timeout: Wait.startup) {
            (try? await client.call(Reserved.health("scheduler"), Empty()))?.status == .serving
        }
    }

    /// Stops the scheduler's services in reverse order, as a graceful shutdown would: the
    /// database closes and the bus goes last. Leaves its database file.
    func stopScheduler() async {
        for task in tasks.reversed() {
            task.cancel()
            _ = try? await task.value
        }
        tasks = []
    }

    /// Starts a new scheduler process-equivalent on the same database file.
    func startScheduler() async throws {
        scheduler = try Self.makeScheduler(endpoints: endpoints, directory: directory, clock: clock)
        try await run()
    }

    /// Calls a scheduler method as `user`.
    func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String = "u1", idem: String? = nil) async throws -> Response {
        try await client.call(method, request, options: CallOptions(user: user, idempotencyKey: idem))
    }

    /// Calls and expects a failure; returns it.
    func failure<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String? = "u1") async -> BusError? {
        do {
            _ = try await client.call(method, request, options: CallOptions(user: user))
            return nil
        } catch {
            return error
        }
    }

    /// Sets the user's time zone (and other settings).
    func settings(_ update: SettingsUpdate, user: String = "u1") async throws {
        _ = try await call(Scheduler.updateSettings, update, user: user)
    }

    func stop() async {
        await stopScheduler()
        await client.shutdown()
        await broker.stop()
    }
}
