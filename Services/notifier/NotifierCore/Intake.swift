import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// Turns consumed events into notification rows, inside the durable consumer's transaction (so
/// the cursor moves exactly when the notifications exist). ``routes`` names every topic the
/// notifier consumes; a payload that lacks what its topic needs throws (the consumer retries,
/// then parks it).
struct Intake: Sendable {
    let configuration: NotifierConfiguration
    let clock: any WallClock

    /// The events the notifier consumes, each routed to what it does.
    var routes: EventRoutes {
        var routes = EventRoutes()
        routes.on(TimerTicker.timerCompleted) { completed, header, db in try alarm(TimerView(completed.timer), header, db) }
        // A `discard` timer is removed a fixed time after it completes, whether or not its user
        // has heard the alarm: that housekeeping must not silence the repeats (only `notify.ack`,
        // or the user deleting, stopping or restarting the timer, does).
        routes.on(TimerTicker.timerDeleted) { deleted, header, db in
            guard deleted.reason != .discarded else { return }
            try cancelAlarm(TimerView(deleted.timer), header, db)
        }
        routes.on(TimerTicker.timerStopped) { timer, header, db in try cancelAlarm(TimerView(timer), header, db) }
        routes.on(TimerTicker.timerRestarted) { timer, header, db in try cancelAlarm(TimerView(timer), header, db) }
        routes.on(Scheduler.reviewDue) { due, header, db in
            try remind(ReminderView(userId: due.userId, due.title, due.body, otherwise: Wording.reviewDue(dueCount: due.dueCount)), header, db)
        }
        routes.on(Scheduler.habitDue) { due, header, db in
            let wording = Wording.habitDue(taskName: due.taskName, systemName: due.systemName, identity: due.identity)
            try remind(ReminderView(userId: due.userId, due.title, due.body, otherwise: wording), header, db)
        }
        routes.on(Scheduler.testDue) { due, header, db in
            try remind(ReminderView(userId: due.userId, due.title, due.body, otherwise: Wording.testDue(testName: due.testName)), header, db)
        }
        routes.on(Store.materialIngested) { ingested, header, db in
            let (title, body) = Wording.materialReady(title: ingested.material.title, flashcards: ingested.flashcardIds.count)
            try materialNotice(user: try user(header, ingested.material.userId), title: title, body: body, tag: "white_check_mark", header, db)
        }
        routes.on(Store.ingestFailed) { failed, header, db in
            // The user cancelled it themselves: nothing to tell them.
            guard failed.reason != IngestFailed.cancelledReason else { return }
            let (title, body) = Wording.materialFailed(title: failed.title, reason: failed.reason)
            try materialNotice(user: try user(header, failed.userId), title: title, body: body, tag: "warning", header, db)
        }
        return routes
    }

    private func alarm(_ timer: TimerView, _ header: EventHeader, _ db: Database) throws {
        try NotificationWrites.scheduleAlarm(
            db, timer: timer, userId: try user(header, timer.userId), eventId: header.id, now: clock.now().unixMilliseconds,
            repeats: configuration.alarmRepeats, interval: configuration.alarmInterval)
    }

    private func cancelAlarm(_ timer: TimerView, _ header: EventHeader, _ db: Database) throws {
        try NotificationWrites.cancelTimer(db, timerId: timer.id, userId: header.user ?? timer.userId, now: clock.now().unixMilliseconds)
    }

    private func remind(_ reminder: ReminderView, _ header: EventHeader, _ db: Database) throws {
        try NotificationWrites.addReminder(
            db, userId: try user(header, reminder.userId), eventId: header.id, title: reminder.title, body: reminder.body,
            now: clock.now().unixMilliseconds, window: configuration.reminderWindow)
    }

    private func materialNotice(user: String, title: String, body: String, tag: String, _ header: EventHeader, _ db: Database) throws {
        let now = clock.now().unixMilliseconds
        try NotificationWrites.insert(db, NewNotification(
            id: "\(header.id)_0", userId: user, kind: .material, title: title, body: body, tags: [tag],
            sourceEventId: header.id, notBefore: now), now: now)
    }

    private func user(_ header: EventHeader, _ payloadUser: String?) throws(BusError) -> String {
        guard let user = header.user ?? payloadUser, !user.isEmpty else {
            throw .invalidArgument("event \(header.id) names no user (header 'user' or payload 'userId')")
        }
        return user
    }
}

/// What an alarm needs from a timer.
struct TimerView {
    var id: String
    var userId: String
    var label: String
    var isSoundOn: Bool
    var isVibrationOn: Bool
    var run: Int

    init(_ timer: CountdownTimer) {
        id = timer.id
        userId = timer.userId
        label = timer.label
        isSoundOn = timer.isSoundOn
        isVibrationOn = timer.isVibrationOn
        run = timer.run
    }
}

/// A scheduler reminder (`review.due`, `habit.due`, `test.due`): its user and wording — the
/// scheduler's, or ours when it sent none.
struct ReminderView {
    var userId: String
    var title: String
    var body: String

    init(userId: String, _ title: String, _ body: String, otherwise fallback: (String, String)) {
        self.userId = userId
        (self.title, self.body) = title.isEmpty || body.isEmpty ? fallback : (title, body)
    }
}
