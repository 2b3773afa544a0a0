import Foundation
import GRDB
import ServiceKit
import Storage
import TestSupport
import Testing
import Wire

/// `SQLITE_MEMORY_LIMIT_MB` is process-wide, so each case runs in a process of its own.
@Suite("SQLite's memory limit")
struct SQLiteMemoryTests {
    @Test("SQLITE_MEMORY_LIMIT_MB bounds what a pool's connections cache, which without it is the sum of their caches")
    func limitBoundsThePool() async throws {
        // A writer fills a 20 MB table; four readers, each allowed 64 MiB of cache, read it all.
        let unlimited = try await #require(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let used = try SQLiteMemoryTests.readTableFromFourReaders()
            print(used)
            exit(used > 60 << 20 ? EXIT_SUCCESS : EXIT_FAILURE)
        }
        let limited = try await #require(processExitsWith: .success, observing: [\.standardOutputContent]) {
            SQLiteMemory.limit(mebibytes: try Environment(["SQLITE_MEMORY_LIMIT_MB": "4"]).sqliteMemoryLimitMebibytes())
            guard SQLiteMemory.limitBytes == 4 << 20 else { exit(2) }
            let used = try SQLiteMemoryTests.readTableFromFourReaders()
            print(used)
            exit(used < 6 << 20 ? EXIT_SUCCESS : EXIT_FAILURE)
        }
        let held = [unlimited, limited].map {
            String(decoding: $0.standardOutputContent, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        print("SQLite held \(held[0]) bytes without the limit, \(held[1]) with 4 MiB")
    }

    @Test("SQLITE_MEMORY_LIMIT_MB is 0 (none) when unset, and a value outside 0...65536 is INVALID_ARGUMENT naming it")
    func setting() throws {
        #expect(try Environment([:]).sqliteMemoryLimitMebibytes() == 0)
        #expect(try Environment(["SQLITE_MEMORY_LIMIT_MB": "65536"]).sqliteMemoryLimitMebibytes() == 65536)
        for text in ["-1", "65537", "12MB", "9223372036854775808"] {
            #expect {
                try Environment(["SQLITE_MEMORY_LIMIT_MB": text]).sqliteMemoryLimitMebibytes()
            } throws: { error in
                (error as? BusError)?.code == .invalidArgument && (error as? BusError)?.message.contains("SQLITE_MEMORY_LIMIT_MB") == true
            }
        }
    }

    /// Writes 20,000 rows of 1 KiB, reads them all from four readers at once, and returns the
    /// bytes SQLite holds while the pool is open.
    static func readTableFromFourReaders() throws -> Int64 {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = Configuration()
        configuration.maximumReaderCount = 4
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -65536") }
        let pool = try DatabasePool(path: directory.appendingPathComponent("table.sqlite").path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE page (n INTEGER PRIMARY KEY, body BLOB NOT NULL)")
            for n in 1...20_000 { try db.execute(sql: "INSERT INTO page (n, body) VALUES (?, randomblob(1024))", arguments: [n]) }
        }
        // Each reader waits inside its read until all four are inside, so each has a connection.
        let inside = DispatchGroup()
        for _ in 0..<4 { inside.enter() }
        let readers = DispatchGroup()
        for _ in 0..<4 {
            readers.enter()
            // Threads of their own: a global queue need not run four blocked blocks at once.
            Thread.detachNewThread {
                defer { readers.leave() }
                _ = try? pool.read { db in
                    inside.leave()
                    inside.wait()
                    return try Int.fetchOne(db, sql: "SELECT sum(length(body)) FROM page")
                }
            }
        }
        readers.wait()
        return SQLiteMemory.usedBytes
    }
}
