import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// A create request: the new record's fields and, optionally, its id.
protocol CreateRequest: Codable, Sendable {
    var id: String? { get set }
}

/// An update request: the record's id and the fields to change.
protocol UpdateRequest: Codable, Sendable {
    var id: String { get }
}

/// What one kind of record does on create, update, delete and list; the generic handlers in
/// ``StoreService/register(_:_:)`` do the rest (user scoping, transaction, idempotency).
protocol RecordKind: SendableMetatype {
    associatedtype Record: StoredRecord
    associatedtype Create: CreateRequest
    associatedtype Update: UpdateRequest
    associatedtype List: Codable & Sendable & PagedRequest

    /// Validates `request` and builds the new record (reading references; writing nothing).
    static func make(_ request: Create, _ changes: Changes) throws -> Record
    /// Validates `request` and returns `record` changed by it (`updatedAt` is set by the caller).
    static func apply(_ request: Update, to record: Record, _ changes: Changes) throws -> Record
    /// Deletes `record` with what depends on it.
    static func remove(_ record: Record, _ changes: Changes) throws
    /// The list's filters and order.
    static func query(_ request: List) throws -> ListQuery
    /// The record `request` describes in full, replacing `existing` (a sync edit): by default the
    /// new record as `make` builds it, keeping the existing creation time.
    static func replace(_ existing: Record, with request: Create, _ changes: Changes) throws -> Record
}

extension RecordKind {
    static func replace(_ existing: Record, with request: Create, _ changes: Changes) throws -> Record {
        var request = request
        request.id = existing.id
        return try make(request, changes).keepingCreation(of: existing)
    }

    static func remove(_ record: Record, _ changes: Changes) throws {
        try changes.delete(record)
    }
}

extension StoredRecord {
    /// This record with `other`'s creation time (a replacement of it).
    func keepingCreation(of other: Self) -> Self {
        var copy = self
        copy.createdAt = other.createdAt
        return copy
    }
}

/// The five contract methods of one kind.
struct RecordMethods<Kind: RecordKind> {
    var create: Method<Kind.Create, Kind.Record>
    var get: Method<RecordID, Kind.Record>
    var update: Method<Kind.Update, Kind.Record>
    var delete: Method<RecordID, Empty>
    var list: Method<Kind.List, RecordPage<Kind.Record>>
}

extension StoreService {
    /// Registers create, get, update, delete and list of `kind`.
    func register<Kind: RecordKind>(_ kind: Kind.Type, _ methods: RecordMethods<Kind>) {
        host.handle(methods.create) { [self] request, context in
            try await write(context) { changes in
                let record = try Kind.make(request, changes)
                try changes.insert(record)
                return record
            }
        }
        host.handle(methods.get) { [self] request, context in
            try Validate.id(request.id)
            return try await read(context) { db, user in
                try Changes(db: db, user: user, now: Date()).require(Kind.Record.self, request.id)
            }
        }
        host.handle(methods.update) { [self] request, context in
            try Validate.id(request.id)
            return try await write(context) { changes in
                let existing = try changes.require(Kind.Record.self, request.id)
                var record = try Kind.apply(request, to: existing, changes)
                record.updatedAt = changes.nextUpdate(after: existing.updatedAt)
                try changes.update(record)
                return record
            }
        }
        host.handle(methods.delete) { [self] request, context in
            try Validate.id(request.id)
            return try await write(context) { changes in
                try Kind.remove(try changes.require(Kind.Record.self, request.id), changes)
                return Empty()
            }
        }
        host.handle(methods.list) { [self] request, context in
            let query = try Kind.query(request)
            return try await read(context) { db, user in try query.page(Kind.Record.self, db, user: user, request: request) }
        }
    }

    func registerRecordMethods() {
        register(SubjectRecords.self, .init(create: Store.createSubject, get: Store.getSubject, update: Store.updateSubject, delete: Store.deleteSubject, list: Store.listSubjects))
        register(MaterialRecords.self, .init(create: Store.createMaterial, get: Store.getMaterial, update: Store.updateMaterial, delete: Store.deleteMaterial, list: Store.listMaterials))
        register(SourceDocumentRecords.self, .init(
            create: Store.createSourceDocument, get: Store.getSourceDocument, update: Store.updateSourceDocument,
            delete: Store.deleteSourceDocument, list: Store.listSourceDocuments))
        register(ChunkRecords.self, .init(create: Store.createChunk, get: Store.getChunk, update: Store.updateChunk, delete: Store.deleteChunk, list: Store.listChunks))
        register(FlashcardRecords.self, .init(
            create: Store.createFlashcard, get: Store.getFlashcard, update: Store.updateFlashcard, delete: Store.deleteFlashcard, list: Store.listFlashcards))
        register(FlashcardSetRecords.self, .init(create: Store.createSet, get: Store.getSet, update: Store.updateSet, delete: Store.deleteSet, list: Store.listSets))
        register(QuestionRecords.self, .init(create: Store.createQuestion, get: Store.getQuestion, update: Store.updateQuestion, delete: Store.deleteQuestion, list: Store.listQuestions))
        register(NoteRecords.self, .init(create: Store.createNote, get: Store.getNote, update: Store.updateNote, delete: Store.deleteNote, list: Store.listNotes))
        register(ConversationRecords.self, .init(
            create: Store.createConversation, get: Store.getConversation, update: Store.updateConversation,
            delete: Store.deleteConversation, list: Store.listConversations))
        register(MessageRecords.self, .init(create: Store.createMessage, get: Store.getMessage, update: Store.updateMessage, delete: Store.deleteMessage, list: Store.listMessages))
        register(StudySessionRecords.self, .init(create: Store.createSession, get: Store.getSession, update: Store.updateSession, delete: Store.deleteSession, list: Store.listSessions))
        register(StudyTaskRecords.self, .init(create: Store.createTask, get: Store.getTask, update: Store.updateTask, delete: Store.deleteTask, list: Store.listTasks))
        registerProgressMethods()
    }
}
