import Bus
import Contracts
import Foundation
import Logging
import GRDB
import Storage
import Wire

/// connectors' tables. Times are Unix milliseconds; migrations are never edited once released.
enum Schema {
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("connectors.v1") { db in
            try db.execute(sql: """
                CREATE TABLE account (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    provider TEXT NOT NULL,
                    subject TEXT,
                    email TEXT,
                    scopes TEXT NOT NULL,
                    state TEXT NOT NULL,
                    sealed_refresh_token BLOB NOT NULL,
                    calendar_ids TEXT NOT NULL,
                    gmail_label_ids TEXT NOT NULL,
                    gmail_query TEXT,
                    drive_folder_ids TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    last_sync_at INTEGER,
                    last_error TEXT
                );
                CREATE INDEX account_user ON account (user_id, created_at);
                CREATE UNIQUE INDEX account_subject ON account (user_id, provider, subject) WHERE subject IS NOT NULL;

                -- One cursor per account, source and key (a calendar id; '' for Gmail): Calendar's
                -- nextSyncToken, Gmail's historyId, and a page token when a sync stopped mid-way.
                CREATE TABLE cursor (
                    account_id TEXT NOT NULL REFERENCES account (id) ON DELETE CASCADE,
                    source TEXT NOT NULL,
                    key TEXT NOT NULL,
                    token TEXT,
                    page_token TEXT,
                    full_sync_epoch INTEGER,
                    PRIMARY KEY (account_id, source, key)
                );

                -- What each synced item became: a store task or session (Calendar), a material (Gmail, Drive).
                CREATE TABLE entry (
                    account_id TEXT NOT NULL REFERENCES account (id) ON DELETE CASCADE,
                    source TEXT NOT NULL,
                    key TEXT NOT NULL,
                    item_id TEXT NOT NULL,
                    record_kind TEXT NOT NULL,
                    record_id TEXT NOT NULL,
                    version TEXT,
                    seen_epoch INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (account_id, source, key, item_id)
                );

                -- Each source's last sync, for connectors.status.
                CREATE TABLE source_status (
                    account_id TEXT NOT NULL REFERENCES account (id) ON DELETE CASCADE,
                    source TEXT NOT NULL,
                    last_sync_at INTEGER,
                    added INTEGER NOT NULL DEFAULT 0,
                    updated INTEGER NOT NULL DEFAULT 0,
                    removed INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT,
                    PRIMARY KEY (account_id, source)
                );
                """)
        }
        Outbox.registerMigrations(&migrator)
        return migrator
    }
}

/// One row of `account`, with its sealed refresh token.
struct AccountRow: Sendable {
    var account: ConnectorAccount
    var subject: String?
    var sealedRefreshToken: Data

    init(row: Row) {
        func list(_ column: String) -> [String] {
            (try? JSONDecoder().decode([String].self, from: Data((row[column] as String? ?? "[]").utf8))) ?? []
        }
        account = ConnectorAccount(
            id: row["id"], userId: row["user_id"], provider: ConnectorProvider(rawValue: row["provider"]) ?? .google, email: row["email"],
            scopes: list("scopes"), state: ConnectorAccountState(rawValue: row["state"]) ?? .needsReauth, calendarIds: list("calendar_ids"),
            gmailLabelIds: list("gmail_label_ids"), gmailQuery: row["gmail_query"], driveFolderIds: list("drive_folder_ids"),
            createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]),
            lastSyncAt: (row["last_sync_at"] as Int64?).map(Date.init(unixMilliseconds:)), lastError: row["last_error"])
        subject = row["subject"]
        sealedRefreshToken = row["sealed_refresh_token"]
    }

    static func json(_ list: [String]) -> String {
        String(decoding: (try? JSONEncoder().encode(list)) ?? Data("[]".utf8), as: UTF8.self)
    }

    static func find(_ db: Database, id: String, user: String) throws -> AccountRow? {
        try Row.fetchOne(db, sql: "SELECT * FROM account WHERE id = ? AND user_id = ?", arguments: [id, user]).map(AccountRow.init)
    }

    /// - Throws: NOT_FOUND for an account the user does not have.
    static func require(_ db: Database, id: String, user: String) throws -> AccountRow {
        guard let row = try find(db, id: id, user: user) else { throw BusError.notFound("account '\(id)' not found") }
        return row
    }
}
