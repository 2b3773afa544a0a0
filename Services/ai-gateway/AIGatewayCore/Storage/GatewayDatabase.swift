import Bus
import Foundation
import GRDB
import Storage
import Wire

/// The gateway's own SQLite file (`ai-gateway.sqlite` in DATA_DIR): the response cache, the
/// usage ledger and the users' own voice-command patterns.
public enum GatewayDatabase {
    /// The migrations, by name; released ones are never edited.
    public static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: response cache") { db in
            // key: 128-bit hash (hex) of provider, model and prompt; the prompt itself is not kept.
            try db.create(table: "response_cache") { table in
                table.primaryKey("key", .text)
                table.column("provider", .text).notNull()
                table.column("model", .text).notNull()
                table.column("response", .blob).notNull()
                table.column("createdAt", .double).notNull()
                table.column("expiresAt", .double).notNull().indexed()
            }
        }
        migrator.registerMigration("v1: usage ledger") { db in
            try db.create(table: "usage_ledger") { table in
                table.column("userId", .text).notNull()
                table.column("day", .text).notNull()
                table.column("provider", .text).notNull()
                table.column("model", .text).notNull()
                table.column("requests", .integer).notNull()
                table.column("cacheHits", .integer).notNull()
                table.column("errors", .integer).notNull()
                table.column("promptTokens", .integer).notNull()
                table.column("completionTokens", .integer).notNull()
                table.column("audioSeconds", .double).notNull()
                table.column("costUSD", .double).notNull()
                table.column("createdAt", .double).notNull()
                table.column("updatedAt", .double).notNull()
                table.primaryKey(["userId", "day", "provider", "model"])
            }
            try db.create(index: "usage_ledger_day", on: "usage_ledger", columns: ["day"])
        }
        migrator.registerMigration("v1: intent commands") { db in
            try db.create(table: "intent_command") { table in
                table.primaryKey("id", .text)
                table.column("userId", .text).notNull()
                table.column("patternKey", .text).notNull()
                table.column("pattern", .text).notNull()
                table.column("intent", .text).notNull()
                table.column("category", .text).notNull()
                table.column("parameters", .text).notNull()
                table.column("createdAt", .double).notNull()
                table.column("updatedAt", .double).notNull()
                table.uniqueKey(["userId", "patternKey"])
            }
        }
        return migrator
    }
}

extension BusError {
    /// A database failure as the gateway reports it.
    static func storage(_ error: any Error, doing what: String) -> BusError {
        if let error = error as? BusError { return error }
        return .internal("storage failed while \(what): \(error)")
    }
}
