import Bus
import Contracts
import Logging
import Wire

/// Publishes `ingest.progress` (not durable: a lost event is harmless, the outcome is the
/// store's `material.ingested` or `ingest.failed`).
struct ProgressReporter: Sendable {
    let bus: Bus
    let logger: Logger

    func report(_ job: IngestJob, _ stage: IngestStage, message: String? = nil) {
        report(materialId: job.material.id, user: job.user, stage, message: message)
    }

    func report(materialId: String, user: String, _ stage: IngestStage, message: String? = nil) {
        do {
            try bus.publish(
                Ingest.progress, IngestProgress(materialId: materialId, userId: user, stage: stage, percent: stage.percent, message: message),
                user: user)
        } catch {
            logger.warning("cannot publish progress", metadata: ["material": "\(materialId)", "error": "\(error)"])
        }
    }
}
