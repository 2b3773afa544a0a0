import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// The records' methods: create, get, update, delete and list of every kind (each kind's rules
/// are in `Kinds/`), `notes.completion`, the starter house questions and `progress.today`.
enum RecordMethods {
    static func register(_ handlers: Handlers<StoreService>) {
        register(SubjectRecords.self, handlers, Store.createSubject, Store.getSubject, Store.updateSubject, Store.deleteSubject, Store.listSubjects)
        register(MaterialRecords.self, handlers, Store.createMaterial, Store.getMaterial, Store.updateMaterial, Store.deleteMaterial, Store.listMaterials)
        register(
            SourceDocumentRecords.self, handlers, Store.createSourceDocument, Store.getSourceDocument, Store.updateSourceDocument,
            Store.deleteSourceDocument, Store.listSourceDocuments)
        register(ChunkRecords.self, handlers, Store.createChunk, Store.getChunk, Store.updateChunk, Store.deleteChunk, Store.listChunks)
        register(
            FlashcardRecords.self, handlers, Store.createFlashcard, Store.getFlashcard, Store.updateFlashcard, Store.deleteFlashcard,
            Store.listFlashcards)
        register(FlashcardSetRecords.self, handlers, Store.createSet, Store.getSet, Store.updateSet, Store.deleteSet, Store.listSets)
        register(QuestionRecords.self, handlers, Store.createQuestion, Store.getQuestion, Store.updateQuestion, Store.deleteQuestion, Store.listQuestions)
        register(NoteRecords.self, handlers, Store.createNote, Store.getNote, Store.updateNote, Store.deleteNote, Store.listNotes)
        handlers.handle(Store.notesCompletion) { store, request, context in
            try await store.read(context) { db, user in try QuestionRecords.completion(request, db, user: user) }
        }
        handlers.handle(Store.starterQuestions) { _, _, context in
            _ = try context.requireUser()
            return HouseQuestions.starterQuestions
        }
        handlers.handle(Store.adoptQuestions) { store, request, context in
            try await store.write(context, request) { changes in try HouseQuestions.adopt(request, changes) }
        }
        register(
            ConversationRecords.self, handlers, Store.createConversation, Store.getConversation, Store.updateConversation,
            Store.deleteConversation, Store.listConversations)
        register(MessageRecords.self, handlers, Store.createMessage, Store.getMessage, Store.updateMessage, Store.deleteMessage, Store.listMessages)
        register(StudySessionRecords.self, handlers, Store.createSession, Store.getSession, Store.updateSession, Store.deleteSession, Store.listSessions)
        register(StudyTaskRecords.self, handlers, Store.createTask, Store.getTask, Store.updateTask, Store.deleteTask, Store.listTasks)
        handlers.handle(Store.progressToday) { store, request, context in
            let now = store.clock.now()
            let day = try CalendarDay(request, now: now)
            var progress = try await store.read(context) { db, user in try day.progress(db, user: user, now: now.unixMilliseconds) }
            progress.reviewsRecorded = await day.reviewsRecorded(context)
            return progress
        }
    }

    /// Registers create, get, update, delete and list of `kind`.
    private static func register<Kind: RecordKind>(
        _ kind: Kind.Type, _ handlers: Handlers<StoreService>, _ create: Method<Kind.Create, Kind.Record>, _ get: Method<RecordID, Kind.Record>,
        _ update: Method<Kind.Update, Kind.Record>, _ delete: Method<Kind.Delete, Empty>, _ list: Method<Kind.List, RecordPage<Kind.Record>>
    ) {
        handlers.handle(create) { store, request, context in
            try await store.write(context, request) { changes in
                let record = try Kind.make(request, changes)
                try changes.insert(record)
                return record
            }
        }
        handlers.handle(get) { store, request, context in
            try Field.id(request.id, "id")
            return try await store.read(context) { db, user in
                try Changes(db: db, user: user, now: Date()).require(Kind.Record.self, request.id)
            }
        }
        handlers.handle(update) { store, request, context in
            try Field.id(request.id, "id")
            return try await store.write(context, request) { changes in
                let existing = try changes.require(Kind.Record.self, request.id)
                var record = try Kind.apply(request, to: existing, changes)
                record.updatedAt = changes.nextUpdate(after: existing.updatedAt)
                try changes.update(record)
                return record
            }
        }
        handlers.handle(delete) { store, request, context in
            try Field.id(request.id, "id")
            return try await store.write(context, request) { changes in
                try Kind.remove(try changes.require(Kind.Record.self, request.id), as: request, changes)
                return Empty()
            }
        }
        handlers.handle(list) { store, request, context in
            let query = try Kind.query(request)
            return try await store.read(context) { db, user in try query.page(Kind.Record.self, db, user: user, request: request) }
        }
    }
}
