import Foundation
import Wire

// Payloads of the scheduler's study-plan methods (`plan.*`).

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
