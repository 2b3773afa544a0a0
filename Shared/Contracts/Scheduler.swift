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
        Self.self, "settings.get", "The user's time zone, algorithm and reminder settings.", audience: .app)
    /// Changes some of the user's settings; fields left out keep their value.
    public let updateSettings = Method<SettingsUpdate, SchedulerSettings>(
        Self.self, "settings.update", "Changes the user's time zone, algorithm or reminder settings; omitted fields stay.", audience: .app)
    /// Chooses the algorithm (and FSRS retention) for one set, overriding the user's default.
    public let configureSet = Method<SetConfiguration, SetConfiguration>(
        Self.self, "sets.configure", "Sets a set's algorithm (sm2|fsrs) and desired retention; null algorithm follows the user.", audience: .app)

    // MARK: Cards and reviews

    /// Starts review state for cards (new, due now). Store's `flashcard.created` does the same.
    public let addCards = Method<CardsAddRequest, CardsAddResponse>(
        Self.self, "cards.add", "Starts review state for up to 1000 cards (new, due now); existing cards are left as they are.", audience: .service)
    /// Drops a card's review state and log. Store's `flashcard.deleted` does the same.
    public let removeCards = Method<CardsRemoveRequest, CardsRemoveResponse>(
        Self.self, "cards.remove", "Drops the review state and log of up to 1000 cards.", audience: .service)
    /// One card's state and mastery level.
    public let cardState = Method<ReviewCardID, CardState>(
        Self.self, "cards.state", "A card's review state, due date and mastery level.", audience: .app)
    /// Records a review: updates the card's state and returns the next due date.
    public let recordReview = Method<ReviewRecordRequest, ReviewResult>(
        Self.self, "review.record", "Records a review (again|hard|good|easy) and returns the card's next due date.", audience: .app)
    /// Reverts the last review of a card.
    public let undoReview = Method<ReviewCardID, CardState>(
        Self.self, "review.undo", "Reverts the card's last review, restoring its earlier state.", audience: .app)
    /// Due cards, oldest-overdue first.
    public let dueCards = Method<DueRequest, DueResponse>(
        Self.self, "review.due", "Cards due now (or at 'at'), oldest-overdue first, optionally per set or subject.", audience: .app)
    /// Reviews due per local day for the next N days.
    public let forecast = Method<ForecastRequest, ForecastResponse>(
        Self.self, "review.forecast", "Number of reviews due per local day for the next 1..365 days (today includes overdue).", audience: .app)
    /// The user's study streak.
    public let studyStreak = Method<Empty, StudyStreak>(
        Self.self, "stats.streak", "Consecutive local days with at least one review: current and best.", audience: .app)
    /// Statistics of one set.
    public let setStatistics = Method<ReviewSetID, SetStatistics>(
        Self.self, "stats.set", "A set's cards, reviews, accuracy, average ease and retrievability, mastery counts.", audience: .app)
    /// How many reviews the user recorded in a time range (store's `progress.today`).
    public let reviewCount = Method<ReviewCountRequest, ReviewCount>(
        Self.self, "review.count", "How many reviews the user recorded from 'from' until 'to' (at most 400 days).", audience: .service)
    /// Cards' review state with their review log (store's `.apkg` export).
    public let reviewHistory = Method<ReviewHistoryRequest, ReviewHistoryResponse>(
        Self.self, "review.history", "Up to 1000 cards' review state with their review log, oldest review first.", audience: .service)
    /// Replays reviews made elsewhere through the card's algorithm (store's `.apkg` import).
    public let importReviews = Method<ReviewImportRequest, ReviewImportResponse>(
        Self.self, "review.import",
        "Adds up to 1000 cards and replays their earlier reviews through the scheduling algorithm; cards with reviews already are left alone.",
        audience: .service)

    // MARK: Study plans

    /// Spreads a set's new cards over the days until a target date, keeping the workload level.
    public let createPlan = Method<PlanCreateRequest, StudyPlan>(
        Self.self, "plan.create", "Spreads a set's new cards over the days until targetDate so the daily workload stays level.", audience: .app)
    /// A plan.
    public let getPlan = Method<StudyPlanID, StudyPlan>(
        Self.self, "plan.get", "A study plan with its days.", audience: .app)
    /// A plan and its study sessions as an iCalendar file (RFC 5545) in the attachment frame.
    public let planCalendar = Method<StudyPlanID, PlanCalendar>(
        Self.self, "plan.ics", "The plan's study sessions as an iCalendar (RFC 5545) file in the attachment frame.", audience: .app)

    // MARK: Habits

    /// Creates a habit system.
    public let createSystem = Method<HabitSystemCreate, HabitSystem>(
        Self.self, "habits.systems.create", "Creates a habit system (name, the identity it builds, category).", audience: .app)
    /// Replaces a system's name, identity and category.
    public let updateSystem = Method<HabitSystemUpdate, HabitSystem>(
        Self.self, "habits.systems.update", "Replaces a habit system's name, identity and category.", audience: .app)
    /// The user's systems with their tasks.
    public let listSystems = Method<Empty, HabitSystemList>(
        Self.self, "habits.systems.list", "The user's habit systems with their tasks.", audience: .app)
    /// Deletes a system with its tasks, check-ins and tests.
    public let deleteSystem = Method<HabitSystemID, Empty>(
        Self.self, "habits.systems.delete", "Deletes a habit system with its tasks, check-ins and tests.", audience: .app)
    /// Creates a task in a system.
    public let createTask = Method<HabitTaskCreate, HabitTask>(
        Self.self, "habits.tasks.create", "Creates a task: frequency daily or weekdays, the four laws, optional reminder time.", audience: .app)
    /// Replaces a task's editable fields (last write wins).
    public let updateTask = Method<HabitTaskUpdate, HabitTask>(
        Self.self, "habits.tasks.update", "Replaces a task's name, description, frequency, four laws fields and reminder time.", audience: .app)
    /// Deletes a task and its check-ins.
    public let deleteTask = Method<HabitTaskID, Empty>(
        Self.self, "habits.tasks.delete", "Deletes a task and its check-ins.", audience: .app)
    /// Checks a task in for a local date (repeating it updates the note).
    public let checkIn = Method<CheckInRequest, CheckInResult>(
        Self.self, "habits.checkIn", "Checks a task in for a local date with an optional note; returns the streak.", audience: .app)
    /// Removes a check-in.
    public let undoCheckIn = Method<CheckInUndoRequest, HabitTaskStats>(
        Self.self, "habits.undo", "Removes the task's check-in for a local date.", audience: .app)
    /// Check-ins between two local dates (the calendar view).
    public let listCheckIns = Method<CheckInListRequest, CheckInList>(
        Self.self, "habits.checkIns.list", "The user's check-ins between two local dates (at most 366 days), of one task or system or all.", audience: .app)
    /// One task's days over a range: scheduled, done (for charts).
    public let taskSeries = Method<TaskSeriesRequest, TaskSeries>(
        Self.self, "habits.tasks.series", "One task's local days over a range (at most 366): scheduled and done, with the completion.", audience: .app)
    /// Streaks and completion rates per task and per system.
    public let habitStats = Method<HabitStatsRequest, HabitStats>(
        Self.self, "habits.stats", "Current and best streaks, completion today, over 7 and 30 days, per task and system.", audience: .app)

    // MARK: Performance tests

    /// Creates a performance test.
    public let createTest = Method<PerformanceTestCreate, PerformanceTest>(
        Self.self, "tests.create", "Creates a performance test (name, unit, higher-is-better, every N days).", audience: .app)
    /// Records a test entry.
    public let recordTest = Method<TestEntryCreate, PerformanceTest>(
        Self.self, "tests.record", "Records a test result for a local date.", audience: .app)
    /// The user's tests with their entries.
    public let listTests = Method<Empty, PerformanceTestList>(
        Self.self, "tests.list", "The user's performance tests with their entries.", audience: .app)
    /// Replaces a test's definition; its entries stay.
    public let updateTest = Method<PerformanceTestUpdate, PerformanceTest>(
        Self.self, "tests.update", "Replaces a performance test's system, name, unit, higher-is-better and every N days; entries stay.", audience: .app)
    /// Deletes one entry of a test.
    public let deleteTestEntry = Method<TestEntryID, PerformanceTest>(
        Self.self, "tests.entries.delete", "Deletes one entry of a performance test; returns the test.", audience: .app)
    /// Tests due today or overdue.
    public let dueTests = Method<Empty, PerformanceTestList>(
        Self.self, "tests.due", "Tests due on or before the user's local today.", audience: .app)
    /// Deletes a test and its entries.
    public let deleteTest = Method<PerformanceTestID, Empty>(
        Self.self, "tests.delete", "Deletes a performance test and its entries.", audience: .app)

    // MARK: Sync

    /// A device's habit changes, last write wins (the same contract as store's `sync.push`).
    public let syncPush = Method<HabitSyncPushRequest, HabitSyncPushResponse>(
        Self.self, "sync.push", "Apply a device's habit changes (systems, tasks, check-ins, tests, entries) last-write-wins, with tombstones.",
        audience: .app)
    /// The user's habit changes since a cursor (the same contract as store's `sync.pull`).
    public let syncPull = Method<HabitSyncPullRequest, HabitSyncPullResponse>(
        Self.self, "sync.pull", "Habit changes since a cursor: records in their latest state and tombstones.", audience: .app)

    // MARK: Events (durable: outbox, per-stream seq, `_events.replay`)

    /// Daily digest at the user's review reminder time when cards are due.
    public let reviewDue = Topic<ReviewDueEvent>(
        Self.self, "review.due", "Daily digest at the user's review reminder time: how many cards are due.")
    /// A habit task's reminder time came and it is not checked in yet.
    public let habitDue = Topic<HabitDueEvent>(
        Self.self, "habit.due", "A task's reminder time came on a scheduled day and it is not checked in yet.")
    /// A performance test is due (sent at the user's test reminder time).
    public let testDue = Topic<TestDueEvent>(
        Self.self, "test.due", "A performance test is due today (sent at the user's test reminder time).")

    // Habit data changes, through the API or sync (user-scoped: the header's user is the
    // record's): the change as `sync.pull` would return it, with the device that made it.
    public let systemCreated = Topic<HabitSyncChange>(Self.self, "habit.system.created", "A habit system was created: the change as sync.pull returns it.")
    public let systemUpdated = Topic<HabitSyncChange>(Self.self, "habit.system.updated", "A habit system was updated: the change as sync.pull returns it.")
    public let systemDeleted = Topic<HabitSyncChange>(Self.self, "habit.system.deleted", "A habit system was deleted: the change as sync.pull returns it.")
    public let taskCreated = Topic<HabitSyncChange>(Self.self, "habit.task.created", "A habit task was created: the change as sync.pull returns it.")
    public let taskUpdated = Topic<HabitSyncChange>(Self.self, "habit.task.updated", "A habit task was updated: the change as sync.pull returns it.")
    public let taskDeleted = Topic<HabitSyncChange>(Self.self, "habit.task.deleted", "A habit task was deleted: the change as sync.pull returns it.")
    public let checkInCreated = Topic<HabitSyncChange>(Self.self, "habit.checkin.created", "A check-in was created: the change as sync.pull returns it.")
    public let checkInUpdated = Topic<HabitSyncChange>(Self.self, "habit.checkin.updated", "A check-in was updated: the change as sync.pull returns it.")
    public let checkInDeleted = Topic<HabitSyncChange>(Self.self, "habit.checkin.deleted", "A check-in was deleted: the change as sync.pull returns it.")
    public let testCreated = Topic<HabitSyncChange>(Self.self, "habit.test.created", "A performance test was created: the change as sync.pull returns it.")
    public let testUpdated = Topic<HabitSyncChange>(Self.self, "habit.test.updated", "A performance test was updated: the change as sync.pull returns it.")
    public let testDeleted = Topic<HabitSyncChange>(Self.self, "habit.test.deleted", "A performance test was deleted: the change as sync.pull returns it.")
    public let entryCreated = Topic<HabitSyncChange>(Self.self, "habit.entry.created", "A test entry was created: the change as sync.pull returns it.")
    public let entryUpdated = Topic<HabitSyncChange>(Self.self, "habit.entry.updated", "A test entry was updated: the change as sync.pull returns it.")
    public let entryDeleted = Topic<HabitSyncChange>(Self.self, "habit.entry.deleted", "A test entry was deleted: the change as sync.pull returns it.")

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
