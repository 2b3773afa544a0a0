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

    /// A recording's transcription under way: `extracting`, from its 10 % to chunking's 40 % as
    /// the pieces are done.
    func transcribed(_ job: IngestJob, pieces: Int, of total: Int) {
        let from = IngestStage.extracting.percent, to = IngestStage.chunking.percent
        let percent = from + (to - from) * pieces / max(total, 1)
        publish(IngestProgress(
            materialId: job.material.id, userId: job.user, stage: .extracting, percent: percent,
            message: "transcribed \(pieces) of \(total) pieces of the recording"))
    }

    func report(materialId: String, user: String, _ stage: IngestStage, message: String? = nil) {
        publish(IngestProgress(materialId: materialId, userId: user, stage: stage, percent: stage.percent, message: message))
    }

    private func publish(_ progress: IngestProgress) {
        do {
            try bus.publish(Ingest.progress, progress, user: progress.userId)
        } catch {
            logger.warning("cannot publish progress", metadata: ["material": "\(progress.materialId)", "error": "\(error)"])
        }
    }
}
