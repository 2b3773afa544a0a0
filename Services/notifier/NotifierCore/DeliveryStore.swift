import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// The dispatcher's SQL: releasing due notifications into deliveries, claiming deliveries to
/// send, and recording how attempts ended. Each function runs inside one write transaction.
enum DeliveryStore {
    /// Deliveries left `sending` by a process that died are sent again, with the same id (so a
    /// receiver that saw the first attempt drops the second). Returns how many.
    static func recoverInterrupted(_ db: Database, now: Int64) throws -> Int {
        try db.execute(sql: "UPDATE delivery SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE state = 'sending'",
                       arguments: [now, now])
        return db.changesCount
    }

    /// Releases notifications whose time has come: held back again if the user is in quiet hours
    /// (unless urgent, or an alarm and the user lets alarms through), otherwise into the inbox
    /// with one pending delivery per active channel that takes their kind.
    static func releaseDue(_ db: Database, now: Int64, alarmInterval: Duration, limit: Int = 500) throws -> Int {
        let rows = try Row.fetchAll(db, sql: """
            SELECT * FROM notification WHERE state IN ('scheduled', 'held') AND not_before <= ? ORDER BY not_before LIMIT ?
            """, arguments: [now, limit])
        guard !rows.isEmpty else { return 0 }
        var preferences: [String: (QuietWindow?, Bool)] = [:]
        var channels: [String: [ChannelConfig]] = [:]
        var released = 0
        var heldTimers: Set<String> = []
        for row in rows {
            let notification = NotificationRecord(row: row)
            if let timerId = notification.timerId, heldTimers.contains(timerId) { continue }
            let user = notification.userId
            if preferences[user] == nil { preferences[user] = try quietSettings(db, user: user) }
            let (window, alarmsBypass) = preferences[user]!
            let bypass = notification.urgent || (notification.kind == .alarm && alarmsBypass)
            if !bypass, let end = window?.end(containing: Date(unixMilliseconds: now)) {
                if let timerId = notification.timerId {
                    heldTimers.insert(timerId)
                    // An alarm's series moves as a whole: repeat i rings i intervals after the window ends.
                    try db.execute(sql: """
                        UPDATE notification SET state = 'held', not_before = ? + (repeat_index - ?) * ?, updated_at = ?
                        WHERE timer_id = ? AND user_id = ? AND state IN ('scheduled', 'held') AND repeat_index >= ?
                        """, arguments: [end.unixMilliseconds, notification.repeatIndex ?? 0, alarmInterval.wholeMilliseconds, now,
                                         timerId, user, notification.repeatIndex ?? 0])
                } else {
                    try db.execute(sql: "UPDATE notification SET state = 'held', not_before = ?, updated_at = ? WHERE id = ?",
                                   arguments: [end.unixMilliseconds, now, notification.id])
                }
                continue
            }
            try db.execute(sql: "UPDATE notification SET state = 'released', released_at = ?, updated_at = ? WHERE id = ?",
                           arguments: [now, now, notification.id])
            if row["batch_items"] as String? != nil {
                try db.execute(sql: """
                    INSERT INTO reminder_window (user_id, last_push_at) VALUES (?, ?)
                    ON CONFLICT (user_id) DO UPDATE SET last_push_at = excluded.last_push_at
                    """, arguments: [user, now])
            }
            if channels[user] == nil {
                channels[user] = try ChannelConfig.fetchAll(db, sql: "SELECT * FROM channel WHERE user_id = ? AND status = 'active'", arguments: [user])
            }
            for channel in channels[user]! where channel.accepts(notification.kind) {
                try db.execute(sql: """
                    INSERT INTO delivery (id, notification_id, channel_id, channel_type, user_id, state, next_attempt_at, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?) ON CONFLICT (id) DO NOTHING
                    """, arguments: ["\(notification.id).\(channel.id)", notification.id, channel.id, channel.type.rawValue, user, now, now, now])
            }
            released += 1
        }
        return released
    }

    private static func quietSettings(_ db: Database, user: String) throws -> (QuietWindow?, Bool) {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM preference WHERE user_id = ?", arguments: [user]) else { return (nil, false) }
        let bypass: Bool = row["alarms_bypass"]
        guard let start = row["quiet_start"] as Int?, let end = row["quiet_end"] as Int?,
              let zone = TimeZone(identifier: row["time_zone"])
        else { return (nil, bypass) }
        return (QuietWindow(startMinute: start, endMinute: end, timeZone: zone), bypass)
    }

    /// Moves up to `limit` due pending deliveries to `sending` and returns them. Deliveries whose
    /// channel is gone or disabled end here instead (`cancelled`/`failed`).
    /// At most `perChannel` deliveries of one channel are in flight, so one slow endpoint cannot
    /// take every slot.
    static func claim(_ db: Database, now: Int64, limit: Int, perChannel: Int) throws -> [DeliveryJob] {
        guard limit > 0 else { return [] }
        var inFlight = try Dictionary(uniqueKeysWithValues: Row.fetchAll(
            db, sql: "SELECT channel_id, COUNT(*) AS n FROM delivery WHERE state = 'sending' GROUP BY channel_id"
        ).map { ($0["channel_id"] as String, $0["n"] as Int) })
        let saturated = inFlight.filter { $0.value >= perChannel }.map(\.key)
        let rows = try Row.fetchAll(db, sql: """
            SELECT id, notification_id, channel_id, attempts FROM delivery
            WHERE state = 'pending' AND next_attempt_at <= ? AND channel_id NOT IN (\(placeholders(saturated.count)))
            ORDER BY next_attempt_at LIMIT ?
            """, arguments: [now] + StatementArguments(saturated) + [limit]).filter { row in
            let channel: String = row["channel_id"]
            guard inFlight[channel, default: 0] < perChannel else { return false }
            inFlight[channel, default: 0] += 1
            return true
        }
        guard !rows.isEmpty else { return [] }
        let notificationIDs = Set(rows.map { $0["notification_id"] as String })
        let channelIDs = Set(rows.map { $0["channel_id"] as String })
        let notifications = try Dictionary(uniqueKeysWithValues: Row.fetchAll(
            db, sql: "SELECT * FROM notification WHERE id IN (\(placeholders(notificationIDs.count)))",
            arguments: StatementArguments(Array(notificationIDs))
        ).map { ($0["id"] as String, ($0["sound"] as Bool, NotificationRecord(row: $0))) })
        let channels = try Dictionary(uniqueKeysWithValues: ChannelConfig.fetchAll(
            db, sql: "SELECT * FROM channel WHERE id IN (\(placeholders(channelIDs.count)))", arguments: StatementArguments(Array(channelIDs))
        ).map { ($0.id, $0) })
        var jobs: [DeliveryJob] = []
        for row in rows {
            let id: String = row["id"]
            guard let channel = channels[row["channel_id"]], channel.status == .active else {
                try db.execute(sql: """
                    UPDATE delivery SET state = 'cancelled', last_error = 'the channel was removed or disabled', next_attempt_at = NULL,
                        updated_at = ? WHERE id = ?
                    """, arguments: [now, id])
                continue
            }
            guard let (sound, notification) = notifications[row["notification_id"]] else { continue }
            let attempt = (row["attempts"] as Int) + 1
            try db.execute(sql: "UPDATE delivery SET state = 'sending', attempts = ?, updated_at = ? WHERE id = ?", arguments: [attempt, now, id])
            jobs.append(DeliveryJob(deliveryId: id, attempt: attempt, channel: channel, notification: notification, sound: sound))
        }
        return jobs
    }

    /// Records finished attempts: the state machine's step out of `sending`, and what it means
    /// for the channel (a success clears its failing streak; a streak longer than `disableAfter`,
    /// a 410 or a dead device token ends the channel, and the user is told in the inbox).
    static func record(_ db: Database, _ results: [DeliveryResult], now: Int64, policy: RetryPolicy, disableAfter: Duration) throws {
        // A late alarm is worse than none: stop retrying one after this long (APNs expiration too).
        let alarmLifetime = Duration.seconds(600)
        for result in results {
            let id = result.job.deliveryId, channel = result.job.channel
            switch result.outcome {
            case .sent(let status):
                try db.execute(sql: """
                    UPDATE delivery SET state = 'sent', sent_at = ?, last_status = ?, last_error = NULL, next_attempt_at = NULL, updated_at = ?
                    WHERE id = ? AND state = 'sending'
                    """, arguments: [now, status, now, id])
                try db.execute(sql: "UPDATE channel SET failing_since = NULL, updated_at = ? WHERE id = ? AND failing_since IS NOT NULL",
                               arguments: [now, channel.id])
            case .retry(let status, let error, let retryAfter):
                if result.job.attempt >= policy.maximumAttempts {
                    try fail(db, id, status: status, error: "\(error) (gave up after \(result.job.attempt) attempts)", now: now)
                } else if result.job.notification.kind == .alarm,
                          now - (result.job.notification.releasedAt?.unixMilliseconds ?? now) >= alarmLifetime.wholeMilliseconds {
                    try fail(db, id, status: status, error: "\(error) (an alarm is not retried after \(alarmLifetime.components.seconds / 60) minutes)", now: now)
                } else {
                    let delay = policy.delay(afterAttempt: result.job.attempt, retryAfter: retryAfter)
                    try db.execute(sql: """
                        UPDATE delivery SET state = 'pending', next_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ?
                        WHERE id = ? AND state = 'sending'
                        """, arguments: [now + delay.wholeMilliseconds, status, error, now, id])
                }
                try countFailure(db, channel, error: error, now: now, disableAfter: disableAfter)
            case .failed(let status, let error):
                try fail(db, id, status: status, error: error, now: now)
                try countFailure(db, channel, error: error, now: now, disableAfter: disableAfter)
            case .disableChannel(let status, let error):
                try fail(db, id, status: status, error: error, now: now)
                let since = channel.failingSince ?? now
                try disable(db, channel, reason: error, since: since, lastError: error, now: now)
            case .removeChannel(let status, let error):
                try fail(db, id, status: status, error: error, now: now)
                try db.execute(sql: """
                    UPDATE delivery SET state = 'cancelled', last_error = ?, next_attempt_at = NULL, updated_at = ?
                    WHERE channel_id = ? AND state = 'pending'
                    """, arguments: ["the device token was removed: \(error)", now, channel.id])
                try db.execute(sql: "DELETE FROM channel WHERE id = ?", arguments: [channel.id])
            }
        }
    }

    /// Extends the channel's failing streak (a success ends it); a streak of `disableAfter` or
    /// more disables the channel. Failures that are not retried (a 404, a 401) count too: an
    /// endpoint that refuses everything for days is as dead as one that times out.
    private static func countFailure(_ db: Database, _ channel: ChannelConfig, error: String, now: Int64, disableAfter: Duration) throws {
        try db.execute(sql: "UPDATE channel SET failing_since = COALESCE(failing_since, ?) WHERE id = ?", arguments: [now, channel.id])
        let since = try Int64.fetchOne(db, sql: "SELECT failing_since FROM channel WHERE id = ? AND status = 'active'", arguments: [channel.id])
        if let since, now - since >= disableAfter.wholeMilliseconds {
            try disable(db, channel, reason: "failing since \(ISO8601.format(unixMilliseconds: since)): \(error)",
                        since: since, lastError: error, now: now)
        }
    }

    private static func fail(_ db: Database, _ id: String, status: Int?, error: String, now: Int64) throws {
        try db.execute(sql: """
            UPDATE delivery SET state = 'failed', last_status = ?, last_error = ?, next_attempt_at = NULL, updated_at = ?
            WHERE id = ? AND state = 'sending'
            """, arguments: [status, error, now, id])
    }

    /// Disables a channel, fails its pending deliveries and tells its user in the inbox.
    private static func disable(_ db: Database, _ channel: ChannelConfig, reason: String, since: Int64, lastError: String?, now: Int64) throws {
        try db.execute(sql: """
            UPDATE channel SET status = 'disabled', disabled_reason = ?, updated_at = ? WHERE id = ? AND status = 'active'
            """, arguments: [reason, now, channel.id])
        guard db.changesCount > 0 else { return }
        try db.execute(sql: """
            UPDATE delivery SET state = 'failed', last_error = ?, next_attempt_at = NULL, updated_at = ?
            WHERE channel_id = ? AND state = 'pending'
            """, arguments: ["the channel was disabled: \(reason)", now, channel.id])
        let (title, body) = Wording.endpointDisabled(
            name: channel.name, type: channel.type.rawValue, since: Date(unixMilliseconds: since), lastError: lastError)
        try NotificationWrites.insert(db, NewNotification(
            id: "channel-disabled.\(channel.id).\(now)", userId: channel.userId, kind: .system, title: title, body: body,
            tags: ["warning"], priority: 4, urgent: true, state: .released, notBefore: now), now: now)
    }

    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }
}

extension ChannelConfig: FetchableRecord {}
