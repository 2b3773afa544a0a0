import Synchronization

/// A remote API's rate limit as a token bucket: refilled at `perSecond` units a second, holding
/// at most `burst`. A caller reserves its units now or, in first-come order, the earliest moment
/// they will be there, and waits that long itself; a server's `Retry-After` pauses the bucket for
/// every caller. ai-gateway's providers and connectors' Google quotas share it.
public final class TokenBucket: Sendable {
    private struct State {
        /// May go below zero: units already promised to waiting callers.
        var units: Double
        var updated: ContinuousClock.Instant
        var pausedUntil: ContinuousClock.Instant?
    }

    public let perSecond: Double
    public let burst: Double
    private let state: Mutex<State>

    public init(perSecond: Double, burst: Double) {
        precondition(perSecond > 0 && burst >= 1)
        self.perSecond = perSecond
        self.burst = burst
        state = Mutex(State(units: burst, updated: .now, pausedUntil: nil))
    }

    /// Reserves `units` (at most a burst's worth); returns how long to wait before using them,
    /// or nil, reserving nothing, when that would be after `deadline`.
    public func reserve(_ units: Double = 1, notAfter deadline: ContinuousClock.Instant? = nil, now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { state in
            let elapsed = now - state.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            state.units = min(burst, state.units + max(0, seconds) * perSecond)
            state.updated = now
            let take = min(units, burst)
            var wait: Duration = .zero
            if state.units < take { wait = .milliseconds(Int64(((take - state.units) / perSecond * 1000).rounded(.up))) }
            if let paused = state.pausedUntil, paused > now + wait { wait = paused - now }
            if let deadline, now + wait > deadline { return nil }
            state.units -= take
            return wait
        }
    }

    /// Holds every caller until `until` (the server said to wait).
    public func pause(until: ContinuousClock.Instant) {
        state.withLock { state in
            if state.pausedUntil.map({ $0 < until }) ?? true { state.pausedUntil = until }
        }
    }
}
