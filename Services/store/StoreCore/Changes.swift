import Bus
import Contracts
import Foundation
import GRDB
import Storage
import SyncKit
import Wire

/// The writes of one transaction on behalf of one user. Every insert, update and delete of a
/// record goes through here, so that each also (in the same transaction) records the change for
/// `sync.pull`, leaves a tombstone when it deletes, and appends the record's event to the outbox.
final class Changes {
    /// The user, the transaction's time at store precision (`createdAt`/`updatedAt` of what it
    /// writes), who writes ("" for API calls, the device id for `sync.push`), the change log.
    let sync: SyncLog
    var db: Database { sync.db }
    var user: String { sync.user }
    var now: Date { sync.now }
    var device: String { sync.device }

    init(db: Database, user: String, now: Date, device: String = "") {
        sync = SyncLog(db: db, user: user, now: now, device: device)
    }

    // MARK: Reading within the transaction

    /// The user's record `id`, or nil.
    func find<R: StoredRecord>(_ type: R.Type, _ id: String) throws -> R? {
        try R.fetchOne(db.cachedStatement(sql: "SELECT * FROM \(R.table) WHERE user_id = ? AND id = ?"), arguments: [user, id])
    }

    /// The user's record `id`.
    /// - Throws: `NOT_FOUND` naming the kind and the id (also for another user's record).
    func require<R: StoredRecord>(_ type: R.Type, _ id: String, field: String? = nil) throws -> R {
        guard let record = try find(type, id) else { throw StoreError.notFound(R.self, id, field: field) }
        return record
    }

    /// Checks that an optional reference names one of the user's records; "" or nil means none.
    func requireReference<R: StoredRecord>(_ type: R.Type, _ id: String?, field: String) throws -> String? {
        guard let id = try StoreID.reference(id, field) else { return nil }
        _ = try require(type, id, field: field)
        return id
    }

    /// The user's records matching `condition` (SQL over the table's columns), in the order
    /// they were inserted.
    func all<R: StoredRecord>(_ type: R.Type, where condition: String, _ arguments: [any DatabaseValueConvertible]) throws -> [R] {
        try R.fetchAll(db, sql: "SELECT * FROM \(R.table) WHERE user_id = ? AND (\(condition)) ORDER BY rowid",
                       arguments: StatementArguments([user] + arguments))
    }

    // MARK: Writing

    /// Inserts a new record (removing a tombstone of the same id: sync may bring a record back).
    func insert<R: StoredRecord>(_ record: R) throws {
        precondition(record.userId == user, "a record is written only for its own user")
        var values = try record.databaseDictionary
        if R.syncKind != nil { values["device"] = device.databaseValue }
        let columns = values.keys.sorted()
        let sql = "INSERT INTO \(R.table) (\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))"
        do {
            try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(columns.map { values[$0]! }))
        } catch let error as DatabaseError where error.isUniqueViolation {
            throw StoreError.alreadyExists(R.self, record.id)
        }
        if let kind = R.syncKind {
            try sync.removeTombstone(kind.rawValue, record.id)
            try sync.logChange(kind.rawValue, record.id)
        }
        if let topic = R.createdTopic { try Outbox.append(db, topic, record, user: user) }
    }

    /// Inserts a new flashcard with a fresh id (no tombstone can exist) like ``insert(_:)``,
    /// without the record encoder: `materials.put` writes hundreds at once.
    func insertNew(_ card: Flashcard) throws {
        try db.cachedStatement(sql: """
            INSERT INTO flashcard (id, user_id, front, back, kind, tags, set_id, material_id, chunk_id, subject_id, created_at, updated_at, device)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                card.id, user, card.front, card.back, card.kind, JSONValue.array(card.tags.map(JSONValue.string)).jsonText, card.setId,
                card.materialId, card.chunkId, card.subjectId, card.createdAt.unixMilliseconds, card.updatedAt.unixMilliseconds, device,
            ])
        try sync.logChange(SyncKind.flashcard.rawValue, card.id)
        try Outbox.append(db, Store.flashcardCreated, card, user: user)
    }

    /// Writes a changed record over the stored one (same user and id).
    func update<R: StoredRecord>(_ record: R, event: Bool = true) throws {
        var values = try record.databaseDictionary
        values["id"] = nil
        values["user_id"] = nil
        values["created_at"] = nil
        if R.syncKind != nil { values["device"] = device.databaseValue }
        let columns = values.keys.sorted()
        let sql = "UPDATE \(R.table) SET \(columns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE user_id = ? AND id = ?"
        try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(columns.map { values[$0]! } + [user, record.id]))
        guard db.changesCount == 1 else { throw StoreError.notFound(R.self, record.id) }
        if let kind = R.syncKind { try sync.logChange(kind.rawValue, record.id) }
        if event, let topic = R.updatedTopic { try Outbox.append(db, topic, record, user: user) }
    }

    /// Deletes a record, leaving a tombstone at `deletedAt` (default: now) when sync carries it.
    /// Dependents must have been dealt with first (foreign keys refuse otherwise).
    func delete<R: StoredRecord>(_ record: R, deletedAt: Date? = nil) throws {
        try db.cachedStatement(sql: "DELETE FROM \(R.table) WHERE user_id = ? AND id = ?").execute(arguments: [user, record.id])
        guard db.changesCount == 1 else { throw StoreError.notFound(R.self, record.id) }
        let at = (deletedAt ?? now).atStorePrecision
        if let kind = R.syncKind {
            try writeTombstone(kind, record.id, at: at)
            if let topic = R.deletedTopic {
                try Outbox.append(db, topic, RecordDeleted(kind: kind, id: record.id, userId: user, deletedAt: at), user: user)
            }
        }
    }

    /// Deletes a flashcard and appends its `flashcard.deleted` with the cause.
    func deleteFlashcard(_ card: Flashcard, cause: FlashcardDeletionCause, deletedAt: Date? = nil) throws {
        try delete(card, deletedAt: deletedAt)
        let event = FlashcardDeleted(
            id: card.id, userId: user, setId: card.setId, materialId: card.materialId, subjectId: card.subjectId,
            cause: cause, deletedAt: (deletedAt ?? now).atStorePrecision)
        try Outbox.append(db, Store.flashcardDeleted, event, user: user)
    }

    /// Records a delete of a record that is not (or no longer) here, so that an older edit
    /// arriving later through sync cannot bring it back.
    func writeTombstone(_ kind: SyncKind, _ id: String, at: Date) throws {
        try sync.writeTombstone(kind.rawValue, id, at: at)
    }

    /// Sets a reference to nil on every record of the user that has it (`column = id`), as an
    /// update with its event, before the referenced record goes.
    func unlink<R: StoredRecord>(_ type: R.Type, _ keyPath: WritableKeyPath<R, String?>, column: String, from id: String) throws {
        for var record in try all(R.self, where: "\(column) = ?", [id]) {
            record[keyPath: keyPath] = nil
            record.updatedAt = nextUpdate(after: record.updatedAt)
            try update(record)
        }
    }

    /// The `updatedAt` of an API edit: now, or just after the stored version if a device's
    /// clock put that in the future (``SyncVersion/apiUpdate(now:after:)``).
    func nextUpdate(after previous: Date) -> Date { sync.nextUpdate(after: previous) }
}
