import Dispatch
import Synchronization
import Threads

/// One named thread that owns a C engine's state and runs jobs on it one at a time, in order.
///
/// espeak-ng keeps global state and is not thread-safe; a pocketsphinx decoder may be used by
/// one thread at a time. Both also block for as long as they work (tens to hundreds of
/// milliseconds), which must not happen on Swift's cooperative pool. So each engine lives on a
/// thread of its own: the state is made there, on the first job, and never leaves it (it need
/// not be `Sendable`); callers hand in jobs and await their results.
final class EngineThread<State>: Sendable {
    typealias Job = @Sendable (inout State?) -> Void

    private let jobs = Mutex<[Job]>([])
    private let ready = DispatchSemaphore(value: 0)
    private let started = Mutex(false)
    private let name: String

    /// The thread is started by the first job, which makes the state on it.
    init(name: String) {
        self.name = name
    }

    /// Runs `work` on the engine's thread after the jobs before it, with the state (nil until
    /// a job sets it), and returns its result.
    func run<Output: Sendable>(_ work: @escaping @Sendable (inout State?) -> Output) async -> Output {
        await withCheckedContinuation { (continuation: CheckedContinuation<Output, Never>) in
            jobs.withLock { $0.append { state in continuation.resume(returning: work(&state)) } }
            startIfNeeded()
            ready.signal()
        }
    }

    /// Jobs waiting, the one running not counted.
    var waiting: Int { jobs.withLock { $0.count } }

    private func startIfNeeded() {
        let start = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard start else { return }
        // The thread lives as long as the process: engines are process-wide (espeak-ng's state
        // is global), made once.
        startThread(named: name) { [self] in
            var state: State?
            while true {
                ready.wait()
                guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job(&state)
            }
        }
    }
}
