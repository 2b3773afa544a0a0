import Foundation
import Wire

// Payloads of the scheduler's settings methods (`settings.*`, `sets.configure`).

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
