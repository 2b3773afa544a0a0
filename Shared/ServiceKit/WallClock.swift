import Foundation
import Synchronization

/// The time of day, as a seam: services read "now" through it so tests can set it.
public protocol WallClock: Sendable {
    /// The current date.
    func now() -> Date
}

/// The system's real-time clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that only moves when told; for tests.
public final class ManualWallClock: WallClock {
    private let current: Mutex<Date>

    public init(_ start: Date) { current = Mutex(start) }

    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or back) by `interval` seconds.
    public func advance(by interval: TimeInterval) { current.withLock { $0 += interval } }

    /// Sets the clock to `date`.
    public func set(_ date: Date) { current.withLock { $0 = date } }
}
