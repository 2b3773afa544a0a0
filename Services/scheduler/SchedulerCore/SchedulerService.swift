import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// The scheduler's settings, read from the environment in one place.
public struct SchedulerConfiguration: ServiceConfiguration {
    public static let serviceName = SchedulerContract.serviceName

    /// The SQLite file (`scheduler.sqlite` in `DATA_DIR`).
    public var databaseURL: URL
    /// Requests handled at once (`SCHEDULER_CREDIT`, default 64).
    public var credit = 64
    /// "Now" for every decision (reviews without a time, local days, reminders); a seam for tests.
    public var clock: any WallClock = SystemWallClock()
    /// How often the reminder loop looks at the clock; a seam for tests.
    public var reminderPoll: Duration = .seconds(1)
    /// How often store's event stream is checked for missed events; a seam for tests.
    public var catchUpInterval: Duration = .seconds(5)
    /// How far after the scheduler's clock a `sync.push` change may be stamped: devices' clocks
    /// differ a little, but a change stamped far ahead would win every later edit
    /// (`SCHEDULER_SYNC_FUTURE_SKEW_SECONDS`, 0…86400, default 300).
    public var syncFutureSkew: Duration = .seconds(300)
    /// The writer's page cache and memory map (`SCHEDULER_SQLITE_CACHE_MB`, default 64;
    /// `SCHEDULER_SQLITE_MMAP_MB`, default 256).
    public var writerMemory = SchedulerDatabase.defaultWriterMemory

    /// The defaults, with the database at `databaseURL`.
    public init(databaseURL: URL) {
        self.databaseURL = databaseURL
    }

    /// Reads `DATA_DIR`, `SCHEDULER_CREDIT`, `SCHEDULER_SYNC_FUTURE_SKEW_SECONDS`,
    /// `SCHEDULER_SQLITE_CACHE_MB` (1…65536) and `SCHEDULER_SQLITE_MMAP_MB` (0…65536).
    /// - Throws: `INVALID_ARGUMENT` naming the variable when a value is out of range.
    public init(environment: Environment) throws(BusError) {
        self.init(databaseURL: try environment.dataDirectory(service: Self.serviceName).appending(path: "scheduler.sqlite"))
        credit = try environment.int("SCHEDULER_CREDIT", default: credit, in: 1...1024)
        syncFutureSkew = .seconds(try environment.int("SCHEDULER_SYNC_FUTURE_SKEW_SECONDS", default: 300, in: 0...86_400))
        writerMemory = .init(
            cacheMebibytes: try environment.int("SCHEDULER_SQLITE_CACHE_MB", default: writerMemory.cacheMebibytes, in: 1...65_536),
            mappedMebibytes: try environment.int("SCHEDULER_SQLITE_MMAP_MB", default: writerMemory.mappedMebibytes, in: 0...65_536))
    }
}

/// The scheduler over one database file: its tables and outbox, the store consumer, the
/// reminder loop and the methods on the bus.
public final class SchedulerService: StudyBusService {
    /// The bus connection, database, outbox and host.
    public let owner: DataOwner
    /// Publishes reminders when they fall due.
    public let reminders: ReminderLoop
    /// Applies store's flashcard events.
    let storeCards: DurableConsumer
    let writer: GroupCommit
    /// The study-day and set counts of the writer's current batch.
    let studyTally: StudyTally
    let clock: any WallClock
    let syncFutureSkew: Duration

    /// Opens (or creates) the database and registers the methods.
    public init(context: ServiceContext<SchedulerConfiguration>) throws {
        let configuration = context.configuration, logger = context.logger
        owner = try DataOwner(
            context: context, contract: Scheduler, database: SchedulerDatabase.settings(at: configuration.databaseURL),
            credit: configuration.credit, events: .init())
        let database = owner.database
        try SchedulerDatabase.prepare(database, writerMemory: configuration.writerMemory, logger: logger)
        clock = configuration.clock
        syncFutureSkew = configuration.syncFutureSkew
        studyTally = StudyTally()
        writer = GroupCommit(database: database, accumulators: [studyTally])
        reminders = ReminderLoop(database: database, outbox: owner.outbox!, clock: clock, poll: configuration.reminderPoll, logger: logger)
        storeCards = StoreCards.consumer(
            bus: owner.bus, database: database, clock: clock, catchUpInterval: configuration.catchUpInterval, logger: logger)

        let handlers = owner.host.handlers(for: self)
        SettingsMethods.register(handlers)
        ReviewMethods.register(handlers)
        PlanMethods.register(handlers)
        HabitMethods.register(handlers)
        TestMethods.register(handlers)
        SyncMethods.register(handlers)
    }

    /// The store consumer and the reminder loop run between the outbox and the host: at
    /// shutdown the host drains, they stop, and the outbox publishes what was committed last.
    public var services: [any Service] { owner.services(running: [storeCards, reminders]) }

    /// Runs `body` for the calling user, once per idempotency key (bound to `request`, what the
    /// caller sent), in a savepoint of the next group-committed write transaction (``GroupCommit``).
    func write<Response: Codable & Sendable>(
        _ context: RequestContext, _ request: some Encodable, _ body: @escaping @Sendable (Database, String, Date) throws -> Response
    ) async throws -> Response {
        let user = try context.requireUser()
        let key = try Idempotency.Key(context.idempotencyKey, method: context.method, request: request)
        return try await writer.write { [clock] db in
            // "Now" is read inside the transaction so that it never goes back between commits
            // (two reviews of one card without a time must not see each other in the future).
            let now = clock.now()
            return try Idempotency.once(db, user: user, key: key, now: now) { try body(db, user, now) }
        }
    }

    /// Like ``write(_:_:_:)`` for changes that affect reminders: wakes the reminder loop after commit.
    func writeAffectingReminders<Response: Codable & Sendable>(
        _ context: RequestContext, _ request: some Encodable, _ body: @escaping @Sendable (Database, String, Date) throws -> Response
    ) async throws -> Response {
        let response = try await write(context, request, body)
        reminders.invalidate()
        return response
    }

    /// Like ``write(_:_:_:)`` for changes of habit data, made through ``HabitChanges`` as
    /// `device` ("" for the API): after commit, wakes the outbox (their `habit.*` events) and the
    /// reminder loop (tasks' reminder times, tests' due dates).
    func writeHabits<Response: Codable & Sendable>(
        _ context: RequestContext, _ request: some Encodable, device: String = "", _ body: @escaping @Sendable (HabitChanges) throws -> Response
    ) async throws -> Response {
        let response = try await writeAffectingReminders(context, request) { db, user, now in
            try body(HabitChanges(db: db, user: user, now: now, device: device))
        }
        owner.outbox?.notifyCommitted()
        return response
    }

    /// Runs `body` on a read snapshot for the calling user.
    func read<Response: Sendable>(_ context: RequestContext, _ body: @escaping @Sendable (Database, String, Date) throws -> Response) async throws -> Response {
        let user = try context.requireUser()
        let now = clock.now()
        return try await owner.database.pool.read { db in try body(db, user, now) }
    }
}
