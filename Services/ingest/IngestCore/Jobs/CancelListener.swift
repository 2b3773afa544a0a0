import Bus
import Contracts
import ServiceLifecycle

/// Stops this worker's job when its material is cancelled through another worker: `ingest.cancel`
/// reaches any one worker, which fails the material with ``JobRunner/cancelledReason``; the
/// store's `ingest.failed` then reaches every worker, and the one running the job stops it. (A
/// worker that misses the event still cannot store the job's result: its `materials.put` asks
/// for a material still `processing`.)
final class CancelListener: Service, Sendable {
    private let bus: Bus
    private let runner: JobRunner

    init(bus: Bus, runner: JobRunner) {
        self.bus = bus
        self.runner = runner
    }

    func run() async throws {
        let subscription = try bus.subscribe(Store.ingestFailed)
        await cancelWhenGracefulShutdown {
            for await event in subscription where event.payload.reason == JobRunner.cancelledReason {
                self.runner.cancel(materialId: event.payload.materialId, failedAt: event.payload.failedAt)
            }
        }
    }
}
