import CThreads
import Foundation

/// Starts a thread called `name`, as `top -H`, `perf` and `/proc` show it, that runs `body`.
///
/// The name is given from inside the thread: on Linux, Foundation's `Thread.name` set before
/// `start()` never reaches the OS thread, which keeps the name of the thread that created it
/// (often a pool thread's, `oot.default-qos`).
public func startThread(named name: String, qualityOfService: QualityOfService = .default, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        studybus_name_current_thread(name)
        body()
    }
    thread.qualityOfService = qualityOfService
    thread.start()
}
