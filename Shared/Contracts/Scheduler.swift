import Foundation
import Wire

// The scheduler decides *when* things are due: spaced-repetition review state per flashcard,
// habit systems with their tasks and check-ins, performance tests, study plans, and users'
// reminder preferences. Local calendar values travel as strings: dates `YYYY-MM-DD`, times of
// day `HH:MM` (24 h), time zones as IANA names (`Europe/Rome`). Instants are ISO 8601 UTC.

/// The scheduler's methods and events. Callers use the global ``Scheduler``.
public struct SchedulerContract: ServiceContract {
    public static let serviceName = "scheduler"

    // MARK: Settings

    /// The user's scheduling and reminder settings (defaults until changed).
    public let getSettings = Method<Empty, SchedulerSettings>(
        "scheduler", "settings.get", "The user's time zone, algorithm and reminder settings.")
    /// Changes some of the user's settings; fields left out keep their value.
    public let updateSettings = Method<SettingsUpdate, SchedulerSettings>(
        "scheduler", "settings.update", "Changes the user's time zone, algorithm or reminder settings; omitted fields stay.")
    /// Chooses the algorithm (and FSRS retention) for one set, overriding the user's default.
    public let configureSet = Method<SetConfiguration, SetConfiguration>(
        "scheduler", "sets.configure", "Sets a set's algorithm (sm2|fsrs) and desired retention; null algorithm follows the user.")

    // MARK: Cards and reviews

    /// Starts review state for cards (new, due now). Store's `flashcard.created` does the same.
    public let addCards = Method<CardsAddRequest, CardsAddResponse>(
        "scheduler", "cards.add", "Starts review state for up to 1000 cards (new, due now); existing cards are left as they are.")
    /// Drops a card's review state and log. Store's `flashcard.deleted` does the same.
    public let removeCards = Method<CardsRemoveRequest, CardsRemoveResponse>(
        "scheduler", "cards.remove", "Drops the review state and log of up to 1000 cards.")
    /// One card's state and mastery level.
    public let cardState = Method<ReviewCardID, CardState>(
        "scheduler", "cards.state", "A card's review state, due date and mastery level.")
    /// Records a review: updates the card's state and returns the next due date.
    public let recordReview = Method<ReviewRecordRequest, ReviewResult>(
        "scheduler", "review.record", "Records a review (again|hard|good|easy) and returns the card's next due date.")
    /// Reverts the last review of a card.
    public let undoReview = Method<ReviewCardID, CardState>(
        "scheduler", "review.undo", "Reverts the card's last review, restoring its earlier state.")
    /// Due cards, oldest-overdue first.
    public let dueCards = Method<DueRequest, DueResponse>(
        "scheduler", "review.due", "Cards due now (or at 'at'), oldest-overdue first, optionally per set or subject.")
    /// Reviews due per local day for the next N days.
    public let forecast = Method<ForecastRequest, ForecastResponse>(
        "scheduler", "review.forecast", "Number of reviews due per local day for the next 1..365 days (today includes overdue).")
    /// The user's study streak.
    public let studyStreak = Method<Empty, StudyStreak>(
        "scheduler", "stats.streak", "Consecutive local days with at least one review: current and best.")
    /// Statistics of one set.
    public let setStatistics = Method<ReviewSetID, SetStatistics>(
        "scheduler", "stats.set", "A set's cards, reviews, accuracy, average ease and retrievability, mastery counts.")

    // MARK: Study plans

    /// Spreads a set's new cards over the days until a target date, keeping the workload level.
    public let createPlan = Method<PlanCreateRequest, StudyPlan>(
        "scheduler", "plan.create", "Spreads a set's new cards over the days until targetDate so the daily workload stays level.")
    /// A plan.
    public let getPlan = Method<StudyPlanID, StudyPlan>(
        "scheduler", "plan.get", "A study plan with its days.")
    /// A plan and its study sessions as an iCalendar file (RFC 5545) in the attachment frame.
    public let planCalendar = Method<StudyPlanID, PlanCalendar>(
        "scheduler", "plan.ics", "The plan's study sessions as an iCalendar (RFC 5545) file in the attachment frame.")

    // MARK: Habits

    /// Creates a habit system.
    public let createSystem = Method<HabitSystemCreate, HabitSystem>(
        "scheduler", "habits.systems.create", "Creates a habit system (name, the identity it builds, category).")
    /// The user's systems with their tasks.
    public let listSystems = Method<Empty, HabitSystemList>(
        "scheduler", "habits.systems.list", "The user's habit systems with their tasks.")
    /// Deletes a system with its tasks, check-ins and tests.
    public let deleteSystem = Method<HabitSystemID, Empty>(
        "scheduler", "habits.systems.delete", "Deletes a habit system with its tasks, check-ins and tests.")
    /// Creates a task in a system.
    public let createTask = Method<HabitTaskCreate, HabitTask>(
        "scheduler", "habits.tasks.create", "Creates a task: frequency daily or weekdays, the four laws, optional reminder time.")
    /// Replaces a task's editable fields (last write wins).
    public let updateTask = Method<HabitTaskUpdate, HabitTask>(
        "scheduler", "habits.tasks.update", "Replaces a task's name, frequency, four laws fields and reminder time.")
    /// Deletes a task and its check-ins.
    public let deleteTask = Method<HabitTaskID, Empty>(
        "scheduler", "habits.tasks.delete", "Deletes a task and its check-ins.")
    /// Checks a task in for a local date (repeating it updates the note).
    public let checkIn = Method<CheckInRequest, CheckInResult>(
        "scheduler", "habits.checkIn", "Checks a task in for a local date with an optional note; returns the streak.")
    /// Removes a check-in.
    public let undoCheckIn = Method<CheckInUndoRequest, HabitTaskStats>(
        "scheduler", "habits.undo", "Removes the task's check-in for a local date.")
    /// Streaks and completion rates per task and per system.
    public let habitStats = Method<HabitStatsRequest, HabitStats>(
        "scheduler", "habits.stats", "Current and best streaks, completion today, over 7 and 30 days, per task and system.")

    // MARK: Performance tests

    /// Creates a performance test.
    public let createTest = Method<PerformanceTestCreate, PerformanceTest>(
        "scheduler", "tests.create", "Creates a performance test (name, unit, higher-is-better, every N days).")
    /// Records a test entry.
    public let recordTest = Method<TestEntryCreate, PerformanceTest>(
        "scheduler", "tests.record", "Records a test result for a local date.")
    /// The user's tests with their entries.
    public let listTests = Method<Empty, PerformanceTestList>(
        "scheduler", "tests.list", "The user's performance tests with their entries.")
    /// Tests due today or overdue.
    public let dueTests = Method<Empty, PerformanceTestList>(
        "scheduler", "tests.due", "Tests due on or before the user's local today.")
    /// Deletes a test and its entries.
    public let deleteTest = Method<PerformanceTestID, Empty>(
        "scheduler", "tests.delete", "Deletes a performance test and its entries.")

    // MARK: Events (durable: outbox, per-stream seq, `_events.replay`)

    /// Daily digest at the user's review reminder time when cards are due.
    public let reviewDue = Topic<ReviewDueEvent>(
        "review.due", "Daily digest at the user's review reminder time: how many cards are due.")
    /// A habit task's reminder time came and it is not checked in yet.
    public let habitDue = Topic<HabitDueEvent>(
        "habit.due", "A task's reminder time came on a scheduled day and it is not checked in yet.")
    /// A performance test is due (sent at the user's test reminder time).
    public let testDue = Topic<TestDueEvent>(
        "test.due", "A performance test is due today (sent at the user's test reminder time).")

    public init() {}
}

/// The scheduler's contract: `bus.call(Scheduler.recordReview, …)`.
public let Scheduler = SchedulerContract()

// MARK: - Shared values

/// A review rating. SM-2 maps them to quality again 1, hard 3, good 4, easy 5.
public enum ReviewRating: String, WireEnum {
    case again, hard, good, easy
}

/// A spaced-repetition algorithm.
public enum SchedulingAlgorithm: String, WireEnum {
    /// SuperMemo 2, the default.
    case sm2
    /// FSRS-6 with the 21 default parameters.
    case fsrs
}

/// How well a card is known, from its current interval.
public enum MasteryLevel: String, WireEnum {
    /// Not yet recalled, or last forgotten: interval under 1 day.
    case learning
    /// Interval of 1 to 6 days.
    case developing
    /// Interval of 7 to 20 days.
    case proficient
    /// Interval of 21 days or more (Anki's "mature").
    case mastered
}

/// A card in FSRS's learning phases.
public enum FSRSPhase: String, WireEnum {
    case learning, review, relearning
}

/// A card id.
public struct ReviewCardID: Codable, Sendable, Equatable {
    public var cardId: String
    public init(cardId: String) { self.cardId = cardId }
}

/// A set id.
public struct ReviewSetID: Codable, Sendable, Equatable {
    public var setId: String
    public init(setId: String) { self.setId = setId }
}

// MARK: - Settings

/// A user's scheduler settings.
public struct SchedulerSettings: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    /// IANA time zone used for local days, streaks and reminders (default `UTC`).
    public var timeZone: String
    /// The default algorithm for the user's cards (default `sm2`).
    public var algorithm: SchedulingAlgorithm
    /// FSRS desired retention, 0.70..0.99 (default 0.9).
    public var desiredRetention: Double
    /// Whether FSRS review intervals get a small random fuzz (default false).
    public var fuzzing: Bool
    /// Whether reminder events are published for this user (default true).
    public var remindersEnabled: Bool
    /// Local time of the daily `review.due` digest, `HH:MM` (default `08:00`); null turns it off.
    public var reviewReminderTime: String?
    /// Local time of `test.due` reminders, `HH:MM` (default `09:00`); null turns them off.
    public var testReminderTime: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, userId: String, timeZone: String, algorithm: SchedulingAlgorithm, desiredRetention: Double, fuzzing: Bool,
                remindersEnabled: Bool, reviewReminderTime: String?, testReminderTime: String?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.timeZone = timeZone
        self.algorithm = algorithm
        self.desiredRetention = desiredRetention
        self.fuzzing = fuzzing
        self.remindersEnabled = remindersEnabled
        self.reviewReminderTime = reviewReminderTime
        self.testReminderTime = testReminderTime
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `settings.update`: only the fields present change. To turn a reminder off, set
/// `clearReviewReminder` or `clearTestReminder`.
public struct SettingsUpdate: Codable, Sendable, Equatable {
    public var timeZone: String?
    public var algorithm: SchedulingAlgorithm?
    public var desiredRetention: Double?
    public var fuzzing: Bool?
    public var remindersEnabled: Bool?
    public var reviewReminderTime: String?
    public var testReminderTime: String?
    public var clearReviewReminder: Bool?
    public var clearTestReminder: Bool?

    public init(timeZone: String? = nil, algorithm: SchedulingAlgorithm? = nil, desiredRetention: Double? = nil, fuzzing: Bool? = nil,
                remindersEnabled: Bool? = nil, reviewReminderTime: String? = nil, testReminderTime: String? = nil,
                clearReviewReminder: Bool? = nil, clearTestReminder: Bool? = nil) {
        self.timeZone = timeZone
        self.algorithm = algorithm
        self.desiredRetention = desiredRetention
        self.fuzzing = fuzzing
        self.remindersEnabled = remindersEnabled
        self.reviewReminderTime = reviewReminderTime
        self.testReminderTime = testReminderTime
        self.clearReviewReminder = clearReviewReminder
        self.clearTestReminder = clearTestReminder
    }
}

/// A set's own algorithm choice; `algorithm` null means "follow the user's setting".
public struct SetConfiguration: Codable, Sendable, Equatable {
    public var setId: String
    public var algorithm: SchedulingAlgorithm?
    /// FSRS desired retention for this set, 0.70..0.99; null follows the user's.
    public var desiredRetention: Double?
    public init(setId: String, algorithm: SchedulingAlgorithm?, desiredRetention: Double? = nil) {
        self.setId = setId
        self.algorithm = algorithm
        self.desiredRetention = desiredRetention
    }
}

// MARK: - Cards

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

// MARK: - Study plans

/// `plan.create`.
public struct PlanCreateRequest: Codable, Sendable, Equatable {
    public var setId: String
    /// Last day of the plan, `YYYY-MM-DD`, today..today+365.
    public var targetDate: String
    /// First day (default: the user's today).
    public var startDate: String?
    /// Local start time of each day's study session, `HH:MM` (default `18:00`).
    public var sessionTime: String?
    /// Minutes per session, 5..480 (default 30).
    public var sessionMinutes: Int?
    public var title: String?
    public init(setId: String, targetDate: String, startDate: String? = nil, sessionTime: String? = nil, sessionMinutes: Int? = nil, title: String? = nil) {
        self.setId = setId
        self.targetDate = targetDate
        self.startDate = startDate
        self.sessionTime = sessionTime
        self.sessionMinutes = sessionMinutes
        self.title = title
    }
}

/// A plan id.
public struct StudyPlanID: Codable, Sendable, Equatable {
    public var planId: String
    public init(planId: String) { self.planId = planId }
}

/// One day of a plan.
public struct PlanDay: Codable, Sendable, Equatable {
    public var date: String
    /// New cards introduced that day.
    public var newCards: Int
    /// Reviews expected that day (already scheduled plus those the plan's new cards cause).
    public var expectedReviews: Int
    /// Session start in UTC.
    public var sessionStart: Date
    public init(date: String, newCards: Int, expectedReviews: Int, sessionStart: Date) {
        self.date = date
        self.newCards = newCards
        self.expectedReviews = expectedReviews
        self.sessionStart = sessionStart
    }
}

/// A study plan.
public struct StudyPlan: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var setId: String
    public var title: String
    public var startDate: String
    public var targetDate: String
    public var timeZone: String
    public var sessionTime: String
    public var sessionMinutes: Int
    public var newCards: Int
    public var days: [PlanDay]
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, setId: String, title: String, startDate: String, targetDate: String, timeZone: String,
                sessionTime: String, sessionMinutes: Int, newCards: Int, days: [PlanDay], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.setId = setId
        self.title = title
        self.startDate = startDate
        self.targetDate = targetDate
        self.timeZone = timeZone
        self.sessionTime = sessionTime
        self.sessionMinutes = sessionMinutes
        self.newCards = newCards
        self.days = days
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `plan.ics` response; the file itself is the attachment frame.
public struct PlanCalendar: Codable, Sendable, Equatable {
    public var planId: String
    public var contentType: String
    public var fileName: String
    public var events: Int
    public init(planId: String, contentType: String, fileName: String, events: Int) {
        self.planId = planId
        self.contentType = contentType
        self.fileName = fileName
        self.events = events
    }
}

// MARK: - Habits

/// How often a task is scheduled.
public enum FrequencyKind: String, WireEnum {
    case daily, weekdays
}

/// A task's frequency: every day, or specific ISO weekdays (1 Monday … 7 Sunday).
public struct HabitFrequency: Codable, Sendable, Equatable {
    public var kind: FrequencyKind
    /// For `weekdays`: 1..7, at least one.
    public var weekdays: [Int]?
    public init(kind: FrequencyKind, weekdays: [Int]? = nil) {
        self.kind = kind
        self.weekdays = weekdays
    }
    /// Every day.
    public static let daily = HabitFrequency(kind: .daily)
    /// On the given ISO weekdays.
    public static func on(_ weekdays: [Int]) -> HabitFrequency { HabitFrequency(kind: .weekdays, weekdays: weekdays) }
}

/// `habits.systems.create`.
public struct HabitSystemCreate: Codable, Sendable, Equatable {
    /// 1..200 characters.
    public var name: String
    /// The identity the system builds ("I am a runner"), up to 500 characters.
    public var identity: String?
    /// Up to 100 characters.
    public var category: String?
    public init(name: String, identity: String? = nil, category: String? = nil) {
        self.name = name
        self.identity = identity
        self.category = category
    }
}

/// A system id.
public struct HabitSystemID: Codable, Sendable, Equatable {
    public var systemId: String
    public init(systemId: String) { self.systemId = systemId }
}

/// A task id.
public struct HabitTaskID: Codable, Sendable, Equatable {
    public var taskId: String
    public init(taskId: String) { self.taskId = taskId }
}

/// A habit system with its tasks.
public struct HabitSystem: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var name: String
    public var identity: String?
    public var category: String?
    public var tasks: [HabitTask]
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, name: String, identity: String?, category: String?, tasks: [HabitTask], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.name = name
        self.identity = identity
        self.category = category
        self.tasks = tasks
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `habits.systems.list` response.
public struct HabitSystemList: Codable, Sendable, Equatable {
    public var systems: [HabitSystem]
    public init(systems: [HabitSystem]) { self.systems = systems }
}

/// The four laws of behaviour change, each optional (up to 500 characters).
public struct FourLaws: Codable, Sendable, Equatable {
    /// Make it obvious.
    public var cue: String?
    /// Make it attractive.
    public var attractiveness: String?
    /// Make it easy.
    public var ease: String?
    /// Make it satisfying.
    public var reward: String?
    public init(cue: String? = nil, attractiveness: String? = nil, ease: String? = nil, reward: String? = nil) {
        self.cue = cue
        self.attractiveness = attractiveness
        self.ease = ease
        self.reward = reward
    }
}

/// `habits.tasks.create`.
public struct HabitTaskCreate: Codable, Sendable, Equatable {
    public var systemId: String
    /// 1..200 characters.
    public var name: String
    public var frequency: HabitFrequency
    public var laws: FourLaws?
    /// Local reminder time `HH:MM`; null for none.
    public var reminderTime: String?
    public init(systemId: String, name: String, frequency: HabitFrequency, laws: FourLaws? = nil, reminderTime: String? = nil) {
        self.systemId = systemId
        self.name = name
        self.frequency = frequency
        self.laws = laws
        self.reminderTime = reminderTime
    }
}

/// `habits.tasks.update`: replaces the editable fields.
public struct HabitTaskUpdate: Codable, Sendable, Equatable {
    public var taskId: String
    public var name: String
    public var frequency: HabitFrequency
    public var laws: FourLaws?
    public var reminderTime: String?
    public init(taskId: String, name: String, frequency: HabitFrequency, laws: FourLaws? = nil, reminderTime: String? = nil) {
        self.taskId = taskId
        self.name = name
        self.frequency = frequency
        self.laws = laws
        self.reminderTime = reminderTime
    }
}

/// A habit task.
public struct HabitTask: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var systemId: String
    public var name: String
    public var frequency: HabitFrequency
    public var laws: FourLaws
    public var reminderTime: String?
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, systemId: String, name: String, frequency: HabitFrequency, laws: FourLaws, reminderTime: String?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.systemId = systemId
        self.name = name
        self.frequency = frequency
        self.laws = laws
        self.reminderTime = reminderTime
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `habits.checkIn`.
public struct CheckInRequest: Codable, Sendable, Equatable {
    public var taskId: String
    /// Local date `YYYY-MM-DD`, not after the user's today.
    public var date: String
    /// Up to 1000 characters.
    public var note: String?
    public init(taskId: String, date: String, note: String? = nil) {
        self.taskId = taskId
        self.date = date
        self.note = note
    }
}

/// `habits.undo`.
public struct CheckInUndoRequest: Codable, Sendable, Equatable {
    public var taskId: String
    public var date: String
    public init(taskId: String, date: String) {
        self.taskId = taskId
        self.date = date
    }
}

/// A check-in.
public struct CheckIn: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var taskId: String
    public var date: String
    public var note: String?
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, taskId: String, date: String, note: String?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.taskId = taskId
        self.date = date
        self.note = note
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// Completion over a window: scheduled days and the ones checked in.
public struct CompletionRate: Codable, Sendable, Equatable {
    public var scheduled: Int
    public var completed: Int
    /// completed / scheduled, or null when nothing was scheduled.
    public var rate: Double?
    public init(scheduled: Int, completed: Int) {
        self.scheduled = scheduled
        self.completed = completed
        self.rate = scheduled == 0 ? nil : Double(completed) / Double(scheduled)
    }
}

/// A task's streaks and completion.
public struct HabitTaskStats: Codable, Sendable, Equatable {
    public var taskId: String
    public var name: String
    /// Consecutive scheduled days checked in, ending today (or the last scheduled day before, if today is still open).
    public var currentStreak: Int
    public var bestStreak: Int
    public var scheduledToday: Bool
    public var doneToday: Bool
    public var today: CompletionRate
    public var last7Days: CompletionRate
    public var last30Days: CompletionRate
    public init(taskId: String, name: String, currentStreak: Int, bestStreak: Int, scheduledToday: Bool, doneToday: Bool,
                today: CompletionRate, last7Days: CompletionRate, last30Days: CompletionRate) {
        self.taskId = taskId
        self.name = name
        self.currentStreak = currentStreak
        self.bestStreak = bestStreak
        self.scheduledToday = scheduledToday
        self.doneToday = doneToday
        self.today = today
        self.last7Days = last7Days
        self.last30Days = last30Days
    }
}

/// `habits.checkIn` response.
public struct CheckInResult: Codable, Sendable, Equatable {
    public var checkIn: CheckIn
    public var stats: HabitTaskStats
    /// An encouraging line for the app to show.
    public var message: String
    public init(checkIn: CheckIn, stats: HabitTaskStats, message: String) {
        self.checkIn = checkIn
        self.stats = stats
        self.message = message
    }
}

/// `habits.stats`: one system's tasks, or all of the user's when `systemId` is null.
public struct HabitStatsRequest: Codable, Sendable, Equatable {
    public var systemId: String?
    public init(systemId: String? = nil) { self.systemId = systemId }
}

/// A system's completion, summed over its tasks.
public struct HabitSystemStats: Codable, Sendable, Equatable {
    public var systemId: String
    public var name: String
    public var today: CompletionRate
    public var last7Days: CompletionRate
    public var last30Days: CompletionRate
    public var tasks: [HabitTaskStats]
    public init(systemId: String, name: String, today: CompletionRate, last7Days: CompletionRate, last30Days: CompletionRate, tasks: [HabitTaskStats]) {
        self.systemId = systemId
        self.name = name
        self.today = today
        self.last7Days = last7Days
        self.last30Days = last30Days
        self.tasks = tasks
    }
}

/// `habits.stats` response.
public struct HabitStats: Codable, Sendable, Equatable {
    /// The user's local today, `YYYY-MM-DD`.
    public var date: String
    public var timeZone: String
    public var systems: [HabitSystemStats]
    public var message: String
    public init(date: String, timeZone: String, systems: [HabitSystemStats], message: String) {
        self.date = date
        self.timeZone = timeZone
        self.systems = systems
        self.message = message
    }
}

// MARK: - Performance tests

/// `tests.create`.
public struct PerformanceTestCreate: Codable, Sendable, Equatable {
    /// The system it measures, optional.
    public var systemId: String?
    /// 1..200 characters.
    public var name: String
    /// e.g. `km`, `reps`, `minutes`; up to 50 characters.
    public var unit: String
    public var higherIsBetter: Bool
    /// 1..365.
    public var everyDays: Int
    public init(systemId: String? = nil, name: String, unit: String, higherIsBetter: Bool, everyDays: Int) {
        self.systemId = systemId
        self.name = name
        self.unit = unit
        self.higherIsBetter = higherIsBetter
        self.everyDays = everyDays
    }
}

/// A test id.
public struct PerformanceTestID: Codable, Sendable, Equatable {
    public var testId: String
    public init(testId: String) { self.testId = testId }
}

/// `tests.record`.
public struct TestEntryCreate: Codable, Sendable, Equatable {
    public var testId: String
    /// A finite number.
    public var value: Double
    /// Local date `YYYY-MM-DD` (default today), not after today.
    public var date: String?
    public var note: String?
    public init(testId: String, value: Double, date: String? = nil, note: String? = nil) {
        self.testId = testId
        self.value = value
        self.date = date
        self.note = note
    }
}

/// One test result.
public struct PerformanceTestEntry: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var testId: String
    public var date: String
    public var value: Double
    public var note: String?
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, testId: String, date: String, value: Double, note: String?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.testId = testId
        self.date = date
        self.value = value
        self.note = note
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A performance test with its entries (oldest first).
public struct PerformanceTest: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var systemId: String?
    public var name: String
    public var unit: String
    public var higherIsBetter: Bool
    public var everyDays: Int
    /// Local date it is next due: the last entry's date + everyDays, or the creation day.
    public var dueDate: String
    /// The best value so far, by `higherIsBetter`.
    public var best: Double?
    public var entries: [PerformanceTestEntry]
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, systemId: String?, name: String, unit: String, higherIsBetter: Bool, everyDays: Int,
                dueDate: String, best: Double?, entries: [PerformanceTestEntry], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.systemId = systemId
        self.name = name
        self.unit = unit
        self.higherIsBetter = higherIsBetter
        self.everyDays = everyDays
        self.dueDate = dueDate
        self.best = best
        self.entries = entries
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `tests.list` and `tests.due` response.
public struct PerformanceTestList: Codable, Sendable, Equatable {
    public var tests: [PerformanceTest]
    public init(tests: [PerformanceTest]) { self.tests = tests }
}

// MARK: - Reminder events

/// When and where a reminder is meant for: the user's local date and time in their time zone.
public struct ReminderTiming: Codable, Sendable, Equatable {
    /// Local date, `YYYY-MM-DD`.
    public var localDate: String
    /// Local time the reminder was set for, `HH:MM`.
    public var localTime: String
    /// IANA time zone.
    public var timeZone: String
    /// The instant of `localDate` `localTime` in `timeZone` (UTC).
    public var scheduledFor: Date
    /// Whether it is sent late (the scheduler was down at `scheduledFor`; sent once on start, same local day).
    public var late: Bool
    public init(localDate: String, localTime: String, timeZone: String, scheduledFor: Date, late: Bool) {
        self.localDate = localDate
        self.localTime = localTime
        self.timeZone = timeZone
        self.scheduledFor = scheduledFor
        self.late = late
    }
}

/// `review.due`: the daily review digest.
public struct ReviewDueEvent: Codable, Sendable, Equatable {
    /// Stable per user and local day (`review.due:<user>:<date>`): use it to deduplicate.
    public var reminderId: String
    public var userId: String
    /// Cards due by the end of the local day (overdue included).
    public var dueCount: Int
    /// Of those, cards due before today started.
    public var overdueCount: Int
    /// Of those, never-reviewed cards.
    public var newCount: Int
    /// The user's current study streak in days.
    public var streakDays: Int
    public var timing: ReminderTiming
    /// Suggested notification title and body (encouraging).
    public var title: String
    public var body: String
    public init(reminderId: String, userId: String, dueCount: Int, overdueCount: Int, newCount: Int, streakDays: Int, timing: ReminderTiming, title: String, body: String) {
        self.reminderId = reminderId
        self.userId = userId
        self.dueCount = dueCount
        self.overdueCount = overdueCount
        self.newCount = newCount
        self.streakDays = streakDays
        self.timing = timing
        self.title = title
        self.body = body
    }
}

/// `habit.due`: a task's reminder.
public struct HabitDueEvent: Codable, Sendable, Equatable {
    /// Stable per task and local day (`habit.due:<task>:<date>`).
    public var reminderId: String
    public var userId: String
    public var taskId: String
    public var taskName: String
    public var systemId: String
    public var systemName: String
    public var identity: String?
    public var cue: String?
    public var currentStreak: Int
    public var timing: ReminderTiming
    public var title: String
    public var body: String
    public init(reminderId: String, userId: String, taskId: String, taskName: String, systemId: String, systemName: String, identity: String?,
                cue: String?, currentStreak: Int, timing: ReminderTiming, title: String, body: String) {
        self.reminderId = reminderId
        self.userId = userId
        self.taskId = taskId
        self.taskName = taskName
        self.systemId = systemId
        self.systemName = systemName
        self.identity = identity
        self.cue = cue
        self.currentStreak = currentStreak
        self.timing = timing
        self.title = title
        self.body = body
    }
}

/// `test.due`: a performance test's reminder.
public struct TestDueEvent: Codable, Sendable, Equatable {
    /// Stable per test and local day (`test.due:<test>:<date>`).
    public var reminderId: String
    public var userId: String
    public var testId: String
    public var testName: String
    public var unit: String
    /// The date the test fell due (today or earlier).
    public var dueDate: String
    public var lastValue: Double?
    public var lastDate: String?
    public var best: Double?
    public var timing: ReminderTiming
    public var title: String
    public var body: String
    public init(reminderId: String, userId: String, testId: String, testName: String, unit: String, dueDate: String, lastValue: Double?,
                lastDate: String?, best: Double?, timing: ReminderTiming, title: String, body: String) {
        self.reminderId = reminderId
        self.userId = userId
        self.testId = testId
        self.testName = testName
        self.unit = unit
        self.dueDate = dueDate
        self.lastValue = lastValue
        self.lastDate = lastDate
        self.best = best
        self.timing = timing
        self.title = title
        self.body = body
    }
}
