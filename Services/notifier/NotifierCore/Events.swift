import Bus
import Contracts
import Foundation

// The events notifier consumes. timer-ticker's are decoded with its contract's typed topics.
// The scheduler's and store's contracts are not on main yet: their events are decoded leniently
// here, with only the fields notifier needs, named as in their declared payloads
// (ReviewDueEvent/HabitDueEvent/TestDueEvent, MaterialIngested, IngestFailed); switch to their
// typed topics when those contracts land.

/// The producers and topics the notifier consumes from their durable streams.
enum ConsumedTopics {
    static let timerTicker = TimerTickerContract.serviceName
    static let scheduler = "scheduler"
    static let store = "store"

    static let timerCompleted = TimerTicker.timerCompleted.name
    static let timerCancelling: Set<String> = [TimerTicker.timerDeleted.name, TimerTicker.timerStopped.name, TimerTicker.timerRestarted.name]
    static let reminders: Set<String> = ["review.due", "habit.due", "test.due"]
    static let materialIngested = "material.ingested"
    static let ingestFailed = "ingest.failed"
}

/// What an alarm needs from a timer.
struct TimerView {
    var id: String
    var userId: String
    var label: String
    var isSoundOn: Bool
    var run: Int

    init(_ timer: CountdownTimer) {
        id = timer.id
        userId = timer.userId
        label = timer.label
        isSoundOn = timer.isSoundOn
        run = timer.run
    }

    /// The timer of a `timer.completed|deleted|stopped|restarted` event.
    static func decode(_ event: BusEvent) throws -> TimerView {
        switch event.topic {
        case TimerTicker.timerCompleted.name: TimerView(try event.decode(TimerTicker.timerCompleted).timer)
        case TimerTicker.timerDeleted.name: TimerView(try event.decode(TimerTicker.timerDeleted).timer)
        default: TimerView(try event.decode(TimerTicker.timerStopped))
        }
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
