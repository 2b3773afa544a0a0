import CoreMetrics
import ServiceKit

/// `studybus_ingest_jobs{state}`: this worker's jobs running and queued, on each scrape. Jobs
/// take the runner's slots in order, so as many run as there are slots and the rest wait.
enum JobMetrics {
    static func watch(_ runner: JobRunner, concurrency: Int, monitoring: Monitoring) {
        guard monitoring.isEnabled else { return }
        let running = Meter(label: "studybus_ingest_jobs", dimensions: [("state", "running")], factory: monitoring.factory)
        let queued = Meter(label: "studybus_ingest_jobs", dimensions: [("state", "queued")], factory: monitoring.factory)
        monitoring.onScrape {
            let active = runner.activeCount
            running.set(min(active, concurrency))
            queued.set(max(0, active - concurrency))
        }
    }
}
