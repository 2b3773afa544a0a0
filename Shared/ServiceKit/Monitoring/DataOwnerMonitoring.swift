import CoreMetrics
import Foundation
import GRDB
import Storage

/// The metrics of what a data owner keeps: the size of its SQLite file and write-ahead log, the
/// memory SQLite holds (its page caches, bounded by each connection's `cache_size`), and its
/// outbox's backlog, read on each scrape.
enum DataOwnerMonitoring {
    static func watch(database: ServiceDatabase, outbox: Outbox?, service: String, monitoring: Monitoring) {
        guard monitoring.isEnabled else { return }
        let labels = [("service", service)]
        let fileBytes = Meter(label: "studybus_database_file_bytes", dimensions: labels, factory: monitoring.factory)
        let walBytes = Meter(label: "studybus_database_wal_bytes", dimensions: labels, factory: monitoring.factory)
        // Process-wide: what every connection's page cache and statements hold. It grows with the
        // database until the caches are full, so a reader of RSS can tell a filling cache from a leak.
        let sqliteMemory = Meter(label: "studybus_sqlite_memory_bytes", dimensions: labels, factory: monitoring.factory)
        let path = database.url.path
        monitoring.onScrape {
            fileBytes.set(Self.size(of: path))
            walBytes.set(Self.size(of: path + "-wal"))
            sqliteMemory.set(SQLiteMemory.usedBytes)
        }
        guard let outbox else { return }
        let backlog = Meter(label: "studybus_outbox_backlog_events", dimensions: labels, factory: monitoring.factory)
        let oldest = Meter(label: "studybus_outbox_oldest_unpublished_age_seconds", dimensions: labels, factory: monitoring.factory)
        monitoring.onScrape {
            // A database that cannot be read leaves the last values: /readyz reports the failure.
            guard let (events, age) = try? await outbox.backlog() else { return }
            backlog.set(events)
            oldest.set(age.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 } ?? 0)
        }
    }

    private static func size(of path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}

extension DatabaseCloser: ReadinessReporting {
    func readinessProblem() async -> String? {
        do {
            _ = try await database.pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
            return nil
        } catch {
            return "database \(database.url.lastPathComponent): \(error)"
        }
    }
}
