import Bus
import Foundation

// The events notifier consumes, decoded leniently: only the fields it needs, so that a producer
// adding fields (or sending the timer at the top level instead of under `timer`) never breaks it.
// The shapes follow the producers' contracts (timer-ticker, scheduler, store); see the report in
// docs/services/notifier.md for when those contracts land on main.

/// The producers and topics the notifier consumes from their durable streams.
enum ConsumedTopics {
    static let timerTicker = "timer-ticker"
    static let scheduler = "scheduler"
    static let store = "store"

    static let timerCompleted = "timer.completed"
    static let timerCancelling: Set<String> = ["timer.deleted", "timer.stopped", "timer.restarted"]
    static let reminders: Set<String> = ["review.due", "habit.due", "test.due"]
    static let materialIngested = "material.ingested"
    static let ingestFailed = "ingest.failed"
}

/// A timer as carried by timer events: at the top level or under `timer`.
struct TimerView: Decodable {
    var id: String
    var userId: String?
    var label: String?
    var isSoundOn: Bool?
    var run: Int?

    private struct Wrapped: Decodable { var timer: TimerView }

    static func decode(_ payload: Data) throws -> TimerView {
        if let wrapped = try? WireCoding.decode(Wrapped.self, from: payload) { return wrapped.timer }
        return try WireCoding.decode(TimerView.self, from: payload)
    }
}

/// `review.due`, `habit.due`, `test.due` (scheduler): suggested wording plus the facts behind it.
struct ReminderView: Decodable {
    var reminderId: String?
    var userId: String?
    var title: String?
    var body: String?
    var dueCount: Int?
    var taskName: String?
    var systemName: String?
    var identity: String?
    var testName: String?
}

/// `material.ingested` (store).
struct MaterialIngestedView: Decodable {
    struct Material: Decodable {
        var id: String
        var userId: String?
        var title: String?
    }
    var material: Material
    var flashcardIds: [String]?
}

/// `ingest.failed` (store, on behalf of the ingest workers).
struct IngestFailedView: Decodable {
    var materialId: String
    var userId: String?
    var title: String?
    var reason: String?
}
