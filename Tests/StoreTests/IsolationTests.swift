import Bus
import Contracts
import Foundation
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("Cross-user isolation")
struct IsolationTests {
    @Test("another user sees none of alice's records through any method: NOT_FOUND or nothing")
    func everyMethodIsScoped() async throws {
        try await withWorld(StoreWorld.start()) { world in
            // Alice has one of everything.
            let subject = try await world.call(Store.createSubject, SubjectCreate(name: "Biology"))
            let upload = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Scan", sourceKind: .pdf), attachment: Data("pdf".utf8))
            let put = try await world.call(Store.putMaterial, samplePut(cards: 2, setName: "Deck"))
            let material = put.material
            let setID = try #require(put.setId)
            let card = put.flashcardIds[0], chunk = put.chunkIds[0], document = put.sourceDocument.id
            let question = try await world.call(Store.createQuestion, QuestionCreate(text: "Light?", category: "c"))
            let note = try await world.call(Store.createNote, NoteCreate(questionId: question.id, answer: "light everywhere"))
            let conversation = try await world.call(Store.createConversation, ConversationCreate(title: "Chat"))
            let message = try await world.call(Store.createMessage, MessageCreate(conversationId: conversation.id, role: .user, text: "hi"))
            let session = try await world.call(Store.createSession, StudySessionCreate(startedAt: StoreWorld.start))
            let task = try await world.call(Store.createTask, StudyTaskCreate(title: "Revise"))
            let eventsBefore = try await world.events().count

            func notFound<Request, Response>(_ method: Method<Request, Response>, _ request: Request, attachment: Data? = nil, sourceLocation: SourceLocation = #_sourceLocation) async {
                let error = await world.failure(method, request, as: "bob", attachment: attachment, sourceLocation: sourceLocation)
                #expect(error?.code == .notFound, "\(method.name): \(String(describing: error))", sourceLocation: sourceLocation)
            }
            // get / update / delete of each kind.
            await notFound(Store.getSubject, RecordID(id: subject.id))
            await notFound(Store.updateSubject, SubjectUpdate(id: subject.id, name: "x"))
            await notFound(Store.deleteSubject, SubjectDelete(id: subject.id))
            await notFound(Store.getMaterial, RecordID(id: material.id))
            await notFound(Store.updateMaterial, MaterialUpdate(id: material.id, title: "x"))
            await notFound(Store.deleteMaterial, RecordID(id: material.id))
            await notFound(Store.startProcessing, RecordID(id: upload.material.id))
            await notFound(Store.failMaterial, MaterialFail(id: upload.material.id, reason: "x"))
            await notFound(Store.materialOriginal, RecordID(id: upload.material.id))
            await notFound(Store.getSourceDocument, RecordID(id: document))
            await notFound(Store.updateSourceDocument, SourceDocumentUpdate(id: document, title: "x"))
            await notFound(Store.deleteSourceDocument, RecordID(id: document))
            await notFound(Store.getChunk, RecordID(id: chunk))
            await notFound(Store.updateChunk, ChunkUpdate(id: chunk, text: "x"))
            await notFound(Store.deleteChunk, RecordID(id: chunk))
            await notFound(Store.getFlashcard, RecordID(id: card))
            await notFound(Store.updateFlashcard, FlashcardUpdate(id: card, front: "x"))
            await notFound(Store.deleteFlashcard, RecordID(id: card))
            await notFound(Store.getSet, RecordID(id: setID))
            await notFound(Store.updateSet, FlashcardSetUpdate(id: setID, name: "x"))
            await notFound(Store.deleteSet, RecordID(id: setID))
            await notFound(Store.getQuestion, RecordID(id: question.id))
            await notFound(Store.updateQuestion, QuestionUpdate(id: question.id, text: "x"))
            await notFound(Store.deleteQuestion, RecordID(id: question.id))
            await notFound(Store.getNote, RecordID(id: note.id))
            await notFound(Store.updateNote, NoteUpdate(id: note.id, answer: "x"))
            await notFound(Store.deleteNote, RecordID(id: note.id))
            await notFound(Store.getConversation, RecordID(id: conversation.id))
            await notFound(Store.updateConversation, ConversationUpdate(id: conversation.id, title: "x"))
            await notFound(Store.deleteConversation, RecordID(id: conversation.id))
            await notFound(Store.getMessage, RecordID(id: message.id))
            await notFound(Store.updateMessage, MessageUpdate(id: message.id, text: "x"))
            await notFound(Store.deleteMessage, RecordID(id: message.id))
            await notFound(Store.getSession, RecordID(id: session.id))
            await notFound(Store.updateSession, StudySessionUpdate(id: session.id, cardsReviewed: 1))
            await notFound(Store.deleteSession, RecordID(id: session.id))
            await notFound(Store.getTask, RecordID(id: task.id))
            await notFound(Store.updateTask, StudyTaskUpdate(id: task.id, isDone: true))
            await notFound(Store.deleteTask, RecordID(id: task.id))
            // References to alice's records in bob's writes.
            await notFound(Store.createFlashcard, FlashcardCreate(front: "f", back: "b", setId: setID))
            await notFound(Store.createFlashcard, FlashcardCreate(front: "f", back: "b", chunkId: chunk))
            await notFound(Store.createMaterial, MaterialCreate(title: "t", subjectId: subject.id, sourceKind: .txt))
            await notFound(Store.createSourceDocument, SourceDocumentCreate(materialId: material.id))
            await notFound(Store.createChunk, ChunkCreate(sourceDocumentId: document, chunk: ChunkInput(ordinal: 9, text: "x")))
            await notFound(Store.createNote, NoteCreate(questionId: question.id, answer: "x"))
            await notFound(Store.createMessage, MessageCreate(conversationId: conversation.id, role: .user, text: "x"))
            await notFound(Store.createSession, StudySessionCreate(setId: setID, startedAt: StoreWorld.start))
            await notFound(Store.createTask, StudyTaskCreate(title: "t", materialId: material.id))
            await notFound(Store.createConversation, ConversationCreate(title: "t", materialId: material.id))
            await notFound(Store.createSet, FlashcardSetCreate(name: "n", subjectId: subject.id))
            var putOnAlices = samplePut()
            putOnAlices.setId = setID
            await notFound(Store.putMaterial, putOnAlices)

            // Lists, search, export, sync, progress: empty for bob.
            let bob = "bob"
            #expect(try await world.call(Store.listSubjects, SubjectList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listMaterials, MaterialList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listSourceDocuments, SourceDocumentList(materialId: material.id), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listChunks, ChunkList(materialId: material.id), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listFlashcards, FlashcardList(setId: setID), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listSets, FlashcardSetList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listQuestions, QuestionList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listNotes, NoteList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listConversations, ConversationList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listMessages, MessageList(conversationId: conversation.id), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listSessions, StudySessionList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.listTasks, StudyTaskList(), as: bob).items.isEmpty)
            #expect(try await world.call(Store.search, SearchRequest(query: "light"), as: bob).hits.isEmpty)
            #expect(try await world.call(Store.export, ExportRequest(content: .flashcards, format: .json), as: bob).itemCount == 0)
            #expect(try await world.call(Store.syncPull, SyncPullRequest(), as: bob).changes.isEmpty)
            #expect(try await world.call(Store.notesCompletion, NotesCompletionRequest(), as: bob).total == 0)
            let progress = try await world.call(Store.progressToday, ProgressTodayRequest(), as: bob)
            #expect(progress.sessions == 0 && progress.materialsAdded == 0 && progress.flashcardsCreated == 0 && progress.tasksOpen == 0)
            #expect(try await world.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 1), as: bob).materials.isEmpty)
            // Bob's sync push with alice's ids makes bob's own records; alice's stay untouched.
            let change = SyncChange(kind: .task, id: task.id, updatedAt: StoreWorld.start.addingTimeInterval(99), deleted: true)
            #expect(try await world.call(Store.syncPush, SyncPushRequest(deviceId: "d", changes: [change]), as: bob).results.map(\.outcome) == [.applied])
            // Bob uploading alice's bytes gets his own material.
            #expect(try await world.call(Store.uploadMaterial, MaterialUpload(title: "Mine", sourceKind: .pdf), as: bob, attachment: Data("pdf".utf8)).duplicate == false)

            // Nothing of alice's changed: no event concerns her since, and her records are all there.
            let later = try await world.events(after: eventsBefore)
            #expect(later.allSatisfy { $0.header.user == "bob" })
            #expect(try await world.call(Store.getTask, RecordID(id: task.id)) == task)
            #expect(try await world.call(Store.listFlashcards, FlashcardList()).items.count == 2)
            #expect(try await world.call(Store.search, SearchRequest(query: "light")).hits.count == 3)
        }
    }
}
