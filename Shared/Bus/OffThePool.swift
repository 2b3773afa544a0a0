import Dispatch

/// Runs blocking or long CPU-bound `work` on a dispatch thread and returns its result, so that
/// it does not hold one of the few threads of Swift's cooperative pool (one per core) that every
/// request, call and reply of the process needs.
public func offThePool<Output: Sendable>(
    qos: DispatchQoS.QoSClass = .userInitiated, _ work: @escaping @Sendable () throws(BusError) -> Output
) async throws(BusError) -> Output {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Output, BusError>, Never>) in
        DispatchQueue.global(qos: qos).async {
            continuation.resume(returning: Result { () throws(BusError) -> Output in try work() })
        }
    }
    return try result.get()
}
