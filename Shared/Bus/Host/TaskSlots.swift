import Synchronization
import Wire

/// A counting semaphore for async tasks: at most `count` hold a slot, the others wait in
/// arrival order. A waiting task that is cancelled stops waiting (CancellationError).
///
/// Service hosts bound their handlers with it (after a reconnect the broker grants the whole
/// credit again while the old connection's handlers may still run, and each broker of a pair
/// grants it too), ingest its jobs.
public final class TaskSlots: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// Waiters cancelled before they were queued.
        var cancelled: Set<UInt64> = []
    }

    private let state: Mutex<State>

    public init(count: Int) {
        state = Mutex(State(available: count))
    }

    /// Runs `body` holding a slot.
    public func withSlot<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async throws {
        // A free slot is taken without suspending: the common case of a host under its credit.
        let id = state.withLock { state -> UInt64? in
            if state.available > 0 {
                state.available -= 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if state.available > 0 {
                        state.available -= 1
                        return .success(())
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
        // A cancellation that came after the slot was granted leaves an id behind: forget it.
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    private func release() {
        let next = state.withLock { state -> Waiter? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.continuation.resume()
    }
}
