import GRDB
import Storage

/// timer-ticker's tables. Times are Unix milliseconds (INTEGER) so the start-up load and the
/// completion writer never parse dates; `engine_key` (the rowid) is the engine's key. The two
/// partial indexes cover the start-up load (key, run, deadline), so it reads no table page.
public enum TimerSchema {
    /// Every migration of the service's database, the shared ones included.
    public static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("timer-ticker.v1") { db in
            try db.execute(sql: """
                CREATE TABLE timer (
                    engine_key INTEGER PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    user_id TEXT NOT NULL,
                    label TEXT NOT NULL,
                    hours INTEGER NOT NULL,
                    minutes INTEGER NOT NULL,
                    seconds INTEGER NOT NULL,
                    is_sound_on INTEGER NOT NULL DEFAULT 1,
                    is_vibration_on INTEGER NOT NULL DEFAULT 1,
                    status TEXT NOT NULL CHECK (status IN ('running', 'paused', 'stopped', 'completed')),
                    end_ms INTEGER,
                    remaining_ms INTEGER,
                    pending_deletion_ms INTEGER,
                    end_action TEXT NOT NULL DEFAULT 'discard' CHECK (end_action IN ('discard', 'keep')),
                    preset_id TEXT,
                    run INTEGER NOT NULL DEFAULT 1,
                    fired_ms INTEGER,
                    created_ms INTEGER NOT NULL,
                    updated_ms INTEGER
                );
                CREATE INDEX timer_user ON timer (user_id, created_ms);
                CREATE INDEX timer_user_active ON timer (user_id) WHERE status IN ('running', 'paused');
                CREATE INDEX timer_running ON timer (end_ms, run) WHERE status = 'running';
                CREATE INDEX timer_pending_deletion ON timer (pending_deletion_ms, run) WHERE pending_deletion_ms IS NOT NULL;
                CREATE TABLE preset (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    label TEXT NOT NULL,
                    hours INTEGER NOT NULL,
                    minutes INTEGER NOT NULL,
                    seconds INTEGER NOT NULL,
                    is_sound_on INTEGER NOT NULL DEFAULT 1,
                    is_vibration_on INTEGER NOT NULL DEFAULT 1,
                    end_action TEXT NOT NULL DEFAULT 'discard',
                    created_ms INTEGER NOT NULL,
                    updated_ms INTEGER NOT NULL
                );
                CREATE INDEX preset_user ON preset (user_id, created_ms);
                """)
        }
        Outbox.registerMigrations(&migrator)
        Idempotency.registerMigrations(&migrator)
        return migrator
    }
}
