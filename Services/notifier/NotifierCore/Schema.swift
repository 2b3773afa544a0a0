import GRDB
import ServiceKit
import Storage

/// The notifier's tables. Times are Unix milliseconds; migrations are never edited once released.
enum Schema {
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        DurableConsumer.registerMigrations(&migrator)
        Idempotency.registerMigrations(&migrator)
        migrator.registerMigration("notifier.v1") { db in
            try db.execute(sql: """
                CREATE TABLE channel (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    name TEXT NOT NULL,
                    url TEXT,
                    secret TEXT,
                    token TEXT,
                    device_token TEXT,
                    apns_topic TEXT,
                    kinds TEXT,
                    status TEXT NOT NULL,
                    disabled_reason TEXT,
                    failing_since INTEGER,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX channel_user ON channel (user_id);

                CREATE TABLE preference (
                    user_id TEXT PRIMARY KEY,
                    time_zone TEXT NOT NULL,
                    quiet_start INTEGER,
                    quiet_end INTEGER,
                    alarms_bypass INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );

                CREATE TABLE notification (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    user_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    title TEXT NOT NULL,
                    body TEXT NOT NULL,
                    url TEXT,
                    tags TEXT NOT NULL,
                    priority INTEGER NOT NULL,
                    urgent INTEGER NOT NULL,
                    timer_id TEXT,
                    repeat_index INTEGER,
                    source_event_id TEXT,
                    sound INTEGER NOT NULL DEFAULT 1,
                    batch_items TEXT,
                    state TEXT NOT NULL,
                    not_before INTEGER NOT NULL,
                    released_at INTEGER,
                    read_at INTEGER,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX notification_due ON notification (not_before) WHERE state IN ('scheduled', 'held');
                CREATE INDEX notification_timer ON notification (timer_id) WHERE timer_id IS NOT NULL;
                CREATE INDEX notification_inbox ON notification (user_id, read_at IS NOT NULL, released_at DESC, seq DESC)
                    WHERE state = 'released';
                CREATE INDEX notification_open_batch ON notification (user_id) WHERE batch_items IS NOT NULL AND state IN ('scheduled', 'held');

                CREATE TABLE delivery (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    notification_id TEXT NOT NULL REFERENCES notification (id) ON DELETE CASCADE,
                    channel_id TEXT NOT NULL,
                    channel_type TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER,
                    last_status INTEGER,
                    last_error TEXT,
                    sent_at INTEGER,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX delivery_due ON delivery (next_attempt_at) WHERE state = 'pending';
                CREATE INDEX delivery_sending ON delivery (state) WHERE state = 'sending';
                CREATE INDEX delivery_user ON delivery (user_id, seq DESC);
                CREATE INDEX delivery_notification ON delivery (notification_id);
                CREATE INDEX delivery_channel ON delivery (channel_id) WHERE state = 'pending';

                CREATE TABLE reminder_window (
                    user_id TEXT PRIMARY KEY,
                    last_push_at INTEGER NOT NULL
                );
                """)
        }
        // Alarms carry the timer's vibration flag beside its sound flag (rows from before: on).
        migrator.registerMigration("notifier.v2: alarm vibration") { db in
            try db.execute(sql: "ALTER TABLE notification ADD COLUMN vibration INTEGER NOT NULL DEFAULT 1")
        }
        return migrator
    }
}
