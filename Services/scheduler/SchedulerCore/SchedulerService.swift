import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// The scheduler: its database, durable event stream, reminder loop, store consumer and the
/// bus host serving the contract's methods.
///
/// ```swift
/// let scheduler = try SchedulerService(bus: bus, database: SchedulerDatabase.open(in: directory, logger: logger), logger: logger)
/// // run scheduler.services in a ServiceGroup after the bus
/// ```
public final class SchedulerService: Sendable {
    /// The scheduler's SQLite file.
    public let database: ServiceDatabase
    /// The durable stream of reminder events.
    public let outbox: Outbox
    /// The bus host serving the contract's methods.
    public let host: ServiceHost
    /// Publishes reminders when they fall due.
    public let reminders: ReminderLoop
    /// Applies store's flashcard events.
    public let storeCards: DurableConsumer
    let writer: GroupCommit
    /// The study-day and set counts of the writer's current batch.
    let studyTally: StudyTally
    let clock: any WallClock
    let logger: Logger

    /// - Parameters:
    ///   - clock: "now" for every decision (reviews without a time, local days, reminders).
    ///   - reminderPoll: how often the reminder loop looks at the clock.
    ///   - catchUpInterval: how often store's event stream is checked for missed events.
    public init(bus: Bus, database: ServiceDatabase, clock: any WallClock = SystemWallClock(), credit: Int = 64,
                reminderPoll: Duration = .seconds(1), catchUpInterval: Duration = .seconds(5), logger: Logger) throws {
        self.database = database
        let studyTally = StudyTally()
        self.studyTally = studyTally
        writer = GroupCommit(database: database, accumulators: [studyTally])
        self.clock = clock
        self.logger = logger
        outbox = try Outbox(source: SchedulerContract.serviceName, database: database, publisher: bus, logger: logger)
        host = ServiceHost(bus: bus, contract: Scheduler, credit: credit, logger: logger)
        reminders = ReminderLoop(database: database, outbox: outbox, clock: clock, poll: reminderPoll, logger: logger)
        storeCards = StoreCards.consumer(bus: bus, database: database, clock: clock, catchUpInterval: catchUpInterval, logger: logger)
        host.serveReplay(from: outbox)
        host.serveBackup(of: database)
        let handlers = host.handlers(for: self)
        SettingsMethods.register(handlers)
        ReviewMethods.register(handlers)
        PlanMethods.register(handlers)
        HabitMethods.register(handlers)
        TestMethods.register(handlers)
    }

    /// The services to run, in start order (shutdown runs in reverse: the host drains first,
    /// the outbox publishes what is committed last).
    public var services: [any Service] { [outbox, storeCards, reminders, host] }

    /// Runs `body` for the calling user, once per idempotency key, in a savepoint of the next
    /// group-committed write transaction (``GroupCommit``).
    func write<Response: Codable & Sendable>(
        _ context: RequestContext, _ body: @escaping @Sendable (Database, String, Date) throws -> Response
    ) async throws -> Response {
        let user = try context.requireUser()
        return try await writer.write { [clock] db in
            // "Now" is read inside the transaction so that it never goes back between commits
            // (two reviews of one card without a time must not see each other in the future).
            let now = clock.now()
            return try Idempotency.once(db, user: user, key: context.idempotencyKey, method: context.method) { try body(db, user, now) }
        }
    }

    /// Like ``write(_:_:)`` for changes that affect reminders: wakes the reminder loop after commit.
    func writeAffectingReminders<Response: Codable & Sendable>(
        _ context: RequestContext, _ body: @escaping @Sendable (Database, String, Date) throws -> Response
    ) async throws -> Response {
        let response = try await write(context, body)
        reminders.invalidate()
        return response
    }

    /// Runs `body` on a read snapshot for the calling user.
    func read<Response: Sendable>(_ context: RequestContext, _ body: @escaping @Sendable (Database, String, Date) throws -> Response) async throws -> Response {
        let user = try context.requireUser()
        let now = clock.now()
        return try await database.pool.read { db in try body(db, user, now) }
    }
}
