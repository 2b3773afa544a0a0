import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// A notification about to be stored.
struct NewNotification {
    var id: String
    var userId: String
    var kind: NotificationKind
    var title: String
    var body: String
    var url: String? = nil
    var tags: [String] = []
    var priority = 3
    var urgent = false
    var timerId: String? = nil
    var repeatIndex: Int? = nil
    var sourceEventId: String? = nil
    var sound = true
    var vibration = true
    var batchItems: [String]? = nil
    var state: NotificationState = .scheduled
    var notBefore: Int64
}

/// The writes that create and cancel notifications, each run inside the caller's transaction.
enum NotificationWrites {
    /// Inserts `notification`; a repeat of the same id (the same event handled again) changes nothing.
    /// Returns whether it was new.
    @discardableResult
    static func insert(_ db: Database, _ notification: NewNotification, now: Int64) throws -> Bool {
        try db.execute(sql: """
            INSERT INTO notification (id, user_id, kind, title, body, url, tags, priority, urgent, timer_id, repeat_index,
                source_event_id, sound, vibration, batch_items, state, not_before, released_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """, arguments: [
                notification.id, notification.userId, notification.kind.rawValue, notification.title, notification.body, notification.url,
                NotificationRecord.encodeTags(notification.tags), notification.priority, notification.urgent, notification.timerId,
                notification.repeatIndex, notification.sourceEventId, notification.sound, notification.vibration,
                notification.batchItems.map { NotificationRecord.encodeTags($0) }, notification.state.rawValue, notification.notBefore,
                notification.state == .released ? now : nil, now, now,
            ])
        return db.changesCount > 0
    }

    /// An alarm's priority (ntfy's 1–5, which sets how an ntfy phone alerts): 5 (long vibration
    /// bursts and sound) with vibration on, 3 (sound, a short vibration: ntfy has no sound without
    /// one) with sound only, 2 (no sound, no vibration, listed in the drawer) with both off.
    static func alarmPriority(_ timer: TimerView) -> Int {
        timer.isVibrationOn ? 5 : timer.isSoundOn ? 3 : 2
    }

    /// Schedules a completed timer's alarm: `repeats` notifications `interval` apart, the first now.
    static func scheduleAlarm(_ db: Database, timer: TimerView, userId: String, eventId: String, now: Int64, repeats: Int, interval: Duration) throws {
        let base = timer.run <= 1 ? timer.id : "\(timer.id)-r\(timer.run)"
        let label = timer.label
        let step = interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000
        for index in 0..<repeats {
            try insert(db, NewNotification(
                id: "\(base)_\(index)", userId: userId, kind: .alarm, title: Wording.alarmTitle(label: label),
                body: Wording.alarmBody(label: label), tags: ["alarm_clock"], priority: alarmPriority(timer), timerId: timer.id,
                repeatIndex: index, sourceEventId: eventId, sound: timer.isSoundOn, vibration: timer.isVibrationOn, notBefore: now + Int64(index) * step), now: now)
        }
    }

    /// Cancels every notification of `timerId` not yet released, and their pending deliveries.
    /// Returns how many notifications were cancelled.
    @discardableResult
    static func cancelTimer(_ db: Database, timerId: String, userId: String?, now: Int64) throws -> Int {
        let userFilter = userId == nil ? "" : " AND user_id = ?"
        var arguments: StatementArguments = [now, timerId]
        if let userId { arguments += [userId] }
        try db.execute(sql: """
            UPDATE notification SET state = 'cancelled', updated_at = ?
            WHERE timer_id = ? AND state IN ('scheduled', 'held')\(userFilter)
            """, arguments: arguments)
        let cancelled = db.changesCount
        try db.execute(sql: """
            UPDATE delivery SET state = 'cancelled', last_error = 'cancelled: the timer was acknowledged, stopped, restarted or deleted',
                next_attempt_at = NULL, updated_at = ?
            WHERE state = 'pending' AND notification_id IN (SELECT id FROM notification WHERE timer_id = ?\(userFilter))
            """, arguments: arguments)
        return cancelled
    }

    /// Adds a reminder to the user's open batch, or opens one: the first reminder after a quiet
    /// window goes out at once, later ones wait for the window's end and go out together.
    static func addReminder(_ db: Database, userId: String, eventId: String, title: String, body: String, now: Int64, window: Duration) throws {
        if let open = try Row.fetchOne(db, sql: """
            SELECT id, batch_items FROM notification
            WHERE user_id = ? AND batch_items IS NOT NULL AND state IN ('scheduled', 'held') ORDER BY seq LIMIT 1
            """, arguments: [userId]) {
            let items = NotificationRecord.decodeTags(open["batch_items"]) + [title]
            let (batchTitle, batchBody) = Wording.reminderBatch(titles: items)
            try db.execute(
                sql: "UPDATE notification SET title = ?, body = ?, batch_items = ?, updated_at = ? WHERE id = ?",
                arguments: [batchTitle, batchBody, NotificationRecord.encodeTags(items), now, open["id"] as String])
            return
        }
        let lastPush = try Int64.fetchOne(db, sql: "SELECT last_push_at FROM reminder_window WHERE user_id = ?", arguments: [userId])
        let windowMs = window.components.seconds * 1000
        let notBefore = max(now, (lastPush ?? Int64.min / 2) + windowMs)
        try insert(db, NewNotification(
            id: "\(eventId)_0", userId: userId, kind: .reminder, title: title, body: body, tags: ["sparkles"], priority: 3,
            sourceEventId: eventId, batchItems: [title], notBefore: notBefore), now: now)
    }
}
