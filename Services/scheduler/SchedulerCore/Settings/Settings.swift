import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// A user's settings as the scheduler uses them: the stored record plus its parsed zone.
struct UserSettings: Sendable {
    var record: SchedulerSettings
    var zone: Zone

    /// What a user has before changing anything.
    static func defaults(user: String, now: Date) -> UserSettings {
        UserSettings(record: SchedulerSettings(
            id: "settings-\(user)", userId: user, timeZone: "UTC", algorithm: .sm2, desiredRetention: 0.9, fuzzing: false,
            remindersEnabled: true, reviewReminderTime: "08:00", testReminderTime: "09:00", createdAt: now, updatedAt: now), zone: .utc)
    }

    /// The FSRS desired retentions a user or set may choose.
    static let retentionRange = 0.7...0.99

    /// A record with the default algorithm, retention and fuzzing (the rest is not a real user's).
    private static let defaultRecord = defaults(user: "", now: Date(timeIntervalSince1970: 0)).record

    /// The user's settings, or the defaults when none are stored.
    static func load(_ db: Database, user: String, now: Date) throws -> UserSettings {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(columns) FROM settings WHERE user_id = ?"), arguments: [user]) else {
            return defaults(user: user, now: now)
        }
        return UserSettings(row: row)
    }

    init(record: SchedulerSettings, zone: Zone) {
        self.record = record
        self.zone = zone
    }

    /// The columns ``init(row:)`` reads, in its order.
    static let columns = """
        user_id, id, time_zone, algorithm, desired_retention, fuzzing, reminders_enabled, review_reminder_time, test_reminder_time,
        created_at, updated_at
        """

    /// A row selected with ``columns``.
    init(row: Row) {
        let zoneName: String = row[2]
        record = SchedulerSettings(
            id: row[1], userId: row[0], timeZone: zoneName, algorithm: SchedulingAlgorithm(rawValue: row[3]) ?? .sm2, desiredRetention: row[4],
            fuzzing: row[5], remindersEnabled: row[6], reviewReminderTime: row[7], testReminderTime: row[8],
            createdAt: Date(unixMilliseconds: row[9]), updatedAt: Date(unixMilliseconds: row[10]))
        zone = Zone(zoneName) ?? .utc
    }

    /// Stores the defaults for a user who has none yet, so that reminders know about them.
    static func ensure(_ db: Database, user: String, now: Date) throws {
        try save(defaults(user: user, now: now).record, db, replace: false)
    }

    static func save(_ record: SchedulerSettings, _ db: Database, replace: Bool = true) throws {
        try db.cachedStatement(sql: """
            INSERT \(replace ? "OR REPLACE" : "OR IGNORE") INTO settings (user_id, id, time_zone, algorithm, desired_retention, fuzzing,
                reminders_enabled, review_reminder_time, test_reminder_time, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [record.userId, record.id, record.timeZone, record.algorithm.rawValue, record.desiredRetention, record.fuzzing,
                             record.remindersEnabled, record.reviewReminderTime, record.testReminderTime,
                             record.createdAt.unixMilliseconds, record.updatedAt.unixMilliseconds])
    }

    /// Applies `update` (validated) and re-points the user's cards when the algorithm changes.
    static func update(_ update: SettingsUpdate, _ db: Database, user: String, now: Date) throws -> SchedulerSettings {
        var settings = try load(db, user: user, now: now).record
        if let timeZone = update.timeZone { settings.timeZone = try Zone(timeZone, field: "timeZone").identifier }
        if let algorithm = update.algorithm { settings.algorithm = algorithm }
        if let retention = update.desiredRetention { settings.desiredRetention = try Field.number(retention, "desiredRetention", in: retentionRange) }
        if let fuzzing = update.fuzzing { settings.fuzzing = fuzzing }
        if let enabled = update.remindersEnabled { settings.remindersEnabled = enabled }
        if let time = update.reviewReminderTime { settings.reviewReminderTime = try LocalTime(time, field: "reviewReminderTime").description }
        if let time = update.testReminderTime { settings.testReminderTime = try LocalTime(time, field: "testReminderTime").description }
        if update.clearReviewReminder == true { settings.reviewReminderTime = nil }
        if update.clearTestReminder == true { settings.testReminderTime = nil }
        settings.updatedAt = now
        try save(settings, db)
        try db.execute(sql: """
            UPDATE card SET algorithm = ?1, due_at = CASE ?1 WHEN 'fsrs' THEN fsrs_due_at ELSE sm2_due_at END, updated_at = ?2
            WHERE user_id = ?3 AND algorithm != ?1
              AND (set_id IS NULL OR set_id NOT IN (SELECT set_id FROM set_config WHERE user_id = ?3 AND algorithm IS NOT NULL))
            """, arguments: [settings.algorithm.rawValue, now.unixMilliseconds, user])
        return settings
    }

    /// Stores a set's algorithm choice and re-points its cards.
    static func configure(_ configuration: SetConfiguration, _ db: Database, user: String, now: Date) throws -> SetConfiguration {
        let setId = try IDField.check(configuration.setId, "setId")
        let retention = try configuration.desiredRetention.map { value throws(BusError) in try Field.number(value, "desiredRetention", in: retentionRange) }
        if configuration.algorithm == nil && retention == nil {
            try db.execute(sql: "DELETE FROM set_config WHERE user_id = ? AND set_id = ?", arguments: [user, setId])
        } else {
            try db.execute(sql: "INSERT OR REPLACE INTO set_config (user_id, set_id, algorithm, desired_retention) VALUES (?, ?, ?, ?)",
                           arguments: [user, setId, configuration.algorithm?.rawValue, retention])
        }
        try ensure(db, user: user, now: now)
        let effective = try configuration.algorithm ?? load(db, user: user, now: now).record.algorithm
        try db.execute(sql: """
            UPDATE card SET algorithm = ?1, due_at = CASE ?1 WHEN 'fsrs' THEN fsrs_due_at ELSE sm2_due_at END, updated_at = ?2
            WHERE user_id = ?3 AND set_id = ?4 AND algorithm != ?1
            """, arguments: [effective.rawValue, now.unixMilliseconds, user, setId])
        return SetConfiguration(setId: setId, algorithm: configuration.algorithm, desiredRetention: retention)
    }

    /// The algorithm and FSRS retention that apply to cards of `setId`, with the user's fuzzing
    /// choice and zone. One lookup of both tables: every review asks.
    static func effective(_ db: Database, user: String, setId: String?, now: Date) throws -> (SchedulingAlgorithm, retention: Double, fuzzing: Bool, zone: Zone) {
        let defaults = Self.defaultRecord
        let statement = try db.cachedStatement(sql: """
            SELECT s.algorithm, s.desired_retention, s.fuzzing, s.time_zone, c.algorithm, c.desired_retention
            FROM (SELECT ?1 AS user_id) AS u
            LEFT JOIN settings AS s ON s.user_id = u.user_id
            LEFT JOIN set_config AS c ON c.user_id = u.user_id AND c.set_id = ?2
            """)
        let effective = try statement.readFirst(arguments: [user, setId]) { row in
            let algorithm = (row[4] as String?).flatMap(SchedulingAlgorithm.init(rawValue:))
                ?? (row[0] as String?).flatMap(SchedulingAlgorithm.init(rawValue:)) ?? defaults.algorithm
            let retention = row[5] as Double? ?? row[1] as Double? ?? defaults.desiredRetention
            let zone = (row[3] as String?).flatMap(Zone.init) ?? .utc
            return (algorithm, retention: retention, fuzzing: row[2] as Bool? ?? defaults.fuzzing, zone: zone)
        }
        // The query always yields its one row.
        return effective ?? (defaults.algorithm, defaults.desiredRetention, defaults.fuzzing, .utc)
    }
}
