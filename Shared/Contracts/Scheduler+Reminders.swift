import Foundation
import Wire

// Payloads of the scheduler's reminder events (`review.due`, `habit.due`, `test.due`).

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
