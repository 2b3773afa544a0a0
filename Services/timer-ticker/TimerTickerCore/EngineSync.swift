import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// Keeps the engine in step with the database: after a transaction that changed a timer
/// commits, the timer's entry is scheduled, moved or cancelled to match the committed row.
///
/// The engine is updated from GRDB's after-commit hook, which runs on the database's single
/// writer right after the commit and before the next transaction: engine updates therefore
/// happen in commit order, and a rolled-back change never reaches the engine.
struct EngineSync: Sendable {
    let engine: TimerEngine
    let wallClock: any WallClock

    /// Makes the engine match `row` once the current transaction commits.
    func syncAfterCommit(_ db: Database, _ row: TimerRow) {
        db.afterNextTransaction { _ in sync(row) }
    }

    /// Cancels `key`'s entry once the current transaction commits (the timer was deleted).
    func cancelAfterCommit(_ db: Database, key: Int64) {
        db.afterNextTransaction { _ in engine.cancel(key: key) }
    }

    /// What the engine should hold for `row`: its end when running, its deletion when
    /// completed and waiting to be discarded, nothing otherwise.
    static func entry(for row: TimerRow) -> (kind: FireKind, atMs: Int64)? {
        switch row.status {
        case .running: row.endMs.map { (.completion, $0) }
        case .completed: row.pendingDeletionMs.map { (.discard, $0) }
        case .paused, .stopped: nil
        }
    }

    private func sync(_ row: TimerRow) {
        guard let (kind, atMs) = Self.entry(for: row) else {
            engine.cancel(key: row.engineKey)
            return
        }
        let delay = atMs - wallClock.now().unixMilliseconds
        engine.schedule(key: row.engineKey, run: Int32(truncatingIfNeeded: row.run), kind: kind, due: engine.clock.deadline(afterMilliseconds: delay))
    }

    /// Loads every timer the engine must hold from the database (start-up); returns how many.
    /// Timers whose end passed while the service was down are due at once.
    func load(_ db: Database) throws -> Int {
        let expected = try Int.fetchOne(db, sql: """
            SELECT (SELECT COUNT(*) FROM timer WHERE status = 'running')
                 + (SELECT COUNT(*) FROM timer WHERE pending_deletion_ms IS NOT NULL)
            """) ?? 0
        let nowMs = wallClock.now().unixMilliseconds
        let base = engine.clock.deadline(afterMilliseconds: 0)
        let rows = try Row.fetchCursor(db, sql: """
            SELECT engine_key, run, end_ms, 0 FROM timer WHERE status = 'running'
            UNION ALL
            SELECT engine_key, run, pending_deletion_ms, 1 FROM timer WHERE pending_deletion_ms IS NOT NULL
            """)
        var entries: [(key: Int64, run: Int32, kind: FireKind, due: Int64)] = []
        entries.reserveCapacity(expected)
        while let row = try rows.next() {
            let atMs: Int64 = row[2] ?? nowMs
            let kind: FireKind = (row[3] as Int64) == 0 ? .completion : .discard
            entries.append((key: row[0], run: Int32(truncatingIfNeeded: row[1] as Int64), kind: kind, due: base + max(0, atMs - nowMs)))
        }
        engine.load(entries, expectedCount: entries.count)
        return entries.count
    }
}
