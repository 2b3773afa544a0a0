import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// Turns one consumed event into notification rows, inside the durable consumer's transaction
/// (so the cursor moves exactly when the notifications exist).
struct Intake: Sendable {
    let configuration: NotifierConfiguration
    let clock: any WallClock

    /// Applies `event`; events of other topics are ignored.
    /// - Throws: when the payload lacks what the topic needs (the consumer retries, then parks it).
    func apply(_ event: BusEvent, _ db: Database) throws {
        let now = clock.now().unixMilliseconds
        let topic = event.topic
        if topic == ConsumedTopics.timerCompleted {
            let timer = try TimerView.decode(event)
            let user = try self.user(event, timer.userId)
            try NotificationWrites.scheduleAlarm(
                db, timer: timer, userId: user, eventId: event.header.id, now: now,
                repeats: configuration.alarmRepeats, interval: configuration.alarmInterval)
        } else if ConsumedTopics.timerCancelling.contains(topic) {
            // A `discard` timer is removed a fixed time after it completes, whether or not its
            // user has heard the alarm: that housekeeping must not silence the repeats (only
            // `notify.ack`, or the user deleting, stopping or restarting the timer, does).
            let timer: TimerView
            if topic == TimerTicker.timerDeleted.name {
                let deleted = try event.decode(TimerTicker.timerDeleted)
                guard deleted.reason != .discarded else { return }
                timer = TimerView(deleted.timer)
            } else {
                timer = try TimerView.decode(event)
            }
            try NotificationWrites.cancelTimer(db, timerId: timer.id, userId: event.header.user ?? timer.userId, now: now)
        } else if ConsumedTopics.reminders.contains(topic) {
            let reminder = try ReminderView.decode(event)
            let user = try self.user(event, reminder.userId)
            try NotificationWrites.addReminder(
                db, userId: user, eventId: event.header.id, title: reminder.title, body: reminder.body, now: now, window: configuration.reminderWindow)
        } else if topic == ConsumedTopics.materialIngested {
            let ingested = try event.decode(Store.materialIngested)
            let user = try self.user(event, ingested.material.userId)
            let (title, body) = Wording.materialReady(title: ingested.material.title, flashcards: ingested.flashcardIds.count)
            try NotificationWrites.insert(db, NewNotification(
                id: "\(event.header.id)_0", userId: user, kind: .material, title: title, body: body, tags: ["white_check_mark"],
                sourceEventId: event.header.id, notBefore: now), now: now)
        } else if topic == ConsumedTopics.ingestFailed {
            let failed = try event.decode(Store.ingestFailed)
            let user = try self.user(event, failed.userId)
            let (title, body) = Wording.materialFailed(title: failed.title, reason: failed.reason)
            try NotificationWrites.insert(db, NewNotification(
                id: "\(event.header.id)_0", userId: user, kind: .material, title: title, body: body, tags: ["warning"],
                sourceEventId: event.header.id, notBefore: now), now: now)
        }
    }

    private func user(_ event: BusEvent, _ payloadUser: String?) throws(BusError) -> String {
        guard let user = event.header.user ?? payloadUser, !user.isEmpty else {
            throw .invalidArgument("\(event.topic) event \(event.header.id) names no user (header 'user' or payload 'userId')")
        }
        return user
    }
}
