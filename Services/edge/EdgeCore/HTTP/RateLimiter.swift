import Foundation
import Synchronization

/// A token bucket per user: `rate` requests a second on average, up to `burst` at once.
///
/// Buckets of users who have been quiet long enough to be full again carry no information and
/// are dropped whenever the table reaches ``maximumUsers``, so memory stays bounded however
/// many users come and go.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let rate: Double
    private let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// When the table holds this many users, full buckets are swept out.
    let maximumUsers: Int

    public init(rate: Double, burst: Int, maximumUsers: Int = 100_000) {
        self.rate = rate
        self.burst = Double(burst)
        self.maximumUsers = maximumUsers
    }

    /// Takes one token of `user`'s bucket: nil if there was one, otherwise how long until there is.
    public func take(_ user: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            if buckets.count >= maximumUsers, buckets[user] == nil { sweep(&buckets, now: now) }
            var bucket = buckets[user] ?? Bucket(tokens: burst, updated: now)
            let elapsed = max(0, (now - bucket.updated) / .seconds(1))
            bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            bucket.updated = now
            defer { buckets[user] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return .seconds((1 - bucket.tokens) / rate)
        }
    }

    /// Drops the buckets that are full by now (they behave exactly like a new one), or all when
    /// none is: an attacker with many tokens can then reset the others' buckets, but no more.
    private func sweep(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        let fullAfter = Duration.seconds(burst / rate)
        buckets = buckets.filter { now - $0.value.updated < fullAfter }
        if buckets.count >= maximumUsers { buckets.removeAll(keepingCapacity: true) }
    }
}
