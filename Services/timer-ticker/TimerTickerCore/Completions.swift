import Bus
import Contracts
import Foundation
import GRDB
import Storage
import Wire

/// Records the end of a timer run and the deletion of discarded timers, each with its event in
/// the same transaction. Both are guarded by the row's state (`status`, `run`), which makes them
/// idempotent: whoever records a run's completion first (the completion writer, or a request that
/// finds the run already over) does it, and every later attempt changes nothing.
struct CompletionRecorder: Sendable {
    /// How long a `discard` timer stays after completing.
    let discardAfterMs: Int64
    /// When this process started (wall clock): a run that ended before it ended while the
    /// service was down, and its completion is marked late.
    let startedMs: Int64

    /// Completes run `run` of the timer with `key` if it is still running that run.
    /// - Returns: the completed row, or nil when there was nothing to complete.
    func complete(_ db: Database, key: Int64, run: Int, firedMs: Int64) throws -> TimerRow? {
        guard let row = try TimerRow.fetchOne(db, sql: "SELECT * FROM timer WHERE engine_key = ?", arguments: [key]),
              row.status == .running, row.run == run
        else { return nil }
        return try complete(db, row, firedMs: firedMs)
    }

    /// Completes `row`, which is running.
    func complete(_ db: Database, _ running: TimerRow, firedMs: Int64) throws -> TimerRow {
        var row = running
        let endMs = row.endMs ?? firedMs
        // A request can find a run over a moment before the engine fires it: never record a
        // firing time before the end.
        let fired = max(firedMs, endMs)
        row.status = .completed
        row.remainingMs = 0
        row.firedMs = fired
        row.updatedMs = fired
        row.pendingDeletionMs = row.endAction == .discard ? fired + discardAfterMs : nil
        try row.update(db)
        let completed = TimerCompleted(
            timer: row.record(nowMs: fired), endDate: Date(unixMilliseconds: endMs), firedAt: Date(unixMilliseconds: fired),
            latenessSeconds: Double(fired - endMs) / 1000, late: endMs < startedMs)
        try Outbox.append(db, TimerTicker.timerCompleted, completed, user: row.userId)
        return row
    }

    /// Deletes the completed `discard` timer with `key` if it is still waiting for deletion in run `run`.
    /// - Returns: whether it was deleted.
    func discard(_ db: Database, key: Int64, run: Int, nowMs: Int64) throws -> Bool {
        guard let row = try TimerRow.fetchOne(db, sql: "SELECT * FROM timer WHERE engine_key = ?", arguments: [key]),
              row.status == .completed, row.run == run, row.pendingDeletionMs != nil
        else { return false }
        try db.execute(sql: "DELETE FROM timer WHERE engine_key = ?", arguments: [key])
        try Outbox.append(db, TimerTicker.timerDeleted, TimerDeleted(timer: row.record(nowMs: nowMs), reason: .discarded), user: row.userId)
        return true
    }
}
