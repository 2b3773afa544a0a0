import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// timer-ticker's settings, from the environment.
public struct TimerTickerConfiguration: Sendable {
    /// Running plus paused timers allowed per user (`TIMER_MAX_ACTIVE`, default 6).
    public var maximumActiveTimers = TimerLimits.defaultMaximumActiveTimers
    /// How long a completed `discard` timer stays before deletion (`TIMER_DISCARD_AFTER_SECONDS`, default 30).
    public var discardAfterSeconds = TimerLimits.defaultDiscardAfterSeconds
    /// Requests handled at once (`TIMER_CREDIT`, default 64).
    public var credit = 64

    /// The defaults.
    public init() {}

    /// Reads `TIMER_MAX_ACTIVE`, `TIMER_DISCARD_AFTER_SECONDS` and `TIMER_CREDIT`.
    /// - Throws: INVALID_ARGUMENT naming the variable when a value is out of range.
    public static func fromEnvironment(_ environment: Environment) throws(BusError) -> TimerTickerConfiguration {
        var configuration = TimerTickerConfiguration()
        configuration.maximumActiveTimers = try environment.int("TIMER_MAX_ACTIVE", default: configuration.maximumActiveTimers, in: 1...1_000_000)
        configuration.discardAfterSeconds = try environment.int(
            "TIMER_DISCARD_AFTER_SECONDS", default: configuration.discardAfterSeconds, in: 0...30 * 86_400)
        configuration.credit = try environment.int("TIMER_CREDIT", default: configuration.credit, in: 1...4096)
        return configuration
    }
}

/// The whole timer-ticker service over one database file: its tables and outbox, the engine
/// loaded with every running timer, the completion writer and the bus host.
///
/// ```swift
/// let server = try TimerTickerServer(bus: bus, databaseURL: url, configuration: .fromEnvironment(env), logger: logger)
/// // run server.services after the bus, in this order
/// ```
public final class TimerTickerServer: Sendable {
    /// The service's SQLite file.
    public let database: ServiceDatabase
    /// Its durable event stream.
    public let outbox: Outbox
    /// Every running timer and pending discard, in memory.
    public let engine: TimerEngine
    /// The methods on the bus.
    public let host: ServiceHost
    private let writer: CompletionWriter

    /// Opens (or creates) the database, loads every running timer into the engine (timers whose
    /// end passed while the service was down are due at once) and registers the methods.
    public init(
        bus: Bus, databaseURL: URL, configuration: TimerTickerConfiguration = TimerTickerConfiguration(),
        wallClock: any WallClock = SystemWallClock(), engineClock: any EngineClock = MonotonicClock(), logger: Logger
    ) throws {
        let started = ContinuousClock.now
        let startedMs = wallClock.now().unixMilliseconds
        database = try ServiceDatabase.open(at: databaseURL, migrator: TimerSchema.migrator(), logger: logger)
        outbox = try Outbox(source: TimerTickerContract.serviceName, database: database, publisher: bus, logger: logger)
        let queue = FiredQueue(wallClock: wallClock)
        engine = TimerEngine(clock: engineClock) { due in queue.enqueue(due) }
        let sync = EngineSync(engine: engine, wallClock: wallClock)
        let recorder = CompletionRecorder(discardAfterMs: Int64(configuration.discardAfterSeconds) * 1000, startedMs: startedMs)
        writer = CompletionWriter(database: database, outbox: outbox, engine: engine, scheduler: sync, recorder: recorder, queue: queue, logger: logger)
        host = ServiceHost(bus: bus, contract: TimerTicker, credit: configuration.credit, logger: logger)
        host.serveReplay(from: outbox)
        host.serveBackup(of: database)
        TimerHandlers(
            database: database, outbox: outbox, sync: sync, recorder: recorder, wallClock: wallClock,
            maximumActiveTimers: configuration.maximumActiveTimers
        ).register(on: host)
        PresetHandlers(database: database, wallClock: wallClock).register(on: host)
        let opened = ContinuousClock.now
        let loaded = try database.pool.read { db in try sync.load(db) }
        logger.info("timers loaded", metadata: [
            "scheduled": "\(loaded)", "open_ms": "\((opened - started).wholeMicroseconds / 1000)",
            "load_ms": "\((ContinuousClock.now - opened).wholeMicroseconds / 1000)",
        ])
    }

    /// The services to run after the bus, in start order: the outbox, the engine with its
    /// completion writer, the host. Shutdown goes in reverse: the host drains, the writer records
    /// what has fired, the outbox publishes the rest.
    public var services: [any Service] { [outbox, writer, host] }
}
