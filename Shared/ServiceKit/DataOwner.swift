import Bus
import Foundation
import GRDB
import Logging
import ServiceLifecycle
import Storage
import Threads
import Wire

/// What every service that owns data is made of, built in one place: its bus connection, its
/// SQLite database, its durable event stream (the outbox, when it publishes events) and its
/// service host, which answers `_backup` and, with an outbox, `_events.replay`.
///
/// ```swift
/// owner = try DataOwner(context: context, contract: TimerTicker, database: configuration.database, events: .init())
/// // register handlers on owner.host, then:
/// public var services: [any Service] { owner.services(running: [engine]) }
/// ```
public final class DataOwner: Sendable {
    /// Where and how the database is opened.
    public struct DatabaseSettings: Sendable {
        /// The SQLite file.
        public var url: URL
        /// Every migration, the outbox's and the consumer's included when used.
        public var migrator: DatabaseMigrator
        /// `full` by default: a data owner publishes events from its commits, and an event (or a
        /// reply) must never stand for a transaction a power loss can take back
        /// (docs/wire-protocol.md, "Events").
        public var durability: ServiceDatabase.Durability

        public init(url: URL, migrator: DatabaseMigrator, durability: ServiceDatabase.Durability = .full) {
            self.url = url
            self.migrator = migrator
            self.durability = durability
        }
    }

    /// How the durable event stream behaves.
    public struct EventSettings: Sendable {
        /// How long published events stay replayable (`OUTBOX_RETENTION_DAYS`).
        public var retention: Duration

        public init(retention: Duration = .seconds(30 * 86_400)) {
            self.retention = retention
        }
    }

    public let bus: Bus
    public let database: ServiceDatabase
    /// The durable event stream; nil for a service that publishes no durable events.
    public let outbox: Outbox?
    public let host: ServiceHost
    private let logger: Logger

    /// Connects to the bus, opens (and migrates) the database and registers the reserved methods.
    /// - Parameters:
    ///   - credit: requests the host serves at once.
    ///   - events: the outbox's settings; nil when the service publishes no durable events.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened or migrated.
    public init<Configuration, Contract: ServiceContract>(
        context: ServiceContext<Configuration>, contract: Contract, database settings: DatabaseSettings, credit: Int,
        events: EventSettings? = nil
    ) throws(BusError) {
        let bus = try context.connectBus()
        let database = try ServiceDatabase.open(at: settings.url, migrator: settings.migrator, durability: settings.durability, logger: context.logger)
        if let events {
            outbox = try Outbox(source: Contract.serviceName, database: database, publisher: bus, retention: events.retention, logger: context.logger)
        } else {
            outbox = nil
        }
        self.bus = bus
        self.database = database
        host = ServiceHost(bus: bus, contract: contract, credit: credit, logger: context.logger, metrics: context.monitoring.factory)
        DataOwnerMonitoring.watch(database: database, outbox: outbox, service: Contract.serviceName, monitoring: context.monitoring)
        if let outbox { host.serveReplay(from: outbox) }
        host.serveBackup(of: database, policy: context.backup)
        logger = context.logger
    }

    /// The service's lifecycle, in start order: the bus, the database's closing, the outbox,
    /// then `middle`, then the host. They stop in reverse: the host drains first, the service's
    /// own loops stop, the outbox publishes what was committed last, the database closes, and
    /// the bus goes last.
    public func services(running middle: [any Service]) -> [any Service] {
        var services: [any Service] = [bus, DatabaseCloser(database: database, logger: logger)]
        if let outbox { services.append(outbox) }
        return services + middle + [host]
    }
}

/// Closes a database at shutdown, after every service that uses it stopped.
struct DatabaseCloser: Service {
    let database: ServiceDatabase
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        do {
            try await offThePool(qos: .utility) { () throws(any Error) in try database.close() }
        } catch {
            logger.warning("cannot close the database", metadata: ["error": "\(error)"])
        }
    }
}
