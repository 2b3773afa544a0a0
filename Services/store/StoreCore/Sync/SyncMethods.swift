import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import SyncKit
import Wire

/// Multi-device sync: last write wins per record, deletes leave tombstones, and a per-user
/// change log (`sync_change`) gives "everything since" by a cursor (``SyncEngine``).
enum SyncMethods {
    /// Ties between edits of the same millisecond go to the greater device id, so pushes
    /// arriving in any order end the same.
    static let engine = SyncEngine<SyncKind>(service: "store", tieBreak: .greaterDevice) { id, field throws(BusError) in
        try Field.id(id, field)
    }

    static func register(_ handlers: Handlers<StoreService>) {
        handlers.handle(Store.syncPush) { store, request, context in
            try engine.check(request, now: store.clock.now(), skew: store.syncFutureSkew)
            return try await store.write(context, request, device: request.deviceId) { changes in
                try engine.apply(request) { change, field in try applyKind(change, field: field, changes) }
            }
        }
        handlers.handle(Store.syncPull) { store, request, context in
            try await store.read(context) { db, user in
                try engine.pull(request, db, user: user) { kind, id in try current(kind, id: id, db, user: user) }
            }
        }
    }

    private static func applyKind(_ change: SyncChange, field: String, _ changes: Changes) throws -> SyncOutcome {
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
        guard try wins(change, in: Kind.Record.table, changes) else { return .superseded }
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
        guard try wins(change, in: Material.table, changes) else { return .superseded }
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
    private static func wins(_ change: SyncChange, in table: String, _ changes: Changes) throws -> Bool {
        try changes.sync.wins(change.kind.rawValue, change.id, table: table, at: change.updatedAt, deleted: change.deleted, engine.tieBreak)
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ change: SyncChange, field: String) throws -> T {
        try SyncEngine<SyncKind>.decode(type, change, field: field)
    }

    // MARK: Pull

    /// The record's current state as a change, nil when it is not here.
    private static func current(_ kind: SyncKind, id: String, _ db: Database, user: String) throws -> SyncChange? {
        switch kind {
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
    }

    private static func current<R: StoredRecord>(_ type: R.Type, _ id: String, _ db: Database, _ user: String) throws -> SyncChange? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM \(R.table) WHERE user_id = ? AND id = ?", arguments: [user, id]),
              let kind = R.syncKind else { return nil }
        let record = try R(row: row)
        return SyncChange(kind: kind, id: id, updatedAt: record.updatedAt, record: try JSONValue.parse(WireCoding.encode(record)), deviceId: row["device"])
    }
}
