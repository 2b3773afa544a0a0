import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// Multi-device sync: last write wins per record, deletes leave tombstones, and a per-user
/// change log (`sync_change`) gives "everything since" by a cursor.
enum SyncMethods {
    static func register(_ handlers: Handlers<StoreService>) {
        handlers.handle(Store.syncPush) { store, request, context in
            try Field.text(request.deviceId, "deviceId", maximum: StoreLimits.idLength)
            try Field.count(request.changes, "changes", in: 0...StoreLimits.changesPerPush)
            try checkClocks(request.changes, now: store.clock.now(), skew: store.syncFutureSkew)
            return try await store.write(context, request, device: request.deviceId) { changes in
                SyncPushResponse(results: try request.changes.enumerated().map { index, change in
                    SyncPushResult(kind: change.kind, id: change.id, outcome: try apply(change, field: "changes[\(index)]", changes))
                })
            }
        }
        handlers.handle(Store.syncPull) { store, request, context in
            try await store.read(context) { db, user in try pull(request, db, user: user) }
        }
    }

    /// Refuses a change stamped more than `skew` after `now` (as the scheduler refuses a review
    /// in the future): last write wins, so such a change would win over every edit until the
    /// clocks reach it, and one stamped near the wire's last date would leave no later time for
    /// the next edit.
    /// - Throws: `INVALID_ARGUMENT` naming the change and its record.
    static func checkClocks(_ changes: [SyncChange], now: Date, skew: Duration) throws(BusError) {
        let latest = now.addingTimeInterval(TimeInterval(skew.components.seconds))
        for (index, change) in changes.enumerated() where change.updatedAt > latest {
            try Field.id(change.id, "changes[\(index)].id")
            throw Field.invalid(
                "changes[\(index)].updatedAt",
                "of \(change.kind.rawValue) '\(change.id)' must not be more than \(skew.components.seconds) seconds after the store's clock "
                    + "(\(ISO8601.format(now))); got \(ISO8601.format(change.updatedAt))")
        }
    }

    /// A version of a record, ordered as last-write-wins decides: later time, then delete over
    /// edit, then the greater device id.
    struct Version: Comparable {
        var at: Int64
        var deleted: Bool
        var device: String

        static func < (a: Version, b: Version) -> Bool {
            (a.at, a.deleted ? 1 : 0, a.device) < (b.at, b.deleted ? 1 : 0, b.device)
        }
    }

    /// Applies one change if it wins. Changes apply in push order, so a record must come after
    /// those it refers to; an error names the change (`changes[3]: …`) and fails the push.
    static func apply(_ change: SyncChange, field: String, _ changes: Changes) throws -> SyncOutcome {
        do {
            return try applyKind(change, field: field, changes)
        } catch let error as BusError where !error.message.hasPrefix(field) {
            throw BusError(error.code, "\(field): \(error.message)", details: error.details)
        }
    }

    private static func applyKind(_ change: SyncChange, field: String, _ changes: Changes) throws -> SyncOutcome {
        try Field.id(change.id, "\(field).id")
        switch change.kind {
        case .subject: return try apply(SubjectRecords.self, change, field: field, changes)
        case .material: return try applyMaterial(change, field: field, changes)
        case .flashcard: return try apply(FlashcardRecords.self, change, field: field, changes)
        case .set: return try apply(FlashcardSetRecords.self, change, field: field, changes)
        case .question: return try apply(QuestionRecords.self, change, field: field, changes)
        case .note: return try apply(NoteRecords.self, change, field: field, changes)
        case .conversation: return try apply(ConversationRecords.self, change, field: field, changes)
        case .message: return try apply(MessageRecords.self, change, field: field, changes)
        case .session: return try apply(StudySessionRecords.self, change, field: field, changes)
        case .task: return try apply(StudyTaskRecords.self, change, field: field, changes)
        }
    }

    private static func apply<Kind: RecordKind>(_ kind: Kind.Type, _ change: SyncChange, field: String, _ changes: Changes) throws -> SyncOutcome {
        let existing = try changes.find(Kind.Record.self, change.id)
        guard try wins(change, over: existing, changes) else { return .superseded }
        let at = change.updatedAt.atStorePrecision
        if change.deleted {
            if let card = existing as? Flashcard {
                try changes.deleteFlashcard(card, cause: .synced, deletedAt: at)
            } else if let existing {
                try Kind.remove(existing, changes)
            }
            try changes.writeTombstone(change.kind, change.id, at: at)
            return .applied
        }
        var request = try decode(Kind.Create.self, change, field: field)
        request.id = change.id
        var record: Kind.Record
        if let existing {
            record = try Kind.replace(existing, with: request, changes)
            record.updatedAt = at
            try changes.update(record)
        } else {
            do {
                record = try Kind.make(request, changes)
            } catch let error as BusError where error.code == .alreadyExists {
                return .superseded  // another record holds its place (a question's note made on another device)
            }
            record.createdAt = at
            record.updatedAt = at
            try changes.insert(record)
        }
        return .applied
    }

    /// Materials come to exist through uploads and ingest; sync carries edits of their user
    /// fields (`MaterialUpdate`) and deletes. An edit of a material that is gone is superseded.
    private static func applyMaterial(_ change: SyncChange, field: String, _ changes: Changes) throws -> SyncOutcome {
        let existing = try changes.find(Material.self, change.id)
        guard try wins(change, over: existing, changes) else { return .superseded }
        let at = change.updatedAt.atStorePrecision
        if change.deleted {
            if let existing { try MaterialRecords.remove(existing, changes) }
            try changes.writeTombstone(.material, change.id, at: at)
            return .applied
        }
        guard let existing else { return .superseded }
        var update = try decode(MaterialUpdate.self, change, field: field)
        update.id = change.id
        var material = try MaterialRecords.apply(update, to: existing, changes)
        material.updatedAt = at
        try changes.update(material)
        return .applied
    }

    /// Whether the pushed change is newer than what the store has (the record or its tombstone).
    private static func wins<R: StoredRecord>(_ change: SyncChange, over existing: R?, _ changes: Changes) throws -> Bool {
        let incoming = Version(at: change.updatedAt.unixMilliseconds, deleted: change.deleted, device: changes.device)
        let current: Version?
        if let existing {
            let device = try String.fetchOne(changes.db, sql: "SELECT device FROM \(R.table) WHERE user_id = ? AND id = ?", arguments: [changes.user, existing.id])
            current = Version(at: existing.updatedAt.unixMilliseconds, deleted: false, device: device ?? "")
        } else if let row = try Row.fetchOne(changes.db, sql: "SELECT deleted_at, device FROM tombstone WHERE user_id = ? AND kind = ? AND record_id = ?",
                                             arguments: [changes.user, change.kind, change.id]) {
            current = Version(at: row["deleted_at"], deleted: true, device: row["device"])
        } else {
            current = nil
        }
        return current.map { $0 < incoming } ?? true
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ change: SyncChange, field: String) throws -> T {
        guard case .object(var object)? = change.record else {
            throw Field.invalid("\(field).record", "must be the record's fields as an object unless 'deleted' is true")
        }
        object["id"] = .string(change.id)
        do {
            return try WireCoding.decode(T.self, from: JSONValue.object(object).jsonData)
        } catch {
            throw BusError.invalidArgument("\(field).record: \(DecodingFailure.describe(error))")
        }
    }

    // MARK: Pull

    static func pull(_ request: SyncPullRequest, _ db: Database, user: String) throws -> SyncPullResponse {
        let limit = try Field.int(request.limit, "limit", in: 1...StoreLimits.maximumPageSize, default: 200)
        let after = try request.cursor.map { cursor throws(BusError) in
            Int64.fromDatabaseValue(try PageCursor.decode(cursor, list: "sync", keyCount: 1)[0]) ?? 0
        } ?? 0
        var sql = "SELECT seq, kind, record_id FROM sync_change WHERE user_id = ? AND seq > ?"
        var arguments: [any DatabaseValueConvertible] = [user, after]
        if let kinds = request.kinds, !kinds.isEmpty {
            sql += " AND kind IN (\(kinds.map { _ in "?" }.joined(separator: ", ")))"
            arguments.append(contentsOf: kinds.map(\.rawValue))
        }
        let rows = try Row.fetchAll(db, sql: sql + " ORDER BY seq LIMIT \(limit + 1)", arguments: StatementArguments(arguments))
        var changes: [SyncChange] = []
        var last = after
        for row in rows.prefix(limit) {
            last = row["seq"]
            guard let kind = SyncKind(rawValue: row["kind"]) else { continue }
            if let change = try current(kind, id: row["record_id"], db, user: user) { changes.append(change) }
        }
        return SyncPullResponse(changes: changes, cursor: PageCursor.encode(list: "sync", keys: [last.databaseValue]), hasMore: rows.count > limit)
    }

    /// The record's current state as a change: the record, or its tombstone.
    private static func current(_ kind: SyncKind, id: String, _ db: Database, user: String) throws -> SyncChange? {
        let change: SyncChange? = switch kind {
        case .subject: try current(Subject.self, id, db, user)
        case .material: try current(Material.self, id, db, user)
        case .flashcard: try current(Flashcard.self, id, db, user)
        case .set: try current(FlashcardSet.self, id, db, user)
        case .question: try current(Question.self, id, db, user)
        case .note: try current(Note.self, id, db, user)
        case .conversation: try current(Conversation.self, id, db, user)
        case .message: try current(ConversationMessage.self, id, db, user)
        case .session: try current(StudySession.self, id, db, user)
        case .task: try current(StudyTask.self, id, db, user)
        }
        if let change { return change }
        guard let tombstone = try Row.fetchOne(db, sql: "SELECT deleted_at, device FROM tombstone WHERE user_id = ? AND kind = ? AND record_id = ?",
                                               arguments: [user, kind, id]) else { return nil }
        return SyncChange(kind: kind, id: id, updatedAt: Date(unixMilliseconds: tombstone["deleted_at"]), deleted: true, deviceId: tombstone["device"])
    }

    private static func current<R: StoredRecord>(_ type: R.Type, _ id: String, _ db: Database, _ user: String) throws -> SyncChange? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM \(R.table) WHERE user_id = ? AND id = ?", arguments: [user, id]),
              let kind = R.syncKind else { return nil }
        let record = try R(row: row)
        return SyncChange(kind: kind, id: id, updatedAt: record.updatedAt, record: try JSONValue.parse(WireCoding.encode(record)), deviceId: row["device"])
    }
}
