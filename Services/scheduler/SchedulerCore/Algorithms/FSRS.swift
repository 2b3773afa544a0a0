import Contracts
import Foundation

/// FSRS-6, written from the algorithm's published description and checked against the
/// reference `fsrs` package (6.x, fuzzing off): stability and difficulty within 1e-6, due
/// dates exactly.
///
/// Forgetting curve R(t, S) = (1 + F·t/S)^(−w20) with F = 0.9^(−1/w20) − 1, t in whole days
/// since the last review. New cards: S0 = w[r−1], D0 = w4 − e^(w5(r−1)) + 1 (clamped 1…10).
/// Difficulty: ΔD = −w6(r − 3), D' = D + ΔD(10 − D)/9, mean-reverted towards D0(easy) by w7.
/// Same-day reviews use the short-term stability S·e^(w17(r−3+w18))·S^(−w19) (at least ×1 unless
/// again); otherwise recall S·(1 + e^w8(11 − D)S^(−w9)(e^(w10(1−R)) − 1)·hard·easy) or forgetting
/// min(w11·D^(−w12)((S+1)^w13 − 1)e^(w14(1−R)), S/e^(w17·w18)). Intervals are
/// S/F·(retention^(−1/w20) − 1) days, rounded half to even, at least 1, at most the maximum.
/// Learning steps 1 min, 10 min; relearning step 10 min (as the reference's defaults).
public struct FSRS: Sendable {
    /// The 21 default FSRS-6 parameters.
    public static let defaultParameters: [Double] = [
        0.212, 1.2931, 2.3065, 8.2956, 6.4133, 0.8334, 3.0194, 0.001, 1.8722, 0.1666, 0.796,
        1.4835, 0.0614, 0.2629, 1.6483, 0.6014, 1.8729, 0.5425, 0.0912, 0.0658, 0.1542,
    ]
    static let minimumStability = 0.001
    static let dayMs: Int64 = 86_400_000

    /// The 21 parameters w0…w20.
    public let w: [Double]
    /// The probability of recall intervals aim for (0.9 by default).
    public let desiredRetention: Double
    /// Learning and relearning steps in milliseconds.
    public let learningSteps: [Int64]
    public let relearningSteps: [Int64]
    /// The longest interval in days.
    public let maximumIntervalDays: Int
    private let decay: Double
    private let factor: Double

    /// A scheduler with the given parameters (the defaults are the reference's).
    public init(parameters: [Double] = FSRS.defaultParameters, desiredRetention: Double = 0.9,
                learningSteps: [Int64] = [60_000, 600_000], relearningSteps: [Int64] = [600_000], maximumIntervalDays: Int = 36_500) {
        precondition(parameters.count == 21, "FSRS-6 has 21 parameters")
        w = parameters
        self.desiredRetention = desiredRetention
        self.learningSteps = learningSteps
        self.relearningSteps = relearningSteps
        self.maximumIntervalDays = maximumIntervalDays
        decay = -parameters[20]
        factor = pow(0.9, 1 / decay) - 1
    }

    /// A card's FSRS memory.
    public struct Memory: Sendable, Equatable, Codable {
        /// Learning, review or relearning.
        public var phase: FSRSPhase
        /// The learning or relearning step; nil in review.
        public var step: Int?
        /// Days until recall probability falls to 90%; nil before the first review.
        public var stability: Double?
        /// 1…10; nil before the first review.
        public var difficulty: Double?
        /// Unix milliseconds.
        public var dueMs: Int64
        /// Unix milliseconds of the last review.
        public var lastReviewMs: Int64?

        /// A memory with every field given.
        public init(phase: FSRSPhase, step: Int?, stability: Double?, difficulty: Double?, dueMs: Int64, lastReviewMs: Int64?) {
            self.phase = phase
            self.step = step
            self.stability = stability
            self.difficulty = difficulty
            self.dueMs = dueMs
            self.lastReviewMs = lastReviewMs
        }

        /// A card never reviewed, due at `dueMs`.
        public static func new(dueMs: Int64) -> Memory {
            Memory(phase: .learning, step: 0, stability: nil, difficulty: nil, dueMs: dueMs, lastReviewMs: nil)
        }
    }

    /// FSRS's grade 1…4 for a rating.
    static func grade(_ rating: ReviewRating) -> Double {
        switch rating {
        case .again: 1
        case .hard: 2
        case .good: 3
        case .easy: 4
        }
    }

    /// Probability of recall at `nowMs`; 0 before the first review.
    public func retrievability(_ memory: Memory, at nowMs: Int64) -> Double {
        guard let last = memory.lastReviewMs, let stability = memory.stability else { return 0 }
        let elapsedDays = max(0, floorDays(nowMs - last))
        return pow(1 + factor * Double(elapsedDays) / stability, decay)
    }

    /// The memory after a review rated `rating` at `reviewMs`. `fuzz` (0..<1), when given,
    /// spreads review-phase intervals of 3 days or more as the reference's fuzzing does.
    public func review(_ memory: Memory, rating: ReviewRating, at reviewMs: Int64, fuzz: Double? = nil) -> Memory {
        var card = memory
        let r = Self.grade(rating)
        let sameDay = memory.lastReviewMs.map { floorDays(reviewMs - $0) < 1 } ?? false
        let interval: Int64

        func updateMemory() {
            guard let stability = card.stability, let difficulty = card.difficulty else {
                card.stability = initialStability(r)
                card.difficulty = clampDifficulty(initialDifficulty(r))
                return
            }
            if sameDay {
                card.stability = shortTermStability(stability, r)
            } else {
                card.stability = nextStability(difficulty: difficulty, stability: stability,
                                               retrievability: retrievability(card, at: reviewMs), rating: rating)
            }
            card.difficulty = nextDifficulty(difficulty, r)
        }

        func graduate() -> Int64 {
            card.phase = .review
            card.step = nil
            return Int64(nextIntervalDays(card.stability!)) * Self.dayMs
        }

        /// The learning or relearning ladder: again restarts, hard repeats, good climbs, easy graduates.
        func climb(_ steps: [Int64]) -> Int64 {
            let step = card.step ?? 0
            if steps.isEmpty || (step >= steps.count && rating != .again) { return graduate() }
            switch rating {
            case .again:
                card.step = 0
                return steps[0]
            case .hard:
                if step == 0 && steps.count == 1 { return steps[0] * 3 / 2 }
                if step == 0 { return (steps[0] + steps[1]) / 2 }
                return steps[step]
            case .good:
                if step + 1 == steps.count { return graduate() }
                card.step = step + 1
                return steps[step + 1]
            case .easy:
                return graduate()
            }
        }

        switch memory.phase {
        case .learning:
            updateMemory()
            interval = climb(learningSteps)
        case .relearning:
            updateMemory()
            interval = climb(relearningSteps)
        case .review:
            updateMemory()
            if rating == .again && !relearningSteps.isEmpty {
                card.phase = .relearning
                card.step = 0
                interval = relearningSteps[0]
            } else {
                interval = Int64(nextIntervalDays(card.stability!)) * Self.dayMs
            }
        }
        var finalInterval = interval
        if let fuzz, card.phase == .review {
            finalInterval = Int64(fuzzedDays(Int(interval / Self.dayMs), fuzz: fuzz)) * Self.dayMs
        }
        card.dueMs = reviewMs + finalInterval
        card.lastReviewMs = reviewMs
        return card
    }

    // MARK: Formulas

    func floorDays(_ ms: Int64) -> Int64 {
        ms >= 0 ? ms / Self.dayMs : -((-ms + Self.dayMs - 1) / Self.dayMs)
    }

    func clampDifficulty(_ d: Double) -> Double { min(max(d, 1), 10) }

    func clampStability(_ s: Double) -> Double { max(s, Self.minimumStability) }

    func initialStability(_ r: Double) -> Double { clampStability(w[Int(r) - 1]) }

    func initialDifficulty(_ r: Double) -> Double { w[4] - pow(M_E, w[5] * (r - 1)) + 1 }

    func nextIntervalDays(_ stability: Double) -> Int {
        let days = (stability / factor) * (pow(desiredRetention, 1 / decay) - 1)
        return min(max(Int(days.rounded(.toNearestOrEven)), 1), maximumIntervalDays)
    }

    func shortTermStability(_ s: Double, _ r: Double) -> Double {
        var increase = pow(M_E, w[17] * (r - 3 + w[18])) * pow(s, -w[19])
        if r > 1 { increase = max(increase, 1) }
        return clampStability(s * increase)
    }

    func nextDifficulty(_ d: Double, _ r: Double) -> Double {
        let delta = -(w[6] * (r - 3))
        let damped = d + (10 - d) * delta / 9
        return clampDifficulty(w[7] * initialDifficulty(4) + (1 - w[7]) * damped)
    }

    func nextStability(difficulty d: Double, stability s: Double, retrievability rr: Double, rating: ReviewRating) -> Double {
        let next: Double
        if rating == .again {
            let longTerm = w[11] * pow(d, -w[12]) * (pow(s + 1, w[13]) - 1) * pow(M_E, (1 - rr) * w[14])
            let shortTerm = s / pow(M_E, w[17] * w[18])
            next = min(longTerm, shortTerm)
        } else {
            let hardPenalty = rating == .hard ? w[15] : 1
            let easyBonus = rating == .easy ? w[16] : 1
            next = s * (1 + pow(M_E, w[8]) * (11 - d) * pow(s, -w[9]) * (pow(M_E, (1 - rr) * w[10]) - 1) * hardPenalty * easyBonus)
        }
        return clampStability(next)
    }

    /// The reference's fuzz: intervals of 3+ days move within a band that widens with length.
    func fuzzedDays(_ days: Int, fuzz: Double) -> Int {
        guard Double(days) >= 2.5 else { return days }
        var delta = 1.0
        for (start, end, share) in [(2.5, 7.0, 0.15), (7.0, 20.0, 0.1), (20.0, Double.infinity, 0.05)] {
            delta += share * max(min(Double(days), end) - start, 0)
        }
        let upper = min(Int((Double(days) + delta).rounded(.toNearestOrEven)), maximumIntervalDays)
        let lower = min(max(2, Int((Double(days) - delta).rounded(.toNearestOrEven))), upper)
        let picked = fuzz * Double(upper - lower + 1) + Double(lower)
        return min(Int(picked.rounded(.toNearestOrEven)), maximumIntervalDays)
    }
}
