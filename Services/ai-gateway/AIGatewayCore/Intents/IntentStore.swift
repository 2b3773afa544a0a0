import Bus
import Contracts
import Foundation
import GRDB
import Storage
import Wire

/// The users' own command patterns in the gateway's database.
public final class IntentStore: Sendable {
    /// How many patterns one user may keep.
    public static let perUserLimit = 500

    private let database: ServiceDatabase

    public init(database: ServiceDatabase) {
        self.database = database
    }

    /// `user`'s patterns, oldest first.
    func commands(user: String) throws(BusError) -> [IntentCommand] {
        do {
            return try database.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM intent_command WHERE userId = ? ORDER BY createdAt, id", arguments: [user]).map(Self.command)
            }
        } catch {
            throw .storage(error, doing: "reading command patterns")
        }
    }

    /// Inserts or replaces (by pattern) `registrations` for `user`, all in one transaction.
    func upsert(_ registrations: [IntentRegistration], user: String, now: Date) throws(BusError) -> [IntentCommand] {
        do {
            return try database.pool.write { db in
                var stored: [IntentCommand] = []
                for registration in registrations {
                    let key = CommandText.words(registration.pattern, keepPatternMarks: true).joined(separator: " ")
                    let parameters = String(decoding: try WireCoding.encode(registration.parameters ?? []), as: UTF8.self)
                    if let existing = try Row.fetchOne(db, sql: "SELECT * FROM intent_command WHERE userId = ? AND patternKey = ?", arguments: [user, key]) {
                        try db.execute(sql: """
                            UPDATE intent_command SET pattern = ?, intent = ?, category = ?, parameters = ?, updatedAt = ? WHERE id = ?
                            """, arguments: [registration.pattern, registration.intent, registration.category.rawValue, parameters,
                                             now.timeIntervalSince1970, existing["id"] as String])
                        stored.append(Self.command(try Row.fetchOne(db, sql: "SELECT * FROM intent_command WHERE id = ?", arguments: [existing["id"] as String])!))
                    } else {
                        let id = UUID().uuidString.lowercased()
                        try db.execute(sql: """
                            INSERT INTO intent_command (id, userId, patternKey, pattern, intent, category, parameters, createdAt, updatedAt)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """, arguments: [id, user, key, registration.pattern, registration.intent, registration.category.rawValue,
                                             parameters, now.timeIntervalSince1970, now.timeIntervalSince1970])
                        stored.append(Self.command(try Row.fetchOne(db, sql: "SELECT * FROM intent_command WHERE id = ?", arguments: [id])!))
                    }
                }
                let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM intent_command WHERE userId = ?", arguments: [user]) ?? 0
                if total > Self.perUserLimit {
                    throw BusError.resourceExhausted("a user keeps at most \(Self.perUserLimit) command patterns; this would make \(total)")
                }
                return stored
            }
        } catch {
            throw .storage(error, doing: "storing command patterns")
        }
    }

    /// Deletes `user`'s patterns `ids`, all or none.
    /// - Throws: `NOT_FOUND` naming an id that is not one of the user's patterns.
    func delete(ids: [String], user: String) throws(BusError) {
        do {
            try database.pool.write { db in
                for id in ids {
                    try db.execute(sql: "DELETE FROM intent_command WHERE id = ? AND userId = ?", arguments: [id, user])
                    if db.changesCount == 0 { throw BusError.notFound("command pattern \(id) not found") }
                }
            }
        } catch {
            throw .storage(error, doing: "removing command patterns")
        }
    }

    private static func command(_ row: Row) -> IntentCommand {
        let parameters = (try? WireCoding.decode([String].self, from: Data((row["parameters"] as String).utf8))) ?? []
        return IntentCommand(
            id: row["id"], userId: row["userId"], pattern: row["pattern"], intent: row["intent"],
            category: IntentCategory(rawValue: row["category"]) ?? .action, parameters: parameters, builtIn: false,
            createdAt: Date(timeIntervalSince1970: row["createdAt"]), updatedAt: Date(timeIntervalSince1970: row["updatedAt"]))
    }
}
