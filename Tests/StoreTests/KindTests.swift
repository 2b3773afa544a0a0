import Bus
import Contracts
import Foundation
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("The other kinds' methods")
struct KindTests {
    @Test("source documents and chunks: create, edit, list in reading order, delete; the document's character count follows")
    func documentsAndChunks() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let material = try await world.call(Store.createMaterial, MaterialCreate(title: "Typed notes", sourceKind: .text, status: .ready))
            let document = try await world.call(Store.createSourceDocument, SourceDocumentCreate(materialId: material.id, title: "page", pageCount: 2))
            #expect(document.kind == .text && document.characterCount == 0)
            let second = try await world.call(Store.createChunk, ChunkCreate(sourceDocumentId: document.id, chunk: ChunkInput(ordinal: 1, text: "World", pageNumber: 2)))
            let first = try await world.call(Store.createChunk, ChunkCreate(sourceDocumentId: document.id, chunk: ChunkInput(ordinal: 0, text: "Hellö", startOffset: 0)))
            #expect(second.startOffset == 0 && second.endOffset == 5 && first.endOffset == 5 && first.materialId == material.id)
            #expect(try await world.call(Store.listChunks, ChunkList(sourceDocumentId: document.id)).items.map(\.id) == [first.id, second.id])
            #expect(try await world.call(Store.getSourceDocument, RecordID(id: document.id)).characterCount == 10)
            let card = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Hello?", back: "World", chunkId: first.id))
            #expect(card.materialId == material.id)
            let edited = try await world.call(Store.updateChunk, ChunkUpdate(id: first.id, text: "Hello there"))
            #expect(edited.text == "Hello there")
            #expect(try await world.call(Store.getSourceDocument, RecordID(id: document.id)).characterCount == 16)
            let renamed = try await world.call(Store.updateSourceDocument, SourceDocumentUpdate(id: document.id, title: "Page one", language: "en"))
            #expect(renamed.title == "Page one" && renamed.language == "en" && renamed.pageCount == 2)
            #expect(try await world.call(Store.listSourceDocuments, SourceDocumentList(materialId: material.id)).items == [renamed])
            _ = try await world.call(Store.deleteChunk, RecordID(id: first.id))
            #expect(try await world.call(Store.getFlashcard, RecordID(id: card.id)).chunkId == nil)
            #expect(try await world.call(Store.getSourceDocument, RecordID(id: document.id)).characterCount == 5)
            _ = try await world.call(Store.deleteSourceDocument, RecordID(id: document.id))
            #expect(await world.failure(Store.getChunk, RecordID(id: second.id))?.code == .notFound)
            #expect(await world.failure(Store.listChunks, ChunkList())?.code == .invalidArgument)
        }
    }

    @Test("materials: create with a status, edit, filter by subject, status and archive, newest first")
    func materials() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let subject = try await world.call(Store.createSubject, SubjectCreate(name: "History"))
            let typed = try await world.call(Store.createMaterial, MaterialCreate(title: "Typed", subjectId: subject.id, sourceKind: .text, status: .ready, keywords: [" rome ", "rome", "caesar"]))
            #expect(typed.keywords == ["rome", "caesar"] && typed.processingStartedAt == nil)
            world.clock.advance(by: 1)
            let queued = try await world.call(Store.createMaterial, MaterialCreate(title: "Queued", sourceKind: .md))
            #expect(queued.status == .pending)
            #expect(await world.failure(Store.createMaterial, MaterialCreate(title: "x", sourceKind: .md, status: .failed))?.code == .invalidArgument)
            let archived = try await world.call(Store.updateMaterial, MaterialUpdate(id: typed.id, summary: "Caesar crossed the Rubicon.", isArchived: true, isPriority: true))
            #expect(archived.isArchived && archived.isPriority && archived.summary == "Caesar crossed the Rubicon." && archived.subjectId == subject.id)
            #expect(try await world.call(Store.listMaterials, MaterialList()).items.map(\.id) == [queued.id, typed.id])
            #expect(try await world.call(Store.listMaterials, MaterialList(subjectId: subject.id)).items.map(\.id) == [typed.id])
            #expect(try await world.call(Store.listMaterials, MaterialList(status: .pending)).items.map(\.id) == [queued.id])
            #expect(try await world.call(Store.listMaterials, MaterialList(isArchived: false)).items.map(\.id) == [queued.id])
            let unlinked = try await world.call(Store.updateMaterial, MaterialUpdate(id: typed.id, subjectId: ""))
            #expect(unlinked.subjectId == nil)
        }
    }

    @Test("sessions and tasks: edits, time ranges, due order with undated last, done and clearing a due date")
    func sessionsAndTasks() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let start = StoreWorld.start
            let early = try await world.call(Store.createSession, StudySessionCreate(startedAt: start.addingTimeInterval(-7200)))
            let late = try await world.call(Store.createSession, StudySessionCreate(startedAt: start.addingTimeInterval(-600)))
            let ended = try await world.call(Store.updateSession, StudySessionUpdate(id: early.id, endedAt: start.addingTimeInterval(-5400), cardsReviewed: 25))
            #expect(ended.endedAt == start.addingTimeInterval(-5400) && ended.cardsReviewed == 25)
            #expect(try await world.call(Store.listSessions, StudySessionList()).items.map(\.id) == [late.id, early.id])
            #expect(try await world.call(Store.listSessions, StudySessionList(from: start.addingTimeInterval(-3600))).items.map(\.id) == [late.id])
            #expect(await world.failure(Store.updateSession, StudySessionUpdate(id: early.id, endedAt: start.addingTimeInterval(-9000)))?.code == .invalidArgument)

            let undated = try await world.call(Store.createTask, StudyTaskCreate(title: "Someday"))
            let later = try await world.call(Store.createTask, StudyTaskCreate(title: "Later", dueAt: start.addingTimeInterval(86_400)))
            let soon = try await world.call(Store.createTask, StudyTaskCreate(title: "Soon", dueAt: start.addingTimeInterval(3600)))
            #expect(try await world.call(Store.listTasks, StudyTaskList()).items.map(\.id) == [soon.id, later.id, undated.id])
            #expect(try await world.call(Store.listTasks, StudyTaskList(dueBefore: start.addingTimeInterval(7200))).items.map(\.id) == [soon.id])
            world.clock.advance(by: 30)
            let done = try await world.call(Store.updateTask, StudyTaskUpdate(id: soon.id, isDone: true))
            #expect(done.isDone && done.doneAt == start.addingTimeInterval(30))
            #expect(try await world.call(Store.listTasks, StudyTaskList(isDone: false)).items.map(\.id) == [later.id, undated.id])
            let cleared = try await world.call(Store.updateTask, StudyTaskUpdate(id: later.id, clearDueAt: true))
            #expect(cleared.dueAt == nil)
            let reopened = try await world.call(Store.updateTask, StudyTaskUpdate(id: soon.id, isDone: false))
            #expect(!reopened.isDone && reopened.doneAt == nil)
        }
    }

    @Test("sets, questions, notes, conversations and messages can be edited; subjects list by name")
    func edits() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let zoology = try await world.call(Store.createSubject, SubjectCreate(name: "Zoology"))
            let art = try await world.call(Store.createSubject, SubjectCreate(name: "Art"))
            #expect(try await world.call(Store.listSubjects, SubjectList()).items.map(\.id) == [art.id, zoology.id])
            let set = try await world.call(Store.createSet, FlashcardSetCreate(name: "Deck", topic: "t"))
            let renamedSet = try await world.call(Store.updateSet, FlashcardSetUpdate(id: set.id, name: "Animals", topic: "", subjectId: zoology.id))
            #expect(renamedSet.name == "Animals" && renamedSet.topic == nil && renamedSet.subjectId == zoology.id)
            #expect(try await world.call(Store.listSets, FlashcardSetList(subjectId: zoology.id)).items == [renamedSet])
            let question = try await world.call(Store.createQuestion, QuestionCreate(text: "Pets?", category: "home"))
            let moved = try await world.call(Store.updateQuestion, QuestionUpdate(id: question.id, category: "family", displayOrder: -3, isRequired: true, hint: "cats"))
            #expect(moved.category == "family" && moved.displayOrder == -3 && moved.isRequired && moved.hint == "cats")
            let note = try await world.call(Store.createNote, NoteCreate(questionId: question.id, answer: "A cat"))
            let changed = try await world.call(Store.updateNote, NoteUpdate(id: note.id, answer: "Two cats", metadata: ["mood": "happy"]))
            #expect(changed.answer == "Two cats" && changed.metadata == ["mood": "happy"])
            #expect(try await world.call(Store.listNotes, NoteList(questionId: question.id)).items == [changed])
            let conversation = try await world.call(Store.createConversation, ConversationCreate(title: "Chat", setId: set.id))
            #expect(try await world.call(Store.updateConversation, ConversationUpdate(id: conversation.id, title: "Animals chat")).title == "Animals chat")
            let message = try await world.call(Store.createMessage, MessageCreate(conversationId: conversation.id, role: .assistant, text: "Hi"))
            #expect(try await world.call(Store.updateMessage, MessageUpdate(id: message.id, text: "Hello")).text == "Hello")
            _ = try await world.call(Store.deleteMessage, RecordID(id: message.id))
            #expect(try await world.call(Store.listMessages, MessageList(conversationId: conversation.id)).items.isEmpty)
            // Deleting the set leaves the conversation, without the link.
            _ = try await world.call(Store.deleteSet, RecordID(id: set.id))
            #expect(try await world.call(Store.getConversation, RecordID(id: conversation.id)).setId == nil)
        }
    }
}
