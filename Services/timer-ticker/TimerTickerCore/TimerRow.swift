import Bus
import Contracts
import Foundation
import GRDB
import Storage
import Wire

/// A timer as stored: the wire record's fields with times in Unix milliseconds.
struct TimerRow: FetchableRecord, Sendable {
    var engineKey: Int64
    var id: String
    var userId: String
    var label: String
    var hours: Int
    var minutes: Int
    var seconds: Int
    var isSoundOn: Bool
    var isVibrationOn: Bool
    var status: TimerStatus
    var endMs: Int64?
    var remainingMs: Int64
    var pendingDeletionMs: Int64?
    var endAction: TimerEndAction
    var presetId: String?
    var run: Int
    var firedMs: Int64?
    var createdMs: Int64
    var updatedMs: Int64

    var durationMs: Int64 { Int64(hours * 3600 + minutes * 60 + seconds) * 1000 }

    /// Reads a row; columns an older writer left empty get the record's defaults.
    init(row: Row) {
        engineKey = row["engine_key"]
        id = row["id"]
        userId = row["user_id"]
        label = row["label"]
        hours = row["hours"]
        minutes = row["minutes"]
        seconds = row["seconds"]
        isSoundOn = row["is_sound_on"] ?? true
        isVibrationOn = row["is_vibration_on"] ?? true
        status = TimerStatus(rawValue: row["status"]) ?? .stopped
        endMs = row["end_ms"]
        pendingDeletionMs = row["pending_deletion_ms"]
        endAction = (row["end_action"] as String?).flatMap(TimerEndAction.init(rawValue:)) ?? .discard
        presetId = row["preset_id"]
        run = row["run"] ?? 1
        firedMs = row["fired_ms"]
        createdMs = row["created_ms"]
        updatedMs = row["updated_ms"] ?? createdMs
        let fullMs = Int64(hours * 3600 + minutes * 60 + seconds) * 1000
        remainingMs = row["remaining_ms"] ?? (status == .completed ? 0 : fullMs)
    }

    init(
        engineKey: Int64 = 0, id: String, userId: String, label: String, duration: TimerRules.Duration, isSoundOn: Bool,
        isVibrationOn: Bool, endAction: TimerEndAction, presetId: String?, nowMs: Int64
    ) {
        self.engineKey = engineKey
        self.id = id
        self.userId = userId
        self.label = label
        hours = duration.hours
        minutes = duration.minutes
        seconds = duration.seconds
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
        status = .running
        endMs = nowMs + Int64(duration.totalSeconds) * 1000
        remainingMs = Int64(duration.totalSeconds) * 1000
        pendingDeletionMs = nil
        self.endAction = endAction
        self.presetId = presetId
        run = 1
        firedMs = nil
        createdMs = nowMs
        updatedMs = nowMs
    }

    /// Whether the timer runs and its run is over at `nowMs` (its completion may not be recorded
    /// yet: the engine fires a moment after the end).
    func hasRunOut(atMs nowMs: Int64) -> Bool {
        guard status == .running, let endMs else { return false }
        return endMs <= nowMs
    }

    /// The wire record as of `nowMs` (a running timer's remaining time counts down).
    func record(nowMs: Int64) -> CountdownTimer {
        let remaining = status == .running ? max(0, (endMs ?? nowMs) - nowMs) : remainingMs
        return CountdownTimer(
            id: id, userId: userId, label: label, hours: hours, minutes: minutes, seconds: seconds, isSoundOn: isSoundOn,
            isVibrationOn: isVibrationOn, status: status, endDate: endMs.map(Date.init(unixMilliseconds:)),
            remainingSeconds: Double(remaining) / 1000, pendingDeletionAt: pendingDeletionMs.map(Date.init(unixMilliseconds:)),
            endAction: endAction, presetId: presetId, run: run, createdAt: Date(unixMilliseconds: createdMs),
            updatedAt: Date(unixMilliseconds: updatedMs))
    }

    private var arguments: StatementArguments {
        [id, userId, label, hours, minutes, seconds, isSoundOn, isVibrationOn, status.rawValue, endMs, remainingMs,
         pendingDeletionMs, endAction.rawValue, presetId, run, firedMs, createdMs, updatedMs]
    }

    private static let columns = """
        id, user_id, label, hours, minutes, seconds, is_sound_on, is_vibration_on, status, end_ms, remaining_ms, \
        pending_deletion_ms, end_action, preset_id, run, fired_ms, created_ms, updated_ms
        """

    /// Inserts the row; sets `engineKey`.
    mutating func insert(_ db: Database) throws {
        try db.execute(sql: "INSERT INTO timer (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", arguments: arguments)
        engineKey = db.lastInsertedRowID
    }

    /// Writes every field back.
    func update(_ db: Database) throws {
        try db.execute(sql: """
            UPDATE timer SET status = ?, end_ms = ?, remaining_ms = ?, pending_deletion_ms = ?, run = ?, fired_ms = ?, updated_ms = ?
            WHERE engine_key = ?
            """, arguments: [status.rawValue, endMs, remainingMs, pendingDeletionMs, run, firedMs, updatedMs, engineKey])
    }

    /// Writes what `timers.update` edits (not on the firing path, which writes only the status).
    func updateEditable(_ db: Database) throws {
        try db.execute(sql: """
            UPDATE timer SET label = ?, hours = ?, minutes = ?, seconds = ?, is_sound_on = ?, is_vibration_on = ?, remaining_ms = ?, updated_ms = ?
            WHERE engine_key = ?
            """, arguments: [label, hours, minutes, seconds, isSoundOn, isVibrationOn, remainingMs, updatedMs, engineKey])
    }

    static func fetch(_ db: Database, id: String, user: String) throws -> TimerRow? {
        try TimerRow.fetchOne(db, sql: "SELECT * FROM timer WHERE id = ? AND user_id = ?", arguments: [id, user])
    }

    /// The user's running plus paused timers (the concurrency limit counts these).
    static func activeCount(_ db: Database, user: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM timer WHERE user_id = ? AND status IN ('running', 'paused')", arguments: [user]) ?? 0
    }
}
