import Foundation
import GRDB
import Wire

/// Makes a write idempotent under the request header's `idem` key (wire protocol §2.3): the
/// first call with a key runs and its response is stored in the same transaction; a repeat
/// with the same key and user returns the stored response without applying anything again.
///
/// ```swift
/// try await database.pool.write { db in
///     try Idempotency.once(db, user: user, key: context.idempotencyKey, method: context.method) {
///         try insertMaterial(request, db)
///     }
/// }
/// ```
public enum Idempotency {
    /// Adds the key table; register with the service's other migrations.
    public static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("bus.idempotency.v1") { db in
            try db.execute(sql: """
                CREATE TABLE bus_idempotency (
                    user TEXT NOT NULL,
                    key TEXT NOT NULL,
                    method TEXT NOT NULL,
                    response BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (user, key)
                );
                CREATE INDEX bus_idempotency_created ON bus_idempotency (created_at);
                """)
        }
    }

    /// Longest idempotency key accepted.
    public static let maximumKeyLength = 128

    /// Runs `body` once per (`user`, `key`); without a key it always runs.
    /// - Throws: `INVALID_ARGUMENT` for an over-long key, `FAILED_PRECONDITION` when the key was
    ///   already used for another method, or what `body` throws (nothing is stored then).
    public static func once<Response: Codable>(
        _ db: Database, user: String, key: String?, method: String, _ body: () throws -> Response
    ) throws -> Response {
        guard let key else { return try body() }
        guard !key.isEmpty, key.count <= maximumKeyLength else {
            throw BusError.invalidArgument("request header field 'idem' must be 1 to \(maximumKeyLength) characters")
        }
        if let row = try Row.fetchOne(db, sql: "SELECT method, response FROM bus_idempotency WHERE user = ? AND key = ?", arguments: [user, key]) {
            let storedMethod: String = row["method"]
            guard storedMethod == method else {
                throw BusError.failedPrecondition("idempotency key '\(key)' was already used for \(storedMethod)")
            }
            return try WireCoding.decode(Response.self, from: row["response"])
        }
        let response = try body()
        try db.execute(
            sql: "INSERT INTO bus_idempotency (user, key, method, response, created_at) VALUES (?, ?, ?, ?, ?)",
            arguments: [user, key, method, try WireCoding.encode(response), Date().unixMilliseconds])
        return response
    }

    /// Forgets keys older than `age` (a retry after that applies again).
    public static func prune(_ db: Database, olderThan age: Duration) throws {
        try db.execute(sql: "DELETE FROM bus_idempotency WHERE created_at < ?",
                       arguments: [Date().unixMilliseconds - age.components.seconds * 1000])
    }
}
