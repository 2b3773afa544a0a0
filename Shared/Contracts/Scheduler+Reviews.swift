import Foundation
import Wire

// Payloads of the scheduler's card and review methods (`cards.*`, `review.*`, `stats.*`).

/// A card to start review state for.
public struct ReviewCardAdd: Codable, Sendable, Equatable {
    /// Store's flashcard id.
    public var cardId: String
    public var setId: String?
    public var subjectId: String?
    public init(cardId: String, setId: String? = nil, subjectId: String? = nil) {
        self.cardId = cardId
        self.setId = setId
        self.subjectId = subjectId
    }
}

/// `cards.add`.
public struct CardsAddRequest: Codable, Sendable, Equatable {
    /// 1..1000 cards.
    public var cards: [ReviewCardAdd]
    public init(cards: [ReviewCardAdd]) { self.cards = cards }
}

/// `cards.add` response.
public struct CardsAddResponse: Codable, Sendable, Equatable {
    /// How many cards were new to the scheduler.
    public var added: Int
    public init(added: Int) { self.added = added }
}

/// `cards.remove`.
public struct CardsRemoveRequest: Codable, Sendable, Equatable {
    /// 1..1000 card ids.
    public var cardIds: [String]
    public init(cardIds: [String]) { self.cardIds = cardIds }
}

/// `cards.remove` response.
public struct CardsRemoveResponse: Codable, Sendable, Equatable {
    /// How many of them had review state.
    public var removed: Int
    public init(removed: Int) { self.removed = removed }
}

/// SM-2 state of a card (kept for every card, whichever algorithm is active).
public struct SM2State: Codable, Sendable, Equatable {
    /// Ease factor: starts at 2.5, never below 1.3.
    public var easeFactor: Double
    /// Current interval in days (0 before the first review).
    public var intervalDays: Int
    /// Successful reviews in a row (quality ≥ 3).
    public var repetitions: Int
    /// When SM-2 schedules the next review.
    public var dueAt: Date
    public init(easeFactor: Double, intervalDays: Int, repetitions: Int, dueAt: Date) {
        self.easeFactor = easeFactor
        self.intervalDays = intervalDays
        self.repetitions = repetitions
        self.dueAt = dueAt
    }
}

/// FSRS-6 state of a card (kept for every card, whichever algorithm is active).
public struct FSRSState: Codable, Sendable, Equatable {
    public var phase: FSRSPhase
    /// Learning or relearning step; null in the review phase.
    public var step: Int?
    /// Memory stability in days; null before the first review.
    public var stability: Double?
    /// Difficulty 1..10; null before the first review.
    public var difficulty: Double?
    /// When FSRS schedules the next review.
    public var dueAt: Date
    public init(phase: FSRSPhase, step: Int?, stability: Double?, difficulty: Double?, dueAt: Date) {
        self.phase = phase
        self.step = step
        self.stability = stability
        self.difficulty = difficulty
        self.dueAt = dueAt
    }
}

/// A card's review state.
public struct CardState: Codable, Sendable, Equatable {
    /// The card id (store's flashcard id).
    public var id: String
    public var userId: String
    public var setId: String?
    public var subjectId: String?
    /// The algorithm that decides `dueAt` (the set's choice, else the user's).
    public var algorithm: SchedulingAlgorithm
    /// When the card is due next.
    public var dueAt: Date
    public var reviewCount: Int
    /// Reviews rated `again` after the card had been recalled.
    public var lapses: Int
    public var lastReviewedAt: Date?
    public var lastRating: ReviewRating?
    public var mastery: MasteryLevel
    /// FSRS probability of recall now (0..1); null before the first review.
    public var retrievability: Double?
    public var sm2: SM2State
    public var fsrs: FSRSState
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, userId: String, setId: String?, subjectId: String?, algorithm: SchedulingAlgorithm, dueAt: Date,
                reviewCount: Int, lapses: Int, lastReviewedAt: Date?, lastRating: ReviewRating?, mastery: MasteryLevel,
                retrievability: Double?, sm2: SM2State, fsrs: FSRSState, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.setId = setId
        self.subjectId = subjectId
        self.algorithm = algorithm
        self.dueAt = dueAt
        self.reviewCount = reviewCount
        self.lapses = lapses
        self.lastReviewedAt = lastReviewedAt
        self.lastRating = lastRating
        self.mastery = mastery
        self.retrievability = retrievability
        self.sm2 = sm2
        self.fsrs = fsrs
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `review.record`.
public struct ReviewRecordRequest: Codable, Sendable, Equatable {
    public var cardId: String
    public var rating: ReviewRating
    /// When the review happened (default: now); not in the future, not before the last review.
    public var reviewedAt: Date?
    /// How long the review took, in seconds (optional, 0..3600).
    public var durationSeconds: Double?
    public init(cardId: String, rating: ReviewRating, reviewedAt: Date? = nil, durationSeconds: Double? = nil) {
        self.cardId = cardId
        self.rating = rating
        self.reviewedAt = reviewedAt
        self.durationSeconds = durationSeconds
    }
}

/// `review.record` response.
public struct ReviewResult: Codable, Sendable, Equatable {
    public var card: CardState
    /// The next due date (same as `card.dueAt`).
    public var nextDueAt: Date
    /// Days from this review to the next (fractional for learning steps).
    public var intervalDays: Double
    /// An encouraging line for the app to show.
    public var message: String
    public init(card: CardState, nextDueAt: Date, intervalDays: Double, message: String) {
        self.card = card
        self.nextDueAt = nextDueAt
        self.intervalDays = intervalDays
        self.message = message
    }
}

/// `review.due`.
public struct DueRequest: Codable, Sendable, Equatable {
    public var setId: String?
    public var subjectId: String?
    /// 1..1000, default 50.
    public var limit: Int?
    /// Due at this instant (default now).
    public var at: Date?
    public init(setId: String? = nil, subjectId: String? = nil, limit: Int? = nil, at: Date? = nil) {
        self.setId = setId
        self.subjectId = subjectId
        self.limit = limit
        self.at = at
    }
}

/// One due card.
public struct DueCard: Codable, Sendable, Equatable {
    public var cardId: String
    public var setId: String?
    public var subjectId: String?
    public var dueAt: Date
    public var algorithm: SchedulingAlgorithm
    public var mastery: MasteryLevel
    /// Whether the card has never been reviewed.
    public var isNew: Bool
    public init(cardId: String, setId: String?, subjectId: String?, dueAt: Date, algorithm: SchedulingAlgorithm, mastery: MasteryLevel, isNew: Bool) {
        self.cardId = cardId
        self.setId = setId
        self.subjectId = subjectId
        self.dueAt = dueAt
        self.algorithm = algorithm
        self.mastery = mastery
        self.isNew = isNew
    }
}

/// `review.due` response.
public struct DueResponse: Codable, Sendable, Equatable {
    /// Oldest-overdue first.
    public var cards: [DueCard]
    /// Whether more cards are due than the limit returned.
    public var hasMore: Bool
    public init(cards: [DueCard], hasMore: Bool) {
        self.cards = cards
        self.hasMore = hasMore
    }
}

/// `review.forecast`.
public struct ForecastRequest: Codable, Sendable, Equatable {
    /// 1..365.
    public var days: Int
    public var setId: String?
    public init(days: Int, setId: String? = nil) {
        self.days = days
        self.setId = setId
    }
}

/// Reviews due on one local day.
public struct ForecastDay: Codable, Sendable, Equatable {
    /// `YYYY-MM-DD` in the user's time zone.
    public var date: String
    public var count: Int
    public init(date: String, count: Int) {
        self.date = date
        self.count = count
    }
}

/// `review.forecast` response.
public struct ForecastResponse: Codable, Sendable, Equatable {
    public var timeZone: String
    /// From today; today's count includes overdue cards.
    public var days: [ForecastDay]
    public init(timeZone: String, days: [ForecastDay]) {
        self.timeZone = timeZone
        self.days = days
    }
}

/// `stats.streak` response.
public struct StudyStreak: Codable, Sendable, Equatable {
    /// Consecutive local days with a review, ending today (or yesterday, if today has none yet).
    public var currentDays: Int
    public var bestDays: Int
    public var reviewedToday: Bool
    /// `YYYY-MM-DD` of the latest day with a review.
    public var lastStudyDate: String?
    public var timeZone: String
    public var message: String
    public init(currentDays: Int, bestDays: Int, reviewedToday: Bool, lastStudyDate: String?, timeZone: String, message: String) {
        self.currentDays = currentDays
        self.bestDays = bestDays
        self.reviewedToday = reviewedToday
        self.lastStudyDate = lastStudyDate
        self.timeZone = timeZone
        self.message = message
    }
}

/// Cards per mastery level.
public struct MasteryCounts: Codable, Sendable, Equatable {
    public var learning: Int
    public var developing: Int
    public var proficient: Int
    public var mastered: Int
    public init(learning: Int = 0, developing: Int = 0, proficient: Int = 0, mastered: Int = 0) {
        self.learning = learning
        self.developing = developing
        self.proficient = proficient
        self.mastered = mastered
    }
}

/// `stats.set` response.
public struct SetStatistics: Codable, Sendable, Equatable {
    public var setId: String
    public var cards: Int
    public var newCards: Int
    public var dueNow: Int
    public var reviews: Int
    /// Share of reviews not rated `again` (0..1); null without reviews.
    public var accuracy: Double?
    /// Mean SM-2 ease factor of reviewed cards.
    public var averageEase: Double?
    /// Mean FSRS retrievability now of reviewed cards.
    public var averageRetrievability: Double?
    public var mastery: MasteryCounts
    public init(setId: String, cards: Int, newCards: Int, dueNow: Int, reviews: Int, accuracy: Double?, averageEase: Double?,
                averageRetrievability: Double?, mastery: MasteryCounts) {
        self.setId = setId
        self.cards = cards
        self.newCards = newCards
        self.dueNow = dueNow
        self.reviews = reviews
        self.accuracy = accuracy
        self.averageEase = averageEase
        self.averageRetrievability = averageRetrievability
        self.mastery = mastery
    }
}

/// `review.count`: a time range, `from` included, `to` not.
public struct ReviewCountRequest: Codable, Sendable, Equatable {
    public var from: Date
    public var to: Date
    public init(from: Date, to: Date) {
        self.from = from
        self.to = to
    }
}

/// `review.count` response.
public struct ReviewCount: Codable, Sendable, Equatable {
    /// Reviews recorded in the range (an undone review is not counted).
    public var reviews: Int
    public init(reviews: Int) { self.reviews = reviews }
}

// MARK: Review history (store's `.apkg` export and import)

/// `review.history`: cards' review state with their review log.
public struct ReviewHistoryRequest: Codable, Sendable, Equatable {
    /// 1..1000 card ids; cards without review state are left out of the response.
    public var cardIds: [String]
    public init(cardIds: [String]) { self.cardIds = cardIds }
}

/// One review of a card's log, with the scheduling it led to.
public struct ReviewHistoryEntry: Codable, Sendable, Equatable {
    public var rating: ReviewRating
    public var reviewedAt: Date
    public var durationSeconds: Double?
    /// Where the card was when it was reviewed: `learning` (never recalled yet), `review`, or
    /// `relearning` (forgotten since its last recall), under the card's active algorithm.
    public var phase: FSRSPhase
    /// Days from this review to the due date it set (fractional for learning steps).
    public var intervalDays: Double
    /// The interval the card had before this review (0 before its first).
    public var previousIntervalDays: Double
    /// The SM-2 ease factor after this review.
    public var easeFactor: Double
    public init(rating: ReviewRating, reviewedAt: Date, durationSeconds: Double?, phase: FSRSPhase, intervalDays: Double,
                previousIntervalDays: Double, easeFactor: Double) {
        self.rating = rating
        self.reviewedAt = reviewedAt
        self.durationSeconds = durationSeconds
        self.phase = phase
        self.intervalDays = intervalDays
        self.previousIntervalDays = previousIntervalDays
        self.easeFactor = easeFactor
    }
}

/// A card's state and its reviews, oldest first.
public struct CardHistory: Codable, Sendable, Equatable {
    public var card: CardState
    public var reviews: [ReviewHistoryEntry]
    public init(card: CardState, reviews: [ReviewHistoryEntry]) {
        self.card = card
        self.reviews = reviews
    }
}

/// `review.history` response.
public struct ReviewHistoryResponse: Codable, Sendable, Equatable {
    /// In the order asked, without cards that have no review state.
    public var cards: [CardHistory]
    public init(cards: [CardHistory]) { self.cards = cards }
}

/// One review to replay.
public struct ReviewImportEntry: Codable, Sendable, Equatable {
    public var rating: ReviewRating
    /// Not in the future; a card's reviews in time order.
    public var reviewedAt: Date
    /// 0..3600 seconds.
    public var durationSeconds: Double?
    public init(rating: ReviewRating, reviewedAt: Date, durationSeconds: Double? = nil) {
        self.rating = rating
        self.reviewedAt = reviewedAt
        self.durationSeconds = durationSeconds
    }
}

/// A card and the reviews it had elsewhere.
public struct ReviewImportCard: Codable, Sendable, Equatable {
    public var cardId: String
    public var setId: String?
    public var subjectId: String?
    /// Oldest first; at most ``SchedulerLimits/reviewsPerCall`` over the request.
    public var reviews: [ReviewImportEntry]
    public init(cardId: String, setId: String? = nil, subjectId: String? = nil, reviews: [ReviewImportEntry]) {
        self.cardId = cardId
        self.setId = setId
        self.subjectId = subjectId
        self.reviews = reviews
    }
}

/// `review.import`.
public struct ReviewImportRequest: Codable, Sendable, Equatable {
    /// 1..1000 cards.
    public var cards: [ReviewImportCard]
    public init(cards: [ReviewImportCard]) { self.cards = cards }
}

/// `review.import` response.
public struct ReviewImportResponse: Codable, Sendable, Equatable {
    /// Cards whose reviews were replayed (a card without reviews counts when it was added).
    public var replayed: Int
    /// Cards left as they were because they already had reviews (an earlier import, or the
    /// user studied them since): importing again changes nothing.
    public var alreadyReviewed: Int
    public init(replayed: Int, alreadyReviewed: Int) {
        self.replayed = replayed
        self.alreadyReviewed = alreadyReviewed
    }
}

/// Bounds of the scheduler's service methods.
public enum SchedulerLimits {
    /// Cards per `review.history` and `review.import`.
    public static let cardsPerCall = 1000
    /// Reviews per `review.history` response and per `review.import` request.
    public static let reviewsPerCall = 50_000
}
