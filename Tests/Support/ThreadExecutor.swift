import Bus
import Foundation
import Synchronization
import Threads
import Wire
import ZMQ

/// A serial executor that runs its jobs on one dedicated thread.
///
/// Test peers that make blocking calls (a raw ZeroMQ socket waiting for a reply) run their actor
/// on one of these: the blocking call then holds this thread only, never one of the few threads
/// of Swift's cooperative pool (two on a 2-core CI machine), which every service under test needs.
/// It also keeps a socket on exactly one thread, as ZeroMQ requires.
public final class ThreadExecutor: SerialExecutor {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var stopping = false
    }

    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)

    public init(name: String) {
        startThread(named: name) { [self] in
            blockAllSignalsOnCurrentThread()
            runJobs()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        queue.withLock { $0.jobs.append(unowned) }
        available.signal()
    }

    /// Lets the thread exit once the jobs queued so far have run.
    public func stop() {
        queue.withLock { $0.stopping = true }
        available.signal()
    }

    private func runJobs() {
        while true {
            available.wait()
            let (jobs, stopping) = queue.withLock { queue in
                defer { queue.jobs.removeAll() }
                return (queue.jobs, queue.stopping)
            }
            for job in jobs { job.runSynchronously(on: asUnownedSerialExecutor()) }
            if stopping { return }
        }
    }
}

/// Runs blocking `work` (a subprocess to completion, a blocking read) on a thread of its own and
/// returns its result, so that it never holds a thread of the cooperative pool.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.name = "blocking-test-work"
        thread.start()
    }
}
