import Synchronization

/// A provider's request rate limit: a token bucket refilled at `perMinute / 60` tokens a second,
/// holding at most `burst`. A request reserves a token now or, in first-come order, the earliest
/// moment one will be there; when that moment is after the caller's deadline it reserves nothing
/// and fails at once instead of waiting in vain. A provider's `Retry-After` pauses the bucket.
final class TokenBucket: Sendable {
    private struct State {
        /// May go below zero: tokens already promised to waiting requests.
        var tokens: Double
        var updated: ContinuousClock.Instant
        var pausedUntil: ContinuousClock.Instant?
    }

    let perMinute: Int
    let burst: Int
    private let state: Mutex<State>

    init(perMinute: Int, burst: Int) {
        precondition(perMinute > 0 && burst > 0)
        self.perMinute = perMinute
        self.burst = burst
        state = Mutex(State(tokens: Double(burst), updated: .now, pausedUntil: nil))
    }

    private var perSecond: Double { Double(perMinute) / 60 }

    /// Reserves a token; returns how long to wait before using it, or nil (nothing reserved)
    /// when it would come after `deadline`.
    func reserve(notAfter deadline: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { state in
            let elapsed = now - state.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            state.tokens = min(Double(burst), state.tokens + max(0, seconds) * perSecond)
            state.updated = now
            var wait: Duration = .zero
            if state.tokens < 1 { wait = .milliseconds(Int64(((1 - state.tokens) / perSecond * 1000).rounded(.up))) }
            if let paused = state.pausedUntil, paused > now + wait { wait = paused - now }
            guard now + wait <= deadline else { return nil }
            state.tokens -= 1
            return wait
        }
    }

    /// Holds every request until `until` (the provider said to wait).
    func pause(until: ContinuousClock.Instant) {
        state.withLock { state in
            if state.pausedUntil.map({ $0 < until }) ?? true { state.pausedUntil = until }
        }
    }
}
