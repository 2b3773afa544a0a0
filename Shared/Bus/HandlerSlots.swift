import Synchronization

/// At most `count` handlers of a host run at once; the others wait their turn, first come first
/// served.
///
/// The broker never sends more requests than the credit a connection declared, but after a
/// reconnect it grants the whole credit again to the new connection while handlers of the old
/// one may still be running: the host keeps the promise itself.
final class HandlerSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(free: count))
    }

    /// Returns when a slot is taken for the caller.
    func acquire() async {
        let taken = state.withLock { state -> Bool in
            guard state.free > 0 else { return false }
            state.free -= 1
            return true
        }
        guard !taken else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let takenMeanwhile = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if takenMeanwhile { continuation.resume() }
        }
    }

    /// Gives the slot to the longest waiting caller, or frees it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.head < state.waiting.count else {
                state.free += 1
                return nil
            }
            let next = state.waiting[state.head]
            state.head += 1
            if state.head == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.head = 0
            }
            return next
        }
        next?.resume()
    }
}
