import Bus
import Contracts
import Foundation
import Wire

// The events notifier consumes, decoded with their producers' typed topics.

/// The producers and topics the notifier consumes from their durable streams.
enum ConsumedTopics {
    static let timerTicker = TimerTickerContract.serviceName
    static let scheduler = SchedulerContract.serviceName
    static let store = StoreContract.serviceName

    static let timerCompleted = TimerTicker.timerCompleted.name
    static let timerCancelling: Set<String> = [TimerTicker.timerDeleted.name, TimerTicker.timerStopped.name, TimerTicker.timerRestarted.name]
    static let reminders: Set<String> = [Scheduler.reviewDue.name, Scheduler.habitDue.name, Scheduler.testDue.name]
    static let materialIngested = Store.materialIngested.name
    static let ingestFailed = Store.ingestFailed.name
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

/// A scheduler reminder (`review.due`, `habit.due`, `test.due`): its user and wording — the
/// scheduler's, or ours when it sent none.
struct ReminderView {
    var userId: String
    var title: String
    var body: String

    static func decode(_ event: BusEvent) throws -> ReminderView {
        switch event.topic {
        case Scheduler.reviewDue.name:
            let due = try event.decode(Scheduler.reviewDue)
            return ReminderView(userId: due.userId, due.title, due.body, otherwise: Wording.reviewDue(dueCount: due.dueCount))
        case Scheduler.habitDue.name:
            let due = try event.decode(Scheduler.habitDue)
            return ReminderView(userId: due.userId, due.title, due.body,
                                otherwise: Wording.habitDue(taskName: due.taskName, systemName: due.systemName, identity: due.identity))
        default:
            let due = try event.decode(Scheduler.testDue)
            return ReminderView(userId: due.userId, due.title, due.body, otherwise: Wording.testDue(testName: due.testName))
        }
    }

    private init(userId: String, _ title: String, _ body: String, otherwise fallback: (String, String)) {
        self.userId = userId
        (self.title, self.body) = title.isEmpty || body.isEmpty ? fallback : (title, body)
    }
}
