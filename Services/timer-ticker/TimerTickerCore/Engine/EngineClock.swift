import Foundation
import Synchronization

/// The engine's time: a monotonic clock in nanoseconds, as a seam so tests can drive it.
public protocol EngineClock: Sendable {
    /// Nanoseconds since an arbitrary fixed point; never goes back.
    func nanoseconds() -> Int64
}

extension EngineClock {
    /// Now in whole milliseconds, rounded down: an entry fires once this reaches its deadline.
    public func milliseconds() -> Int64 { nanoseconds() / 1_000_000 }

    /// The deadline `delay` milliseconds from now, rounded up so that firing when
    /// ``milliseconds()`` reaches it is never early.
    public func deadline(afterMilliseconds delay: Int64) -> Int64 {
        let now = nanoseconds()
        return (now + 999_999) / 1_000_000 + max(0, delay)
    }
}

/// `CLOCK_MONOTONIC`: unaffected by changes of the time of day (the clock the driver's
/// condition variable waits on).
public struct MonotonicClock: EngineClock {
    /// The system's monotonic clock.
    public init() {}

    public func nanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

/// A clock that moves only when told; for tests and in-engine benchmarks.
public final class ManualEngineClock: EngineClock {
    private let now: Mutex<Int64>

    /// A clock standing at `start` milliseconds.
    public init(milliseconds start: Int64 = 0) { now = Mutex(start * 1_000_000) }

    public func nanoseconds() -> Int64 { now.withLock { $0 } }

    /// Moves the clock to `milliseconds`; a time before the current one is ignored.
    public func set(milliseconds: Int64) { now.withLock { $0 = max($0, milliseconds * 1_000_000) } }
}
