import Dispatch

/// Runs blocking or long CPU-bound `work` on a dispatch thread and returns its result, so that
/// it does not hold one of the few threads of Swift's cooperative pool (one per core) that every
/// request, call and reply of the process needs.
public func offThePool<Output: Sendable, Failure: Error>(
    qos: DispatchQoS.QoSClass = .userInitiated, _ work: @escaping @Sendable () throws(Failure) -> Output
) async throws(Failure) -> Output {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Output, Failure>, Never>) in
        DispatchQueue.global(qos: qos).async {
            continuation.resume(returning: Result { () throws(Failure) -> Output in try work() })
        }
    }
    return try result.get()
}
