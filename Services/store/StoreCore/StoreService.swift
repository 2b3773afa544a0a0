import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// How the store is set up.
public struct StoreConfiguration: Sendable {
    /// The SQLite file.
    public var databaseURL: URL
    /// "Now", for timestamps and `progress.today`.
    public var clock: any WallClock
    /// Requests served at once.
    public var credit: Int
    /// How long published events stay replayable.
    public var outboxRetention: Duration

    public init(databaseURL: URL, clock: any WallClock = SystemWallClock(), credit: Int = 64, outboxRetention: Duration = .seconds(30 * 86_400)) {
        self.databaseURL = databaseURL
        self.clock = clock
        self.credit = credit
        self.outboxRetention = outboxRetention
    }

    /// From `DATA_DIR` (the file is `store.sqlite` in it), `STORE_CREDIT` (1…1024, default 64)
    /// and `OUTBOX_RETENTION_DAYS` (1…3650, default 30).
    public static func fromEnvironment(_ environment: Environment) throws(BusError) -> StoreConfiguration {
        let directory = try environment.dataDirectory(service: "store")
        return StoreConfiguration(
            databaseURL: directory.appending(path: "store.sqlite"),
            credit: try environment.int("STORE_CREDIT", default: 64, in: 1...1024),
            outboxRetention: .seconds(86_400 * (try environment.int("OUTBOX_RETENTION_DAYS", default: 30, in: 1...3650))))
    }
}

/// The store service: its database, its durable event stream and its methods on the bus.
///
/// ```swift
/// let store = try StoreService(bus: bus, configuration: .fromEnvironment(environment), logger: logger)
/// try await ServiceRunner.runGroup(store.services, logger: logger)
/// ```
public final class StoreService: Sendable {
    public let database: ServiceDatabase
    public let outbox: Outbox
    public let host: ServiceHost
    /// Keeps the search index up to date after writes.
    public let indexer: SearchIndexer
    let clock: any WallClock
    let logger: Logger

    /// Opens (and migrates) the database and registers every method.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened or migrated.
    public init(bus: Bus, configuration: StoreConfiguration, logger: Logger) throws(BusError) {
        database = try ServiceDatabase.open(at: configuration.databaseURL, migrator: StoreSchema.migrator, logger: logger)
        do {
            // A bigger page cache for the writer; WAL checkpoints mostly by the indexer's loop
            // after writes, rather than inside a request's commit every 4 MB.
            try database.pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 10000")
            }
        } catch {
            throw .failedPrecondition("cannot configure the database: \(error)")
        }
        outbox = try Outbox(source: StoreContract.serviceName, database: database, publisher: bus, retention: configuration.outboxRetention, logger: logger)
        host = ServiceHost(bus: bus, contract: Store, credit: configuration.credit, logger: logger)
        indexer = SearchIndexer(database: database, logger: logger)
        clock = configuration.clock
        self.logger = logger
        host.serveReplay(from: outbox)
        host.serveBackup(of: database)
        registerRecordMethods()
        registerIngestMethods()
        registerQueryMethods()
        registerSyncMethods()
    }

    /// What to run, in start order: the outbox first, so that on shutdown the host drains
    /// before the outbox publishes what was committed last.
    public var services: [any Service] { [outbox, indexer, host] }

    // MARK: Transactions

    /// Runs `body` in one write transaction for the request's user, once per `idem` key, then
    /// wakes the outbox. Nothing of it is written if it throws.
    func write<T: Codable & Sendable>(_ context: RequestContext, device: String = "", _ body: @escaping @Sendable (Changes) throws -> T) async throws -> T {
        let user = try context.requireUser()
        let now = clock.now()
        let key = context.idempotencyKey, method = context.method
        let result = try await database.pool.write { db in
            try Idempotency.once(db, user: user, key: key, method: method) {
                try body(Changes(db: db, user: user, now: now, device: device))
            }
        }
        outbox.notifyCommitted()
        indexer.wake()
        return result
    }

    /// Runs `body` on a read snapshot for the request's user.
    func read<T: Sendable>(_ context: RequestContext, _ body: @escaping @Sendable (Database, String) throws -> T) async throws -> T {
        let user = try context.requireUser()
        return try await database.pool.read { db in try body(db, user) }
    }
}
