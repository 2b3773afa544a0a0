import Bus
import Contracts
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Wire

/// Runs jobs: at most `concurrency` at once (the rest wait in arrival order), each within its
/// hard time limit; a job that fails, runs out of time or is cut short by shutdown leaves its
/// material `failed` with the reason. On graceful shutdown it lets running jobs finish (up to
/// `shutdownGrace`), then stops the rest, which fail with a reason that says to retry.
public final class JobRunner: Service, Sendable {
    private let pipeline: Pipeline
    private let configuration: IngestConfiguration
    private let slots: TaskSlots
    private let logger: Logger
    /// Jobs started and not finished, by job id.
    private let active = Mutex<[String: ActiveJob]>([:])

    private struct ActiveJob {
        let material: String
        /// The material's `updatedAt` when this attempt took it: a failure stamped since is of
        /// this attempt, one stamped earlier of an attempt before it (the store's stamps of one
        /// material only grow; equal in the millisecond the wire keeps, the cancel wins).
        let attemptStartedAt: Date
        let bytes: Int
        let task: Task<IngestResult, any Error>
        /// Set when the user cancelled the job (`ingest.cancel`): its material is failed already.
        let cancelled: Flag
    }

    /// The reason a material fails with when its user cancels its job.
    static let cancelledReason = IngestFailed.cancelledReason

    init(pipeline: Pipeline, configuration: IngestConfiguration, logger: Logger) {
        self.pipeline = pipeline
        self.configuration = configuration
        slots = TaskSlots(count: configuration.concurrency)
        self.logger = logger
    }

    /// Whether this worker is processing `materialId` now.
    func isRunning(_ materialId: String) -> Bool {
        active.withLock { $0.values.contains { $0.material == materialId } }
    }

    /// Stops this worker's job for `materialId`, if it runs one that the cancel stamped
    /// `failedAt` is of (its material was failed with ``cancelledReason`` then): the job's task
    /// is cancelled, which kills its tool processes, cancels its calls and stops it at its next
    /// check; it records nothing more. A job of a retry that started after that failure goes on,
    /// however late the cancel's event arrives.
    func cancel(materialId: String, failedAt: Date) {
        let jobs = active.withLock { $0.values.filter { $0.material == materialId && $0.attemptStartedAt <= failedAt } }
        for job in jobs {
            job.cancelled.set()
            job.task.cancel()
        }
        if !jobs.isEmpty { logger.info("job cancelled", metadata: ["material": "\(materialId)"]) }
    }

    /// Jobs started and not finished.
    var activeCount: Int { active.withLock { $0.count } }

    /// Refuses more work when the queue is full, or holding another `bytes` (a file and what it
    /// may expand to) would go beyond the memory budget.
    /// - Throws: `RESOURCE_EXHAUSTED` saying to try again or add workers.
    func admit(bytes: Int) throws(BusError) {
        let (count, held) = active.withLock { active in (active.count, active.values.reduce(0) { $0 + $1.bytes }) }
        let limit = configuration.concurrency + configuration.queueLimit
        guard count < limit, count == 0 || held + bytes <= configuration.memoryBudgetBytes else {
            throw .resourceExhausted("this ingest worker is full (\(count) jobs running or queued); retry in a moment (operators: add ingest workers)")
        }
    }

    /// Starts `job`; its task returns the result or throws the error that failed the material.
    @discardableResult
    func start(_ job: IngestJob) -> Task<IngestResult, any Error> {
        // Registered under the lock the task's end takes too, so it cannot end unregistered.
        let cancelled = Flag()
        return active.withLock { active in
            let task = Task<IngestResult, any Error> {
                defer { _ = self.active.withLock { $0.removeValue(forKey: job.id) } }
                return try await self.execute(job, cancelled: cancelled)
            }
            active[job.id] = ActiveJob(
                material: job.material.id, attemptStartedAt: job.material.updatedAt, bytes: job.file.count + job.expansionAllowance, task: task, cancelled: cancelled)
            return task
        }
    }

    private func execute(_ job: IngestJob, cancelled: Flag) async throws(BusError) -> IngestResult {
        let started = ContinuousClock.now
        logger.info("job started", metadata: [
            "material": "\(job.material.id)", "user": "\(job.user)", "format": "\(job.format.rawValue)", "bytes": "\(job.file.count)",
        ])
        pipeline.progress.report(job, .queued)
        let timedOut = Flag()
        let work = Task { () async throws -> IngestResult in
            try await slots.withSlot { try await pipeline.process(job) }
        }
        let timer = Task {
            // A recording's job moves its deadline once it knows the recording's length.
            var deadline = job.deadline
            repeat {
                try await Task.sleep(until: deadline, clock: .continuous)
                deadline = job.deadline
            } while deadline > .now
            timedOut.set()
            work.cancel()
        }
        let lease = Task { await renewWhileRunning(job, work: work) }
        let result = await withTaskCancellationHandler { await work.result } onCancel: { work.cancel() }
        timer.cancel()
        lease.cancel()
        let milliseconds = (ContinuousClock.now - started).wholeMicroseconds / 1000
        switch result {
        case .success(let result):
            logger.info("job ready", metadata: [
                "material": "\(job.material.id)", "chunks": "\(result.outcome?.chunkCount ?? 0)",
                "cards": "\(result.outcome?.flashcardIds.count ?? 0)", "ms": "\(milliseconds)",
            ])
            return result
        case .failure where cancelled.isSet:
            // ingest.cancel failed the material already; its late result (if any) the store refuses.
            pipeline.progress.report(job, .failed, message: Self.cancelledReason)
            logger.info("job stopped: cancelled", metadata: ["material": "\(job.material.id)", "ms": "\(milliseconds)"])
            throw BusError(.cancelled, "the processing of material '\(job.material.id)' was cancelled (ingest.cancel)",
                           details: .object(["materialId": .string(job.material.id)]))
        case .failure(let error):
            // Downstream calls share the job's deadline, so they may run out of time first (a
            // little before the job's own timer, as they measure it on other clocks).
            let outOfTime = timedOut.isSet || ((error as? BusError)?.code == .deadlineExceeded && ContinuousClock.now + .seconds(1) >= job.deadline)
            let failure = reason(for: error, timedOut: outOfTime)
            // In a task of its own: when shutdown cancelled this one, its calls would be cancelled too.
            let recording = Task { [pipeline] () async -> Material? in await pipeline.fail(job, failure) }
            if let material = await recording.value {
                return IngestResult(material: material)
            }
            logger.warning("job failed", metadata: [
                "material": "\(job.material.id)", "code": "\(failure.code.name)", "reason": "\(failure.message)", "ms": "\(milliseconds)",
            ])
            throw BusError(failure.code, failure.message, details: .object(["materialId": .string(job.material.id)]))
        }
    }

    /// Tells the store, every third of the sweep's age, that the job is alive (`materials.renew`),
    /// so that no worker's sweep takes a long job (a lecture) for lost. When the store says the
    /// attempt is over — another worker's sweep failed it while this one could not reach the
    /// store — the job stops: its result would be refused.
    private func renewWhileRunning(_ job: IngestJob, work: Task<IngestResult, any Error>) async {
        guard let attempt = job.material.processingStartedAt else { return }
        let interval = configuration.stuckAfter / 3
        while (try? await Task.sleep(for: interval)) != nil {
            do throws(BusError) {
                _ = try await pipeline.bus.call(
                    Store.renewMaterial, MaterialRenew(id: job.material.id, attemptStartedAt: attempt),
                    options: CallOptions(user: job.user, timeout: interval, meta: job.meta))
            } catch where error.code == .failedPrecondition || error.code == .notFound {
                logger.warning("job stopped: its attempt is over in the store", metadata: ["material": "\(job.material.id)", "reason": "\(error.message)"])
                work.cancel()
                return
            } catch {
                logger.warning("cannot renew the job's material; trying again", metadata: ["material": "\(job.material.id)", "error": "\(error)"])
            }
        }
    }

    /// The error the material fails with, in words the user can act on.
    private func reason(for error: any Error, timedOut: Bool) -> BusError {
        if timedOut {
            return .deadlineExceeded(
                "processing took longer than the limit of \(configuration.jobTimeout) (for a recording, \(configuration.recordings.jobTimePerMinute) more per minute of it) and was stopped; try a smaller file, or call ingest.retry when the service is less busy")
        }
        switch error {
        case let error as BusError where error.code != .cancelled:
            return error
        case is CancellationError, is BusError:
            return .unavailable("the ingest worker stopped while processing this material; call ingest.retry to process it again")
        default:
            logger.error("job failed unexpectedly", metadata: ["error": "\(String(reflecting: error))"])
            return .internal("processing failed unexpectedly (the ingest log has the details); call ingest.retry to try again")
        }
    }

    /// Waits for graceful shutdown, then for the jobs (up to the configuration's
    /// `shutdownGrace`), then stops the rest. Cancelled instead, it stops the jobs at once.
    public func run() async throws {
        do {
            try await gracefulShutdown()
            let deadline = ContinuousClock.now + configuration.shutdownGrace
            while activeCount > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
        } catch {
            // Cancelled: no time to wait.
        }
        let remaining = active.withLock { $0.values.map(\.task) }
        if !remaining.isEmpty { logger.warning("stopping unfinished jobs", metadata: ["count": "\(remaining.count)"]) }
        for task in remaining { task.cancel() }
        for task in remaining { _ = await task.result }
    }
}

/// A flag set once, read from any task.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
