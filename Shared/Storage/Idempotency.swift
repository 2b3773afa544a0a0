import Crypto
import Foundation
import GRDB
import Wire

/// Makes a write idempotent under the request header's `idem` key (wire protocol §2.3 and
/// docs/wire-protocol.md, "Idempotency keys"): the first call with a key runs and its response
/// is stored in the same transaction, bound to a fingerprint of the request; for
/// ``keyLifetime`` a repeat with the same key, user and request returns the stored response
/// without applying anything again, and the same key with another request is refused.
///
/// The key is made before the transaction (fingerprinting a large request takes time that the
/// write lock should not wait for):
///
/// ```swift
/// let key = try Idempotency.Key(context.idempotencyKey, method: context.method, request: request)
/// try await database.pool.write { db in
///     try Idempotency.once(db, user: user, key: key) { try insertMaterial(request, db) }
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
        // Keys stored before have no fingerprint and match any request of their method until
        // they expire.
        migrator.registerMigration("bus.idempotency.v2.fingerprint") { db in
            try db.execute(sql: "ALTER TABLE bus_idempotency ADD COLUMN fingerprint BLOB")
        }
    }

    /// Longest idempotency key accepted.
    public static let maximumKeyLength = 128

    /// How long a key is remembered: a repeat after that applies again.
    public static let keyLifetime: Duration = .seconds(24 * 3600)

    /// Expired keys each new key deletes: the table holds about one lifetime's keys, and no
    /// write pays for more than this many deletes (a backlog drains over later writes).
    static let expiredKeysPerPrune = 16

    /// A request's idempotency key and the fingerprint of the request it came with.
    public struct Key: Sendable, Equatable {
        public let value: String
        public let method: String
        /// SHA-256 of the method and the request's canonical JSON (keys sorted, no white space),
        /// so a retry matches whatever order its encoder wrote the members in.
        public let fingerprint: Data

        /// The key of a request, or nil when it has none.
        /// - Throws: `INVALID_ARGUMENT` for an empty or over-long key.
        public init?(_ value: String?, method: String, request: some Encodable) throws(BusError) {
            guard let value else { return nil }
            guard !value.isEmpty, value.count <= maximumKeyLength else {
                throw BusError.invalidArgument("request header field 'idem' must be 1 to \(maximumKeyLength) characters")
            }
            self.value = value
            self.method = method
            let canonical: JSONValue
            do {
                canonical = try JSONValue.parse(WireCoding.encode(request))
            } catch {
                throw BusError.internal("cannot fingerprint the \(method) request: \(error)")
            }
            var hash = SHA256()
            hash.update(data: Data(method.utf8))
            hash.update(data: [0])
            hash.update(data: canonical.jsonData)
            fingerprint = Data(hash.finalize())
        }
    }

    /// The `reason` in the details of the refusal of a key used for another request, so a caller
    /// that retries can tell it from the method's own FAILED_PRECONDITION.
    public static let keyReusedReason = "IDEMPOTENCY_KEY_REUSED"
    private static let keyReusedDetails: JSONValue = .object(["reason": .string(keyReusedReason)])

    /// Runs `body` once per (`user`, key) within ``keyLifetime``; without a key it always runs.
    /// - Parameter now: the service's clock, for the key's age.
    /// - Throws: `FAILED_PRECONDITION` when the key was already used for another method or
    ///   another request, or what `body` throws (nothing is stored then).
    public static func once<Response: Codable>(
        _ db: Database, user: String, key: Key?, now: Date = Date(), _ body: () throws -> Response
    ) throws -> Response {
        guard let key else { return try body() }
        let nowMs = now.unixMilliseconds
        let oldestKept = nowMs - keyLifetime.components.seconds * 1000
        if let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT method, fingerprint, response FROM bus_idempotency WHERE user = ? AND key = ? AND created_at >= ?"),
            arguments: [user, key.value, oldestKept]
        ) {
            let storedMethod: String = row["method"]
            guard storedMethod == key.method else {
                throw BusError(.failedPrecondition, "idempotency key '\(key.value)' was already used for \(storedMethod)", details: keyReusedDetails)
            }
            if let stored: Data = row["fingerprint"], stored != key.fingerprint {
                throw BusError(
                    .failedPrecondition, "idempotency key '\(key.value)' was already used for a different \(key.method) request; send a new key with a new request",
                    details: keyReusedDetails)
            }
            return try WireCoding.decode(Response.self, from: row["response"])
        }
        let response = try body()
        try prune(db, olderThan: oldestKept)
        // REPLACE: the key may still be stored, expired.
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO bus_idempotency (user, key, method, fingerprint, response, created_at) VALUES (?, ?, ?, ?, ?, ?)
            """).execute(arguments: [user, key.value, key.method, key.fingerprint, try WireCoding.encode(response), nowMs])
        return response
    }

    /// Deletes up to ``expiredKeysPerPrune`` keys created before `oldestKept` (Unix ms), oldest first.
    static func prune(_ db: Database, olderThan oldestKept: Int64) throws {
        try db.cachedStatement(sql: """
            DELETE FROM bus_idempotency WHERE rowid IN
                (SELECT rowid FROM bus_idempotency WHERE created_at < ? ORDER BY created_at LIMIT \(expiredKeysPerPrune))
            """).execute(arguments: [oldestKept])
    }
}
