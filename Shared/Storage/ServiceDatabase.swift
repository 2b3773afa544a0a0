import Foundation
import GRDB
import Logging
import Synchronization
import Wire

/// A service's own SQLite file: WAL mode, foreign keys on, a busy timeout, and its migrations
/// applied at open. One per file per process (GRDB's rule); pass it around, never open twice.
///
/// ```swift
/// var migrator = DatabaseMigrator()
/// migrator.registerMigration("v1: materials") { db in try db.create(table: "material") { ... } }
/// Outbox.registerMigrations(&migrator)
/// let database = try ServiceDatabase.open(at: dataDirectory.appending(path: "store.sqlite"), migrator: migrator, logger: logger)
/// ```
public final class ServiceDatabase: Sendable {
    /// The connection pool: one writer, concurrent readers.
    public let pool: DatabasePool
    /// Where the file is.
    public let url: URL
    private let durability: Durability
    private let checkpointer = Mutex<BackgroundCheckpointer?>(nil)
    /// Whether a `_backup` copy is being made (one at a time: ``reserveBackupSlot(service:)``).
    let backupInProgress = Atomic<Bool>(false)

    private init(pool: DatabasePool, url: URL, durability: Durability) {
        self.pool = pool
        self.url = url
        self.durability = durability
    }

    /// Stops the background checkpointer and closes every connection, after the writes and
    /// reads in progress; later uses fail. Blocks until then: call it off the cooperative pool,
    /// once every user of the database has stopped (``DataOwner`` does, last before the bus).
    /// - Throws: when a connection cannot be closed (a statement still in use); the database
    ///   then stays open.
    public func close() throws {
        checkpointer.withLock { checkpointer in
            defer { checkpointer = nil }
            return checkpointer
        }?.stop()
        try pool.close()
    }

    /// Moves checkpoints off the writer: a thread of its own copies the write-ahead log back
    /// into the file as the writer commits (see ``BackgroundCheckpointer``). For databases
    /// whose single writer is their bottleneck; the writer's automatic checkpoint still bounds
    /// the log's size.
    /// - Throws: `FAILED_PRECONDITION` when the checkpointing connection cannot be opened.
    public func checkpointInBackground(logger: Logger) throws(BusError) {
        try checkpointer.withLock { checkpointer throws(BusError) in
            guard checkpointer == nil else { return }
            do {
                checkpointer = try BackgroundCheckpointer(path: url.path, synchronous: durability.pragma, logger: logger)
            } catch {
                throw .failedPrecondition("cannot open a checkpointing connection to \(url.path): \(error)")
            }
        }
    }

    /// How hard SQLite syncs to disk (`SQLITE_SYNCHRONOUS`). `normal` (the default with WAL)
    /// survives a killed process; `full` also survives power loss, at a cost per commit.
    public enum Durability: String, Sendable {
        case normal, full

        /// The `PRAGMA synchronous` value.
        var pragma: String { self == .full ? "FULL" : "NORMAL" }
    }

    /// Opens (creating if needed) the database at `url` and runs every migration not yet applied.
    /// - Throws: `FAILED_PRECONDITION` when the file cannot be opened or migrated.
    public static func open(at url: URL, migrator: DatabaseMigrator, durability: Durability = .normal, logger: Logger) throws(BusError) -> ServiceDatabase {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            // Temporary files in memory: above all statement journals, which SQLite otherwise
            // spills to /var/tmp once a statement changes 64 KiB of pages already changed in its
            // transaction, as large puts do (docs/benchmarks.md, "The store's 1 MB put").
            try db.execute(sql: "PRAGMA synchronous = \(durability.pragma); PRAGMA temp_store = MEMORY")
        }
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let pool = try DatabasePool(path: url.path, configuration: configuration)
            let applied = try pool.read { db in try migrator.appliedMigrations(db) }
            try migrator.migrate(pool)
            let now = try pool.read { db in try migrator.appliedMigrations(db) }
            let new = now.filter { !applied.contains($0) }
            logger.info("database open", metadata: [
                "file": "\(url.path)", "migrations": "\(now.count)", "applied": "\(new.joined(separator: ", "))",
            ])
            return ServiceDatabase(pool: pool, url: url, durability: durability)
        } catch {
            throw .failedPrecondition("cannot open database \(url.path): \(error)")
        }
    }

    /// Writes a consistent copy of the live database to `destination` (SQLite's online backup
    /// of one read snapshot), while the service keeps running and writing.
    /// - Returns: the migrations applied in the copy, in the order they ran (GRDB records each
    ///   in `grdb_migrations` as it runs).
    @discardableResult
    public func backup(to destination: URL) throws(BusError) -> [String] {
        do {
            let target = try DatabaseQueue(path: destination.path)
            try pool.backup(to: target)
            let migrations = try target.read { db in
                try db.tableExists("grdb_migrations")
                    ? String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") : []
            }
            try target.close()
            return migrations
        } catch {
            throw .internal("backup to \(destination.path) failed: \(error)")
        }
    }

    /// How much of the file the writer's connection may hold in memory. Both are bounds a
    /// process grows to as its file grows past them, not allocations made at open.
    public struct WriterMemory: Sendable, Equatable {
        /// Its page cache (`PRAGMA cache_size`).
        public var cacheMebibytes: Int
        /// How much of the file it reads through a memory map instead of a copy per page
        /// (`PRAGMA mmap_size`; 0: none). Mapped pages count in the process's resident memory
        /// once read, and the kernel may drop them.
        public var mappedMebibytes: Int

        public init(cacheMebibytes: Int, mappedMebibytes: Int = 0) {
            self.cacheMebibytes = cacheMebibytes
            self.mappedMebibytes = mappedMebibytes
        }
    }

    /// Bounds the writer's page cache and memory map.
    /// - Throws: `FAILED_PRECONDITION` when the pragmas cannot be set.
    public func limitWriterMemory(_ memory: WriterMemory) throws(BusError) {
        do {
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA cache_size = -\(memory.cacheMebibytes * 1024); PRAGMA mmap_size = \(memory.mappedMebibytes << 20)")
            }
        } catch {
            throw .failedPrecondition("cannot set the page cache of \(url.path): \(error)")
        }
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    public func integrityCheck() throws -> String {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "no result" }
    }
}

extension DatabaseError {
    /// Whether this is a UNIQUE or PRIMARY KEY constraint violation.
    public var isUniqueViolation: Bool {
        extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE || extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY
    }
}
