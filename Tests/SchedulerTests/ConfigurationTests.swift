import Foundation
import GRDB
import SchedulerCore
import ServiceKit
import Storage
import TestSupport
import Testing
import Wire

@Suite("Scheduler settings from the environment")
struct ConfigurationTests {
    @Test("SCHEDULER_SQLITE_CACHE_MB and _MMAP_MB bound the writer's page cache and map; out of range is INVALID_ARGUMENT")
    func writerMemory() throws {
        let directory = try temporaryDirectory()
        let base = ["DATA_DIR": directory.path]
        #expect(try SchedulerConfiguration(environment: Environment(base)).writerMemory == .init(cacheMebibytes: 64, mappedMebibytes: 256))
        let small = try SchedulerConfiguration(environment: Environment(base.merging(
            ["SCHEDULER_SQLITE_CACHE_MB": "8", "SCHEDULER_SQLITE_MMAP_MB": "0"]) { $1 }))
        #expect(small.writerMemory == .init(cacheMebibytes: 8, mappedMebibytes: 0))
        for (name, value) in [("SCHEDULER_SQLITE_CACHE_MB", "0"), ("SCHEDULER_SQLITE_MMAP_MB", "-1"), ("SCHEDULER_SQLITE_CACHE_MB", "65537")] {
            let error = #expect(throws: BusError.self) { try SchedulerConfiguration(environment: Environment(base.merging([name: value]) { $1 })) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains(name) == true)
        }

        let settings = SchedulerDatabase.settings(at: small.databaseURL)
        let database = try ServiceDatabase.open(at: settings.url, migrator: settings.migrator, logger: testLogger("scheduler"))
        defer { try? database.close() }
        try SchedulerDatabase.prepare(database, writerMemory: small.writerMemory, logger: testLogger("scheduler"))
        let (cache, mapped) = try database.pool.writeWithoutTransaction { db in
            (try Int.fetchOne(db, sql: "PRAGMA cache_size"), try Int.fetchOne(db, sql: "PRAGMA mmap_size"))
        }
        #expect(cache == -8 * 1024)
        #expect(mapped == 0)
    }
}
