import CoreMetrics
import GRDB
import ServiceKit
import Storage

/// `studybus_timers_active{state}`: timers running and paused, counted on each scrape (the
/// partial index `timer_user_active` covers the count).
enum TimerMetrics {
    static func watch(_ database: ServiceDatabase, monitoring: Monitoring) {
        guard monitoring.isEnabled else { return }
        let running = Meter(label: "studybus_timers_active", dimensions: [("state", "running")], factory: monitoring.factory)
        let paused = Meter(label: "studybus_timers_active", dimensions: [("state", "paused")], factory: monitoring.factory)
        monitoring.onScrape {
            guard let counts = try? await database.pool.read({ db in
                try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS n FROM timer WHERE status IN ('running', 'paused') GROUP BY status")
                    .map { ($0["status"] as String, $0["n"] as Int) }
            }) else { return }
            let byStatus = Dictionary(counts, uniquingKeysWith: +)
            running.set(byStatus["running"] ?? 0)
            paused.set(byStatus["paused"] ?? 0)
        }
    }
}
