import Foundation
import GRDB
import Storage
import TestSupport
import Testing

@Suite("Background checkpoints")
struct CheckpointTests {
    /// A database of one table whose writer never checkpoints by itself, so that only the
    /// background thread can move pages from the log into the file.
    static func open(_ directory: URL) throws -> ServiceDatabase {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("blobs.v1") { db in try db.execute(sql: "CREATE TABLE blob (n INTEGER PRIMARY KEY, bytes BLOB NOT NULL)") }
        let database = try ServiceDatabase.open(at: directory.appending(path: "blobs.sqlite"), migrator: migrator, logger: testLogger("blobs"))
        try database.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        return database
    }

    static func fileSize(_ url: URL) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
    }

    static func write(_ database: ServiceDatabase, _ range: Range<Int>) throws {
        for n in range {
            try database.pool.write { db in
                try db.execute(sql: "INSERT INTO blob (n, bytes) VALUES (?, zeroblob(8192))", arguments: [n])
            }
        }
    }

    @Test("the log is copied into the database file by the background thread while the writer goes on")
    func copiesTheLog() async throws {
        let directory = try temporaryDirectory()
        let database = try Self.open(directory)
        let file = directory.appending(path: "blobs.sqlite")
        try Self.write(database, 0..<100)
        // The writer does not checkpoint: 800 KB of rows are in the log only.
        let before = Self.fileSize(file)
        #expect(before < 100 * 8192)

        try database.checkpointInBackground(logger: testLogger("blobs"))
        try Self.write(database, 100..<200)
        var after = before
        for _ in 0..<200 where after < 200 * 8192 {
            try await Task.sleep(for: .milliseconds(20))
            after = Self.fileSize(file)
        }
        #expect(after >= 200 * 8192, "the database file holds every row written, before and after the checkpointer started")
        #expect(try await database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM blob") } == 200)
        #expect(try database.integrityCheck() == "ok")
        try database.close()
    }

    @Test("closing the database stops its checkpointer, and the file opens again with every row")
    func stopsWithTheDatabase() throws {
        let directory = try temporaryDirectory()
        do {
            let database = try Self.open(directory)
            try database.checkpointInBackground(logger: testLogger("blobs"))
            try database.checkpointInBackground(logger: testLogger("blobs"))  // a second call keeps the one thread
            try Self.write(database, 0..<50)
            try database.close()
        }
        // The thread and its connection are gone: an exclusive lock is granted at once.
        let reopened = try DatabaseQueue(path: directory.appending(path: "blobs.sqlite").path)
        try reopened.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT")
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM blob") == 50)
        }
    }
}
