import Contracts

/// SuperMemo 2 as the `supermemo2` package (3.x) computes it, so results match it exactly.
///
/// Per review with quality q (0…5; our ratings map again 1, hard 3, good 4, easy 5):
/// - q < 3 (a failure): the repetition count resets to 0 and the interval to 1 day;
/// - otherwise the interval becomes 1 day (first success), 6 days (second), then
///   ⌈interval × EF⌉ with the ease factor *before* this review's update, and repetitions + 1;
/// - in every case, failures included, EF' = EF + 0.1 − (5 − q)(0.08 + (5 − q)·0.02), floored
///   at 1.3: again (q 1) lowers EF by 0.54, hard (q 3) by 0.14, good (q 4) keeps it, easy (q 5)
///   raises it by 0.1;
/// - the next review is the review time plus the interval in whole 24-hour days (at most
///   ``maximumIntervalDays``).
public enum SM2 {
    /// Ease factor of a new card.
    public static let initialEase = 2.5
    /// Lowest ease factor.
    public static let minimumEase = 1.3
    /// Longest interval (100 years); the reference has no cap, which no real card reaches.
    public static let maximumIntervalDays = 36_500

    /// SM-2's 0…5 quality for a rating.
    public static func quality(_ rating: ReviewRating) -> Int {
        switch rating {
        case .again: 1
        case .hard: 3
        case .good: 4
        case .easy: 5
        }
    }

    /// A card's SM-2 memory.
    public struct Memory: Sendable, Equatable, Codable {
        /// EF: 2.5 at first, at least 1.3.
        public var easeFactor: Double
        /// The current interval in days.
        public var intervalDays: Int
        /// Successful reviews in a row.
        public var repetitions: Int
        /// Unix milliseconds.
        public var dueMs: Int64

        /// A memory with every field given.
        public init(easeFactor: Double, intervalDays: Int, repetitions: Int, dueMs: Int64) {
            self.easeFactor = easeFactor
            self.intervalDays = intervalDays
            self.repetitions = repetitions
            self.dueMs = dueMs
        }

        /// A card never reviewed, due at `dueMs`.
        public static func new(dueMs: Int64) -> Memory {
            Memory(easeFactor: initialEase, intervalDays: 0, repetitions: 0, dueMs: dueMs)
        }
    }

    /// The memory after a review of quality `quality` at `reviewMs` (Unix milliseconds).
    public static func review(_ memory: Memory, quality: Int, at reviewMs: Int64) -> Memory {
        var next = memory
        if quality < 3 {
            next.intervalDays = 1
            next.repetitions = 0
        } else {
            switch memory.repetitions {
            case 0: next.intervalDays = 1
            case 1: next.intervalDays = 6
            default: next.intervalDays = Int(min((Double(memory.intervalDays) * memory.easeFactor).rounded(.up), Double(maximumIntervalDays)))
            }
            next.repetitions += 1
        }
        let shortfall = Double(5 - quality)
        next.easeFactor = max(memory.easeFactor + (0.1 - shortfall * (0.08 + shortfall * 0.02)), minimumEase)
        next.dueMs = reviewMs + Int64(next.intervalDays) * 86_400_000
        return next
    }
}
