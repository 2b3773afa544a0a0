import Bus
import Contracts
import Logging
import ServiceLifecycle
import Wire

/// Finds materials whose worker was lost — `processing` for longer than `stuckAfter`, more
/// than any live worker's job may take — and marks them failed ("worker lost"), so no material
/// stays `processing` forever. Every worker sweeps, at start and then every `interval` (with a
/// little jitter, so workers started together do not sweep together); two workers failing the
/// same material is harmless (the second gets FAILED_PRECONDITION).
public final class StuckSweeper: Service, Sendable {
    private let bus: Bus
    private let runner: JobRunner
    private let progress: ProgressReporter
    private let stuckAfter: Duration
    private let interval: Duration
    private let logger: Logger

    init(bus: Bus, runner: JobRunner, configuration: IngestConfiguration, logger: Logger) {
        self.bus = bus
        self.runner = runner
        progress = ProgressReporter(bus: bus, logger: logger)
        stuckAfter = configuration.stuckAfter
        interval = configuration.sweepInterval
        self.logger = logger
    }

    /// The reason a lost worker's material fails with.
    var lostReason: String {
        "worker lost: the ingest worker processing this material stopped before finishing (processing for more than \(stuckAfter.components.seconds) s); call ingest.retry to process it again"
    }

    /// Sweeps at once, then every interval, until graceful shutdown.
    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.sweep()
                let jitter = Double.random(in: 0.9...1.1)
                try await Task.sleep(for: self.interval * jitter)
            }
        }
    }

    /// Fails every stuck material (none of this worker's own); returns how many it failed.
    @discardableResult
    public func sweep() async -> Int {
        var failed = 0
        do {
            while true {
                let seconds = Double(stuckAfter.components.seconds)
                let stuck = try await bus.call(
                    Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: seconds, limit: 100), options: CallOptions(timeout: .seconds(10)))
                var failedNow = 0
                for material in stuck.materials where !runner.isRunning(material.id) {
                    if await fail(material) { failedNow += 1 }
                }
                failed += failedNow
                // A full page may hold more; one where nothing could be failed would come back as it is.
                if stuck.materials.count < 100 || failedNow == 0 || Task.isCancelled { break }
            }
        } catch {
            logger.warning("sweep for lost workers' materials failed; trying again next interval", metadata: ["error": "\(error)"])
        }
        return failed
    }

    private func fail(_ material: StuckMaterial) async -> Bool {
        do throws(BusError) {
            _ = try await bus.call(Store.failMaterial, MaterialFail(id: material.id, reason: lostReason), options: CallOptions(user: material.userId, timeout: .seconds(10)))
        } catch where error.code == .failedPrecondition || error.code == .notFound {
            return false  // finished, failed or deleted meanwhile
        } catch {
            logger.warning("cannot fail a lost worker's material", metadata: ["material": "\(material.id)", "error": "\(error)"])
            return false
        }
        logger.warning("worker lost: material failed", metadata: [
            "material": "\(material.id)", "user": "\(material.userId)", "processingSince": "\(material.processingStartedAt)",
        ])
        progress.report(materialId: material.id, user: material.userId, .failed, message: lostReason)
        return true
    }
}
