import GRDB
import Storage
import SyncKit

/// The store's database schema as named migrations. Released migrations are never edited; a
/// change is a new migration (columns added with defaults so old rows keep loading).
///
/// - `store.v1`: the content tables (the first released schema).
/// - `store.v2.search`: the FTS5 index over chunks, flashcards and notes, and its queue.
/// - `store.v3.sync`: per-row device, the change log and tombstones for `sync.push`/`sync.pull`.
public enum StoreSchema {
    /// Every migration, in order.
    public static var migrator: DatabaseMigrator { migrator(through: .processingLease) }

    /// The named stages of the schema, for tests that start from an old one.
    public enum Stage: Int, Sendable { case content = 1, search, sync, chunkSections, processingLease }

    /// The migrations up to and including `stage`.
    public static func migrator(through stage: Stage) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        Outbox.registerMigrations(&migrator)
        Idempotency.registerMigrations(&migrator)
        migrator.registerMigration("store.v1") { db in try db.execute(sql: contentTables) }
        if stage.rawValue >= Stage.search.rawValue {
            migrator.registerMigration("store.v2.search") { db in try db.execute(sql: searchIndex) }
        }
        if stage.rawValue >= Stage.sync.rawValue {
            migrator.registerMigration("store.v3.sync") { db in try db.execute(sql: syncTables) }
        }
        if stage.rawValue >= Stage.chunkSections.rawValue {
            migrator.registerMigration("store.v4.chunk-sections") { db in try db.execute(sql: "ALTER TABLE chunk ADD COLUMN section TEXT") }
        }
        if stage.rawValue >= Stage.processingLease.rawValue {
            // When a long job last said it is alive (`materials.renew`); not part of the record.
            migrator.registerMigration("store.v5.processing-lease") { db in
                try db.execute(sql: "ALTER TABLE material ADD COLUMN processing_renewed_at INTEGER")
            }
        }
        return migrator
    }

    // Every table is keyed by (user_id, id): ids are per user, and a composite foreign key can
    // only point at the same user's record. Tables indexed for search have a stable integer
    // `pk` because the search index's rowids are derived from it. Times are Unix milliseconds.
    static let contentTables = """
        CREATE TABLE subject (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            name TEXT NOT NULL, color TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id)
        );
        CREATE INDEX subject_by_name ON subject (user_id, name, id);

        CREATE TABLE material (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            title TEXT NOT NULL, subject_id TEXT, source_kind TEXT NOT NULL,
            file_name TEXT, mime_type TEXT, size_bytes INTEGER NOT NULL DEFAULT 0, sha256 TEXT,
            status TEXT NOT NULL DEFAULT 'pending', failure_reason TEXT, processing_started_at INTEGER,
            summary TEXT, keywords TEXT NOT NULL DEFAULT '[]',
            is_archived INTEGER NOT NULL DEFAULT 0, is_priority INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, subject_id) REFERENCES subject (user_id, id)
        );
        CREATE INDEX material_by_created ON material (user_id, created_at, id);
        CREATE INDEX material_by_subject ON material (user_id, subject_id);
        CREATE UNIQUE INDEX material_by_sha256 ON material (user_id, sha256) WHERE sha256 IS NOT NULL;
        CREATE INDEX material_sha256 ON material (sha256) WHERE sha256 IS NOT NULL;
        CREATE INDEX material_processing ON material (processing_started_at) WHERE status = 'processing';

        -- Original files, content-addressed; shared by every material with the same bytes.
        CREATE TABLE material_original (
            sha256 TEXT PRIMARY KEY NOT NULL,
            size_bytes INTEGER NOT NULL,
            content BLOB NOT NULL
        );

        CREATE TABLE source_document (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            material_id TEXT NOT NULL, kind TEXT NOT NULL, title TEXT,
            character_count INTEGER NOT NULL DEFAULT 0, page_count INTEGER, duration_seconds REAL, language TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, material_id) REFERENCES material (user_id, id) ON DELETE CASCADE
        );
        CREATE INDEX source_document_by_material ON source_document (user_id, material_id, created_at, id);

        CREATE TABLE chunk (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            material_id TEXT NOT NULL, source_document_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL, text TEXT NOT NULL,
            page_number INTEGER, start_seconds REAL, end_seconds REAL,
            start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            UNIQUE (user_id, id),
            FOREIGN KEY (user_id, source_document_id) REFERENCES source_document (user_id, id) ON DELETE CASCADE,
            FOREIGN KEY (user_id, material_id) REFERENCES material (user_id, id) ON DELETE CASCADE
        );
        CREATE INDEX chunk_by_document ON chunk (user_id, source_document_id, ordinal, id);
        CREATE INDEX chunk_by_material ON chunk (user_id, material_id, source_document_id, ordinal);

        CREATE TABLE flashcard_set (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            name TEXT NOT NULL, topic TEXT, subject_id TEXT, material_id TEXT,
            card_count INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, subject_id) REFERENCES subject (user_id, id),
            FOREIGN KEY (user_id, material_id) REFERENCES material (user_id, id)
        );
        CREATE INDEX flashcard_set_by_created ON flashcard_set (user_id, created_at, id);
        CREATE INDEX flashcard_set_by_subject ON flashcard_set (user_id, subject_id);
        CREATE INDEX flashcard_set_by_material ON flashcard_set (user_id, material_id);

        CREATE TABLE flashcard (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            front TEXT NOT NULL, back TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'qa', tags TEXT NOT NULL DEFAULT '[]',
            set_id TEXT, material_id TEXT, chunk_id TEXT, subject_id TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            UNIQUE (user_id, id),
            FOREIGN KEY (user_id, set_id) REFERENCES flashcard_set (user_id, id),
            FOREIGN KEY (user_id, material_id) REFERENCES material (user_id, id),
            FOREIGN KEY (user_id, chunk_id) REFERENCES chunk (user_id, id),
            FOREIGN KEY (user_id, subject_id) REFERENCES subject (user_id, id)
        );
        CREATE INDEX flashcard_by_user ON flashcard (user_id);  -- then rowid: the list order
        CREATE INDEX flashcard_by_created ON flashcard (user_id, created_at);
        CREATE INDEX flashcard_by_set ON flashcard (user_id, set_id);
        CREATE INDEX flashcard_by_material ON flashcard (user_id, material_id);
        CREATE INDEX flashcard_by_chunk ON flashcard (user_id, chunk_id);
        CREATE INDEX flashcard_by_subject ON flashcard (user_id, subject_id);

        -- A set's card count follows its cards.
        CREATE TRIGGER flashcard_set_count_insert AFTER INSERT ON flashcard WHEN new.set_id IS NOT NULL BEGIN
            UPDATE flashcard_set SET card_count = card_count + 1 WHERE user_id = new.user_id AND id = new.set_id;
        END;
        CREATE TRIGGER flashcard_set_count_delete AFTER DELETE ON flashcard WHEN old.set_id IS NOT NULL BEGIN
            UPDATE flashcard_set SET card_count = card_count - 1 WHERE user_id = old.user_id AND id = old.set_id;
        END;
        CREATE TRIGGER flashcard_set_count_move AFTER UPDATE OF set_id ON flashcard
        WHEN old.set_id IS NOT new.set_id BEGIN
            UPDATE flashcard_set SET card_count = card_count - 1 WHERE user_id = old.user_id AND id = old.set_id;
            UPDATE flashcard_set SET card_count = card_count + 1 WHERE user_id = new.user_id AND id = new.set_id;
        END;

        CREATE TABLE question (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            text TEXT NOT NULL, category TEXT NOT NULL, display_order INTEGER NOT NULL DEFAULT 0,
            is_required INTEGER NOT NULL DEFAULT 0, hint TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id)
        );
        CREATE INDEX question_by_order ON question (user_id, display_order, created_at, id);

        CREATE TABLE note (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            question_id TEXT NOT NULL, answer TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}',
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            UNIQUE (user_id, id),
            UNIQUE (user_id, question_id),
            FOREIGN KEY (user_id, question_id) REFERENCES question (user_id, id)
        );
        CREATE INDEX note_by_user ON note (user_id);

        CREATE TABLE conversation (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            title TEXT NOT NULL, material_id TEXT, set_id TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, material_id) REFERENCES material (user_id, id),
            FOREIGN KEY (user_id, set_id) REFERENCES flashcard_set (user_id, id)
        );
        CREATE INDEX conversation_by_updated ON conversation (user_id, updated_at, id);
        CREATE INDEX conversation_by_material ON conversation (user_id, material_id);
        CREATE INDEX conversation_by_set ON conversation (user_id, set_id);

        CREATE TABLE message (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, conversation_id) REFERENCES conversation (user_id, id)
        );
        CREATE INDEX message_by_conversation ON message (user_id, conversation_id, created_at, id);

        CREATE TABLE study_session (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            subject_id TEXT, set_id TEXT, started_at INTEGER NOT NULL, ended_at INTEGER,
            cards_reviewed INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, subject_id) REFERENCES subject (user_id, id),
            FOREIGN KEY (user_id, set_id) REFERENCES flashcard_set (user_id, id)
        );
        CREATE INDEX study_session_by_start ON study_session (user_id, started_at, id);
        CREATE INDEX study_session_by_subject ON study_session (user_id, subject_id);
        CREATE INDEX study_session_by_set ON study_session (user_id, set_id);

        CREATE TABLE task (
            id TEXT NOT NULL, user_id TEXT NOT NULL,
            title TEXT NOT NULL, due_at INTEGER, is_done INTEGER NOT NULL DEFAULT 0, done_at INTEGER,
            subject_id TEXT, material_id TEXT,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, subject_id) REFERENCES subject (user_id, id),
            FOREIGN KEY (user_id, material_id) REFERENCES material (user_id, id)
        );
        CREATE INDEX task_by_due ON task (user_id, due_at, created_at, id);
        CREATE INDEX task_by_subject ON task (user_id, subject_id);
        CREATE INDEX task_by_material ON task (user_id, material_id);
        """

    /// The search index is written outside the transactions that change content (by
    /// ``SearchIndexer``): triggers only queue what changed. An entry's rowid encodes its user
    /// (`search_user.number << 40 | pk << 2 | kind`, kind 1 chunk, 2 flashcard, 3 note), so
    /// that a query searches one user's rowid range only. `scope` holds hashed subject and
    /// material tokens for filters; `rank` is bm25 with titles (card fronts, questions)
    /// weighing twice the bodies.
    static let searchIndex = """
        CREATE VIRTUAL TABLE search_index USING fts5(
            title, body, scope,
            user_id UNINDEXED, record_id UNINDEXED, subject_id UNINDEXED, material_id UNINDEXED,
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        INSERT INTO search_index (search_index, rank) VALUES ('rank', 'bm25(2.0, 1.0, 0.0)');
        CREATE TABLE search_user (number INTEGER PRIMARY KEY, user_id TEXT NOT NULL UNIQUE);
        CREATE TABLE search_queue (
            user_id TEXT NOT NULL, kind INTEGER NOT NULL, pk INTEGER NOT NULL,
            PRIMARY KEY (user_id, kind, pk)
        ) WITHOUT ROWID;

        CREATE TRIGGER search_chunk_insert AFTER INSERT ON chunk BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (new.user_id, 1, new.pk);
        END;
        CREATE TRIGGER search_chunk_update AFTER UPDATE OF text ON chunk BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (new.user_id, 1, new.pk);
        END;
        CREATE TRIGGER search_chunk_delete AFTER DELETE ON chunk BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (old.user_id, 1, old.pk);
        END;
        CREATE TRIGGER search_material_subject AFTER UPDATE OF subject_id ON material
        WHEN old.subject_id IS NOT new.subject_id BEGIN
            INSERT OR REPLACE INTO search_queue SELECT user_id, 1, pk FROM chunk WHERE user_id = new.user_id AND material_id = new.id;
        END;
        CREATE TRIGGER search_flashcard_insert AFTER INSERT ON flashcard BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (new.user_id, 2, new.pk);
        END;
        CREATE TRIGGER search_flashcard_update AFTER UPDATE OF front, back, subject_id, material_id ON flashcard BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (new.user_id, 2, new.pk);
        END;
        CREATE TRIGGER search_flashcard_delete AFTER DELETE ON flashcard BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (old.user_id, 2, old.pk);
        END;
        CREATE TRIGGER search_note_insert AFTER INSERT ON note BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (new.user_id, 3, new.pk);
        END;
        CREATE TRIGGER search_note_update AFTER UPDATE OF answer ON note BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (new.user_id, 3, new.pk);
        END;
        CREATE TRIGGER search_note_delete AFTER DELETE ON note BEGIN
            INSERT OR REPLACE INTO search_queue VALUES (old.user_id, 3, old.pk);
        END;
        CREATE TRIGGER search_question_text AFTER UPDATE OF text ON question BEGIN
            INSERT OR REPLACE INTO search_queue SELECT user_id, 3, pk FROM note WHERE user_id = new.user_id AND question_id = new.id;
        END;

        -- Index what the first schema already holds.
        INSERT INTO search_queue SELECT user_id, 1, pk FROM chunk;
        INSERT INTO search_queue SELECT user_id, 2, pk FROM flashcard;
        INSERT INTO search_queue SELECT user_id, 3, pk FROM note;
        """

    /// The tables that sync carries, by sync kind.
    static let syncedTables: [(kind: String, table: String)] = [
        ("subject", "subject"), ("material", "material"), ("flashcard", "flashcard"), ("set", "flashcard_set"),
        ("question", "question"), ("note", "note"), ("conversation", "conversation"), ("message", "message"),
        ("session", "study_session"), ("task", "task"),
    ]

    static var syncTables: String {
        // `device`: who wrote the row's current version ("" = the API), the last-write-wins tie-break.
        let devices = syncedTables.map { "ALTER TABLE \($0.table) ADD COLUMN device TEXT NOT NULL DEFAULT '';" }
        // Existing rows become changes a first pull returns, oldest first.
        return devices.joined(separator: "\n") + "\n" + SyncLog.tables + "\n" + SyncLog.logExistingRows(of: syncedTables)
    }
}
