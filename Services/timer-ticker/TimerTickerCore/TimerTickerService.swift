import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// timer-ticker's settings, read from the environment in one place.
public struct TimerTickerConfiguration: ServiceConfiguration {
    public static let serviceName = TimerTickerContract.serviceName

    /// The SQLite file (`timer-ticker.sqlite` in `DATA_DIR`).
    public var databaseURL: URL
    /// Running plus paused timers allowed per user (`TIMER_MAX_ACTIVE`, default 6).
    public var maximumActiveTimers = TimerLimits.defaultMaximumActiveTimers
    /// How long a completed `discard` timer stays before deletion (`TIMER_DISCARD_AFTER_SECONDS`, default 30).
    public var discardAfterSeconds = TimerLimits.defaultDiscardAfterSeconds
    /// Requests handled at once (`TIMER_CREDIT`, default 64).
    public var credit = 64
    /// "Now" for timestamps and ends; a seam for tests.
    public var wallClock: any WallClock = SystemWallClock()
    /// The engine's clock; a seam for tests.
    public var engineClock: any EngineClock = MonotonicClock()

    /// The defaults, with the database at `databaseURL`.
    public init(databaseURL: URL) {
        self.databaseURL = databaseURL
    }

    /// Reads `DATA_DIR`, `TIMER_MAX_ACTIVE`, `TIMER_DISCARD_AFTER_SECONDS` and `TIMER_CREDIT`.
    /// - Throws: `INVALID_ARGUMENT` naming the variable when a value is out of range.
    public init(environment: Environment) throws(BusError) {
        self.init(databaseURL: try environment.dataDirectory(service: Self.serviceName).appending(path: "timer-ticker.sqlite"))
        maximumActiveTimers = try environment.int("TIMER_MAX_ACTIVE", default: maximumActiveTimers, in: 1...1_000_000)
        discardAfterSeconds = try environment.int("TIMER_DISCARD_AFTER_SECONDS", default: discardAfterSeconds, in: 0...30 * 86_400)
        credit = try environment.int("TIMER_CREDIT", default: credit, in: 1...4096)
    }
}

/// The timer-ticker service over one database file: its tables and outbox, the engine loaded
/// with every running timer, the completion writer and the methods on the bus.
public final class TimerTickerService: StudyBusService {
    /// The bus connection, database, outbox and host.
    public let owner: DataOwner
    /// Every running timer and pending discard, in memory.
    public let engine: TimerEngine
    let timers: TimerMethods
    let presets: PresetMethods
    private let writer: CompletionWriter

    /// Opens (or creates) the database, loads every running timer into the engine (timers whose
    /// end passed while the service was down are due at once) and registers the methods.
    public init(context: ServiceContext<TimerTickerConfiguration>) throws {
        let configuration = context.configuration, logger = context.logger
        let started = ContinuousClock.now
        let startedMs = configuration.wallClock.now().unixMilliseconds
        owner = try DataOwner(
            context: context, contract: TimerTicker, database: .init(url: configuration.databaseURL, migrator: TimerSchema.migrator()),
            credit: configuration.credit, events: .init())
        let database = owner.database, outbox = owner.outbox!
        TimerMetrics.watch(database, monitoring: context.monitoring)
        let queue = FiredQueue(wallClock: configuration.wallClock)
        engine = TimerEngine(clock: configuration.engineClock) { due in queue.enqueue(due) }
        let sync = EngineSync(engine: engine, wallClock: configuration.wallClock)
        let recorder = CompletionRecorder(discardAfterMs: Int64(configuration.discardAfterSeconds) * 1000, startedMs: startedMs)
        writer = CompletionWriter(database: database, outbox: outbox, engine: engine, scheduler: sync, recorder: recorder, queue: queue, logger: logger)
        timers = TimerMethods(
            database: database, outbox: outbox, sync: sync, recorder: recorder, wallClock: configuration.wallClock,
            maximumActiveTimers: configuration.maximumActiveTimers)
        presets = PresetMethods(database: database, wallClock: configuration.wallClock)

        let handlers = owner.host.handlers(for: self)
        TimerMethods.register(handlers)
        PresetMethods.register(handlers)

        let opened = ContinuousClock.now
        let loaded = try database.pool.read { db in try sync.load(db) }
        logger.info("timers loaded", metadata: [
            "scheduled": "\(loaded)", "open_ms": "\((opened - started).wholeMicroseconds / 1000)",
            "load_ms": "\((ContinuousClock.now - opened).wholeMicroseconds / 1000)",
        ])
    }

    /// The engine with its completion writer runs between the outbox and the host: at shutdown
    /// the host drains, the writer records what has fired, the outbox publishes the rest.
    public var services: [any Service] { owner.services(running: [writer]) }
}
