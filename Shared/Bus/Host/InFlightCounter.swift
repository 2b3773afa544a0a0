import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Wire

/// Counts the requests being handled, and lets the host wait until there are none.
final class InFlightCounter: Sendable {
    private let state = Mutex<(count: Int, waiter: CheckedContinuation<Void, Never>?)>((0, nil))

    func begin() { state.withLock { $0.count += 1 } }

    func end() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.count -= 1
            guard state.count == 0, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once no request is in flight.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                guard state.count > 0 else { return true }
                state.waiter = continuation
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
