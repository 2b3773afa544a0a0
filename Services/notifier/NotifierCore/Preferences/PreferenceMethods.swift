import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// `preferences.get` and `preferences.set`: the caller's time zone and quiet hours.
struct PreferenceMethods: Sendable {
    let database: ServiceDatabase
    let clock: any WallClock
    let dispatcher: Dispatcher

    static func register(_ handlers: Handlers<NotifierService>) {
        handlers.handle(Notifier.preferencesGet) { service, _, context in try await service.preferences.get(user: try context.requireUser()) }
        handlers.handle(Notifier.preferencesSet) { service, request, context in
            try await service.preferences.set(request, user: try context.requireUser())
        }
    }

    func get(user: String) async throws -> Preferences {
        try await database.pool.read { db in try Self.preferences(db, user: user) }
    }

    func set(_ request: SetPreferencesRequest, user: String) async throws -> Preferences {
        let zone = request.timeZone ?? "UTC"
        guard TimeZone(identifier: zone) != nil, zone.count <= 64 else {
            throw Field.invalid("timeZone", "must be an IANA time zone such as Europe/Berlin, got '\(zone)'")
        }
        var start: Int?, end: Int?
        if let quiet = request.quietHours {
            start = try QuietWindow.minute(of: quiet.start, field: "quietHours.start")
            end = try QuietWindow.minute(of: quiet.end, field: "quietHours.end")
            guard start != end else { throw Field.invalid("quietHours.end", "must differ from 'quietHours.start'") }
        }
        let now = clock.now().unixMilliseconds
        let preferences = try await database.pool.write { [start, end] db in
            try db.execute(sql: """
                INSERT INTO preference (user_id, time_zone, quiet_start, quiet_end, alarms_bypass, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET time_zone = excluded.time_zone, quiet_start = excluded.quiet_start,
                    quiet_end = excluded.quiet_end, alarms_bypass = excluded.alarms_bypass, updated_at = excluded.updated_at
                """, arguments: [user, zone, start, end, request.alarmsBypassQuietHours ?? false, now, now])
            // Held notifications are looked at again under the new settings.
            try db.execute(sql: "UPDATE notification SET state = 'scheduled', not_before = MIN(not_before, ?) WHERE user_id = ? AND state = 'held'",
                           arguments: [now, user])
            return try Self.preferences(db, user: user)
        }
        dispatcher.wake()
        return preferences
    }

    private static func preferences(_ db: Database, user: String) throws -> Preferences {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM preference WHERE user_id = ?", arguments: [user]) else {
            let epoch = Date(unixMilliseconds: 0)
            return Preferences(userId: user, timeZone: "UTC", quietHours: nil, alarmsBypassQuietHours: false, createdAt: epoch, updatedAt: epoch)
        }
        let quiet: QuietHours? = (row["quiet_start"] as Int?).flatMap { start in
            (row["quiet_end"] as Int?).map { QuietHours(start: QuietWindow.format(start), end: QuietWindow.format($0)) }
        }
        return Preferences(
            userId: user, timeZone: row["time_zone"], quietHours: quiet, alarmsBypassQuietHours: row["alarms_bypass"],
            createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }
}
