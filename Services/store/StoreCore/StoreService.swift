import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// The store's settings, read from the environment in one place.
public struct StoreConfiguration: ServiceConfiguration {
    public static let serviceName = StoreContract.serviceName

    /// The SQLite file (`store.sqlite` in `DATA_DIR`).
    public var databaseURL: URL
    /// "Now", for timestamps and `progress.today`; a seam for tests.
    public var clock: any WallClock
    /// Requests served at once (`STORE_CREDIT`, default 64).
    public var credit: Int
    /// How long published events stay replayable (`OUTBOX_RETENTION_DAYS`, default 30).
    public var outboxRetention: Duration
    /// How far after the store's clock a `sync.push` change may be stamped: devices' clocks
    /// differ a little, but a change stamped far ahead would win every later edit
    /// (`STORE_SYNC_FUTURE_SKEW_SECONDS`, default 300).
    public var syncFutureSkew: Duration
    /// The most pages one PDF export may have: `export` answers RESOURCE_EXHAUSTED past it
    /// (`STORE_PDF_MAX_PAGES`, default 500: 2000 flashcards).
    public var pdfMaximumPages: Int
    /// Bounds of Anki package import and export (`STORE_APKG_*`).
    public var apkgLimits: ApkgLimits
    /// The writer's page cache (`STORE_SQLITE_CACHE_MB`, default 64).
    public var writerMemory: ServiceDatabase.WriterMemory

    public init(
        databaseURL: URL, clock: any WallClock = SystemWallClock(), credit: Int = 64, outboxRetention: Duration = .seconds(30 * 86_400),
        syncFutureSkew: Duration = .seconds(300), pdfMaximumPages: Int = 500, apkgLimits: ApkgLimits = ApkgLimits(),
        writerMemory: ServiceDatabase.WriterMemory = .init(cacheMebibytes: 64)
    ) {
        self.databaseURL = databaseURL
        self.clock = clock
        self.credit = credit
        self.outboxRetention = outboxRetention
        self.syncFutureSkew = syncFutureSkew
        self.pdfMaximumPages = pdfMaximumPages
        self.apkgLimits = apkgLimits
        self.writerMemory = writerMemory
    }

    /// Reads `DATA_DIR`, `STORE_CREDIT` (1…1024), `OUTBOX_RETENTION_DAYS` (1…3650),
    /// `STORE_SYNC_FUTURE_SKEW_SECONDS` (0…86400), `STORE_PDF_MAX_PAGES` (2…10000),
    /// `STORE_SQLITE_CACHE_MB` (1…65536) and the `STORE_APKG_*` limits (``ApkgLimits``).
    /// - Throws: `INVALID_ARGUMENT` naming the variable when a value is out of range.
    public init(environment: Environment) throws(BusError) {
        self.init(
            databaseURL: try environment.dataDirectory(service: Self.serviceName).appending(path: "store.sqlite"),
            credit: try environment.int("STORE_CREDIT", default: 64, in: 1...1024),
            outboxRetention: .seconds(86_400 * (try environment.int("OUTBOX_RETENTION_DAYS", default: 30, in: 1...3650))),
            syncFutureSkew: .seconds(try environment.int("STORE_SYNC_FUTURE_SKEW_SECONDS", default: 300, in: 0...86_400)),
            pdfMaximumPages: try environment.int("STORE_PDF_MAX_PAGES", default: 500, in: 2...10_000),
            apkgLimits: try ApkgLimits(environment: environment),
            writerMemory: .init(cacheMebibytes: try environment.int("STORE_SQLITE_CACHE_MB", default: 64, in: 1...65_536)))
    }
}

/// What an Anki package may hold. An import is refused whole (`INVALID_ARGUMENT`) beyond any of
/// them, before anything is written; an export beyond `exportCards` is `RESOURCE_EXHAUSTED`.
public struct ApkgLimits: Sendable {
    /// The package's bytes (`STORE_APKG_MAX_MB`, default 50, 1…60: a request frame is at most 64 MiB).
    public var packageBytes: Int
    /// Entries in the zip, media files included (`STORE_APKG_MAX_ENTRIES`, default 10000).
    public var entries: Int
    /// The collection's bytes once inflated (`STORE_APKG_MAX_INFLATED_MB`, default 256).
    public var inflatedBytes: Int
    /// Notes, hence flashcards (`STORE_APKG_MAX_NOTES`, default 20000).
    public var notes: Int
    /// Review log rows (`STORE_APKG_MAX_REVIEWS`, default 200000).
    public var reviews: Int
    /// Cards per `export` as apkg (`STORE_APKG_EXPORT_MAX_CARDS`, default 20000).
    public var exportCards: Int

    public init(packageBytes: Int = 50 << 20, entries: Int = 10_000, inflatedBytes: Int = 256 << 20, notes: Int = 20_000,
                reviews: Int = 200_000, exportCards: Int = 20_000) {
        self.packageBytes = packageBytes
        self.entries = entries
        self.inflatedBytes = inflatedBytes
        self.notes = notes
        self.reviews = reviews
        self.exportCards = exportCards
    }

    init(environment: Environment) throws(BusError) {
        self.init(
            packageBytes: try environment.int("STORE_APKG_MAX_MB", default: 50, in: 1...60) << 20,
            entries: try environment.int("STORE_APKG_MAX_ENTRIES", default: 10_000, in: 1...1_000_000),
            inflatedBytes: try environment.int("STORE_APKG_MAX_INFLATED_MB", default: 256, in: 1...4096) << 20,
            notes: try environment.int("STORE_APKG_MAX_NOTES", default: 20_000, in: 1...1_000_000),
            reviews: try environment.int("STORE_APKG_MAX_REVIEWS", default: 200_000, in: 0...10_000_000),
            exportCards: try environment.int("STORE_APKG_EXPORT_MAX_CARDS", default: 20_000, in: 1...1_000_000))
    }
}

/// The store service: its database, its durable event stream, the search indexer and its
/// methods on the bus.
public final class StoreService: StudyBusService {
    /// The bus connection, database, outbox and host.
    public let owner: DataOwner
    /// Keeps the search index up to date after writes.
    let indexer: SearchIndexer
    let database: ServiceDatabase
    let outbox: Outbox
    let clock: any WallClock
    let syncFutureSkew: Duration
    let pdfMaximumPages: Int
    let apkgLimits: ApkgLimits

    /// Opens (and migrates) the database and registers every method.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened or migrated.
    public init(context: ServiceContext<StoreConfiguration>) throws {
        let configuration = context.configuration
        owner = try DataOwner(
            context: context, contract: Store, database: .init(url: configuration.databaseURL, migrator: StoreSchema.migrator),
            credit: configuration.credit, events: .init(retention: configuration.outboxRetention))
        database = owner.database
        outbox = owner.outbox!
        try database.limitWriterMemory(configuration.writerMemory)
        do {
            // WAL checkpoints mostly by the indexer's loop after writes, rather than inside a
            // request's commit every 4 MB.
            try database.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 10000") }
        } catch {
            throw BusError.failedPrecondition("cannot configure the database: \(error)")
        }
        indexer = SearchIndexer(database: database, logger: context.logger)
        clock = configuration.clock
        syncFutureSkew = configuration.syncFutureSkew
        pdfMaximumPages = configuration.pdfMaximumPages
        apkgLimits = configuration.apkgLimits

        let handlers = owner.host.handlers(for: self)
        RecordMethods.register(handlers)
        IngestMethods.register(handlers)
        SearchMethods.register(handlers)
        ExportMethods.register(handlers)
        SyncMethods.register(handlers)
    }

    /// The indexer runs between the outbox and the host: at shutdown the host drains, the
    /// indexer stops, the outbox publishes what was committed last.
    public var services: [any Service] { owner.services(running: [indexer]) }

    // MARK: Transactions

    /// Runs `body` in one write transaction for the request's user, once per `idem` key (bound
    /// to `request`, what the caller sent), then wakes the outbox. Nothing of it is written if
    /// it throws.
    func write<T: Codable & Sendable>(
        _ context: RequestContext, _ request: some Encodable, device: String = "", _ body: @escaping @Sendable (Changes) throws -> T
    ) async throws -> T {
        let user = try context.requireUser()
        let key = try Idempotency.Key(context.idempotencyKey, method: context.method, request: request)
        let now = clock.now()
        let result = try await database.pool.write { db in
            try Idempotency.once(db, user: user, key: key, now: now) {
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
