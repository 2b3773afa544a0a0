import Foundation
import GRDB
import Wire

/// One write transaction of synced records for one user, by one writer, at one time, with the
/// user's change log (`sync_change`) and tombstones (`tombstone`). Every write of a synced
/// record goes through here, so that `sync.pull` finds it: ``logChange(_:_:)`` moves the record
/// to the end of the log; a delete leaves a tombstone, so that an older edit arriving later
/// cannot bring the record back. A service's own write context (store's `Changes`, the
/// scheduler's `HabitChanges`) holds one.
///
/// Synced tables follow one convention: keyed by `id` within `user_id`, with `updated_at`
/// (Unix milliseconds) and `device` (who wrote the current version, "" for the API) columns.
public struct SyncLog {
    public let db: Database
    public let user: String
    /// The transaction's time at the millisecond precision records keep.
    public let now: Date
    /// Who writes: "" for API calls, the device id for `sync.push`.
    public let device: String

    public init(db: Database, user: String, now: Date, device: String) {
        self.db = db
        self.user = user
        self.now = Date(unixMilliseconds: now.unixMilliseconds)
        self.device = device
    }

    /// The `updatedAt` of an API edit of a record stamped `previous` (never back in time).
    public func nextUpdate(after previous: Date) -> Date {
        SyncVersion.apiUpdate(now: now, after: previous)
    }

    /// The tables, as `store.v3.sync` and `scheduler.v4: sync` created them. Released: never
    /// edit; a change is a new migration in each service that has them.
    public static let tables = """
        -- One row per changed record; a new change of the same record moves it to a new seq.
        CREATE TABLE sync_change (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL, kind TEXT NOT NULL, record_id TEXT NOT NULL,
            UNIQUE (user_id, kind, record_id)
        );
        CREATE INDEX sync_change_by_user ON sync_change (user_id, seq);
        CREATE TABLE tombstone (
            user_id TEXT NOT NULL, kind TEXT NOT NULL, record_id TEXT NOT NULL,
            deleted_at INTEGER NOT NULL, device TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (user_id, kind, record_id)
        ) WITHOUT ROWID;
        """

    /// SQL that logs every row of the synced tables (`(kind, table)`) as a change, oldest
    /// `updated_at` first: what a first pull returns of the rows written before sync existed.
    public static func logExistingRows(of tables: [(kind: String, table: String)]) -> String {
        let rows = tables.map { "SELECT user_id, '\($0.kind)' AS kind, id, updated_at FROM \($0.table)" }
        return """
            INSERT INTO sync_change (user_id, kind, record_id)
            SELECT user_id, kind, id FROM (\(rows.joined(separator: " UNION ALL "))) ORDER BY updated_at;
            """
    }

    // MARK: Writing

    /// Moves the record to the end of the user's change log.
    public func logChange(_ kind: String, _ id: String) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO sync_change (user_id, kind, record_id) VALUES (?, ?, ?)")
            .execute(arguments: [user, kind, id])
    }

    /// Records a delete at `at` (of a record that is gone, or was never here) and logs it.
    public func writeTombstone(_ kind: String, _ id: String, at: Date) throws {
        try db.cachedStatement(sql: """
            INSERT INTO tombstone (user_id, kind, record_id, deleted_at, device) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (user_id, kind, record_id) DO UPDATE SET deleted_at = excluded.deleted_at, device = excluded.device
            """).execute(arguments: [user, kind, id, at.unixMilliseconds, device])
        try logChange(kind, id)
    }

    /// Forgets the tombstone of a record that is written again.
    public func removeTombstone(_ kind: String, _ id: String) throws {
        try db.cachedStatement(sql: "DELETE FROM tombstone WHERE user_id = ? AND kind = ? AND record_id = ?").execute(arguments: [user, kind, id])
    }

    // MARK: Reading

    /// The version of the user's record `id` in `table`, else its tombstone's, else nil.
    public func current(_ kind: String, _ id: String, table: String) throws -> SyncVersion? {
        if let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT updated_at, device FROM \(table) WHERE user_id = ? AND id = ?"), arguments: [user, id]) {
            return SyncVersion(at: row["updated_at"], deleted: false, device: row["device"])
        }
        return try Self.tombstone(db, user: user, kind, id)
    }

    /// Whether a change stamped `at` (a delete or an edit) by this log's device replaces the
    /// user's current version of the record (see ``SyncVersion``).
    public func wins(_ kind: String, _ id: String, table: String, at: Date, deleted: Bool, _ tieBreak: SyncTieBreak) throws -> Bool {
        SyncVersion(at: at.unixMilliseconds, deleted: deleted, device: device).wins(over: try current(kind, id, table: table), tieBreak)
    }

    /// The user's tombstone of the record, as a version.
    public static func tombstone(_ db: Database, user: String, _ kind: String, _ id: String) throws -> SyncVersion? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT deleted_at, device FROM tombstone WHERE user_id = ? AND kind = ? AND record_id = ?"),
                         arguments: [user, kind, id])
            .map { SyncVersion(at: $0["deleted_at"], deleted: true, device: $0["device"]) }
    }
}
