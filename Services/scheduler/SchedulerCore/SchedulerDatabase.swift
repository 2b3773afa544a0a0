import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Storage
import SyncKit

/// The scheduler's own SQLite file: review state and log, habits, tests, plans, settings,
/// reminders sent, and the shared outbox, event cursors and idempotency keys.
///
/// Instants are stored as Unix milliseconds, local dates as `YYYY-MM-DD` text.
public enum SchedulerDatabase {
    /// The migrations, in order. Released migrations are never edited; add new ones.
    public static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("scheduler.v1") { db in
            try db.execute(sql: """
                CREATE TABLE settings (
                    user_id TEXT PRIMARY KEY,
                    id TEXT NOT NULL,
                    time_zone TEXT NOT NULL,
                    algorithm TEXT NOT NULL,
                    desired_retention REAL NOT NULL,
                    fuzzing INTEGER NOT NULL,
                    reminders_enabled INTEGER NOT NULL,
                    review_reminder_time TEXT,
                    test_reminder_time TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE set_config (
                    user_id TEXT NOT NULL,
                    set_id TEXT NOT NULL,
                    algorithm TEXT,
                    desired_retention REAL,
                    PRIMARY KEY (user_id, set_id)
                ) WITHOUT ROWID;

                CREATE TABLE card (
                    user_id TEXT NOT NULL,
                    card_id TEXT NOT NULL,
                    set_id TEXT,
                    subject_id TEXT,
                    algorithm TEXT NOT NULL,
                    due_at INTEGER NOT NULL,
                    review_count INTEGER NOT NULL DEFAULT 0,
                    lapses INTEGER NOT NULL DEFAULT 0,
                    last_reviewed_at INTEGER,
                    last_rating TEXT,
                    sm2_ease REAL NOT NULL,
                    sm2_interval INTEGER NOT NULL,
                    sm2_repetitions INTEGER NOT NULL,
                    sm2_due_at INTEGER NOT NULL,
                    fsrs_phase TEXT NOT NULL,
                    fsrs_step INTEGER,
                    fsrs_stability REAL,
                    fsrs_difficulty REAL,
                    fsrs_due_at INTEGER NOT NULL,
                    last_log_id INTEGER,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (user_id, card_id)
                ) WITHOUT ROWID;
                CREATE INDEX card_due ON card (user_id, due_at, review_count);
                CREATE INDEX card_set_due ON card (user_id, set_id, due_at) WHERE set_id IS NOT NULL;
                CREATE INDEX card_subject_due ON card (user_id, subject_id, due_at) WHERE subject_id IS NOT NULL;

                -- A card's reviews form a chain: card.last_log_id, then each row's previous state
                -- names the row before it. No index: a review appends, undo follows the chain.
                CREATE TABLE review_log (
                    id INTEGER PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    card_id TEXT NOT NULL,
                    set_id TEXT,
                    rating TEXT NOT NULL,
                    reviewed_at INTEGER NOT NULL,
                    local_date TEXT NOT NULL,
                    duration_seconds REAL,
                    previous TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE set_stats (
                    user_id TEXT NOT NULL,
                    set_id TEXT NOT NULL,
                    reviews INTEGER NOT NULL,
                    recalled INTEGER NOT NULL,
                    PRIMARY KEY (user_id, set_id)
                ) WITHOUT ROWID;

                CREATE TABLE study_day (
                    user_id TEXT NOT NULL,
                    date TEXT NOT NULL,
                    reviews INTEGER NOT NULL,
                    PRIMARY KEY (user_id, date)
                ) WITHOUT ROWID;

                CREATE TABLE habit_system (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    identity TEXT,
                    category TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX habit_system_user ON habit_system (user_id, created_at);
                CREATE TABLE habit_task (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    system_id TEXT NOT NULL REFERENCES habit_system(id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    weekdays TEXT,
                    cue TEXT,
                    attractiveness TEXT,
                    ease TEXT,
                    reward TEXT,
                    reminder_time TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX habit_task_system ON habit_task (system_id, created_at);
                CREATE INDEX habit_task_reminder ON habit_task (reminder_time) WHERE reminder_time IS NOT NULL;
                CREATE TABLE check_in (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    task_id TEXT NOT NULL REFERENCES habit_task(id) ON DELETE CASCADE,
                    date TEXT NOT NULL,
                    note TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    UNIQUE (task_id, date)
                );

                CREATE TABLE perf_test (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    system_id TEXT REFERENCES habit_system(id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    unit TEXT NOT NULL,
                    higher_is_better INTEGER NOT NULL,
                    every_days INTEGER NOT NULL,
                    start_date TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX perf_test_user ON perf_test (user_id, created_at);
                CREATE TABLE perf_entry (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    test_id TEXT NOT NULL REFERENCES perf_test(id) ON DELETE CASCADE,
                    date TEXT NOT NULL,
                    value REAL NOT NULL,
                    note TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX perf_entry_test ON perf_entry (test_id, date);

                CREATE TABLE plan (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    set_id TEXT NOT NULL,
                    title TEXT NOT NULL,
                    start_date TEXT NOT NULL,
                    target_date TEXT NOT NULL,
                    time_zone TEXT NOT NULL,
                    session_time TEXT NOT NULL,
                    session_minutes INTEGER NOT NULL,
                    new_cards INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE plan_day (
                    plan_id TEXT NOT NULL REFERENCES plan(id) ON DELETE CASCADE,
                    date TEXT NOT NULL,
                    new_cards INTEGER NOT NULL,
                    expected_reviews INTEGER NOT NULL,
                    session_start INTEGER NOT NULL,
                    PRIMARY KEY (plan_id, date)
                ) WITHOUT ROWID;

                CREATE TABLE reminder_sent (
                    reminder_id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    local_date TEXT NOT NULL,
                    sent_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        Outbox.registerMigrations(&migrator)
        DurableConsumer.registerMigrations(&migrator)
        Idempotency.registerMigrations(&migrator)
        // One due-date index instead of two: see DueIndex.
        migrator.registerMigration("scheduler.v2: one due index") { db in
            try db.execute(sql: """
                DROP INDEX card_due;
                DROP INDEX card_set_due;
                CREATE INDEX card_due_by_set ON card (user_id, set_id, due_at, review_count);
                """)
        }
        // A task's description; check-ins by date for the calendar view (habits.checkIns.list).
        migrator.registerMigration("scheduler.v3: task description, check-ins by date") { db in
            try db.execute(sql: """
                ALTER TABLE habit_task ADD COLUMN description TEXT;
                CREATE INDEX check_in_user_date ON check_in (user_id, date);
                """)
        }
        // Multi-device sync of habit data (sync.push/sync.pull): who wrote each row's current
        // version, the change log and tombstones (SyncLog). Rows already here keep their ids
        // (UUIDs the scheduler made) and times, and become the changes a first pull returns.
        migrator.registerMigration("scheduler.v4: habit sync") { db in
            let devices = HabitSyncKind.tables.map { "ALTER TABLE \($0.table) ADD COLUMN device TEXT NOT NULL DEFAULT '';" }
            try db.execute(sql: devices.joined(separator: "\n") + "\n" + SyncLog.tables + "\n" + SyncLog.logExistingRows(of: HabitSyncKind.tables))
        }
        // review.count: a user's reviews in a time range, without reading all their reviews.
        migrator.registerMigration("scheduler.v5: reviews by time") { db in
            try db.execute(sql: "CREATE INDEX review_log_by_time ON review_log (user_id, reviewed_at)")
        }
        return migrator
    }

    /// How ``DataOwner`` opens the file at `url`; ``prepare(_:logger:)`` then tunes it.
    public static func settings(at url: URL) -> DataOwner.DatabaseSettings {
        DataOwner.DatabaseSettings(url: url, migrator: migrator)
    }

    /// The writer touches the card indexes of users with up to millions of cards: a 64 MiB page
    /// cache and memory-mapped reads instead of a pread per page.
    public static let defaultWriterMemory = ServiceDatabase.WriterMemory(cacheMebibytes: 64, mappedMebibytes: 256)

    /// Tunes the open database for its writer and starts its background checkpointer; once,
    /// before the first write.
    public static func prepare(_ database: ServiceDatabase, writerMemory: ServiceDatabase.WriterMemory = defaultWriterMemory, logger: Logger) throws {
        try database.limitWriterMemory(writerMemory)
        // A thread of its own copies the log back into the file as the writer commits, so that
        // the writer does not stop to do it; the writer's own checkpoint, at 10,000 pages
        // (40 MB) of log, only finishes what that thread left and lets the log start over.
        try database.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 10000") }
        try database.checkpointInBackground(logger: logger)
    }
}

extension Statement {
    /// Reads the first row of the statement's result in place, without copying it into a `Row`
    /// of its own as `Row.fetchOne` does (the review path reads two rows per review).
    func readFirst<Value>(arguments: StatementArguments, _ read: (Row) throws -> Value) throws -> Value? {
        let cursor = try Row.fetchCursor(self, arguments: arguments)
        return try withExtendedLifetime(cursor) { try cursor.next().map(read) }
    }
}
