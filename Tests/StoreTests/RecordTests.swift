import Bus
import Contracts
import Foundation
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("Records: create, get, update, delete and list through the bus")
struct RecordTests {
    @Test("a subject is created, read, renamed, listed and deleted, each change an event")
    func subjectLifecycle() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let created = try await world.call(Store.createSubject, SubjectCreate(name: "Physics", color: "#336699"))
            #expect(created.userId == "alice" && created.name == "Physics" && created.createdAt == StoreWorld.start)
            // A new id is a UUID version 7 (time-ordered), lowercase.
            #expect(created.id.wholeMatch(of: #/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/#) != nil, "\(created.id)")
            #expect(UUID(uuidString: created.id) != nil)
            #expect(try await world.call(Store.getSubject, RecordID(id: created.id)) == created)
            world.clock.advance(by: 60)
            let renamed = try await world.call(Store.updateSubject, SubjectUpdate(id: created.id, name: "Physics II", color: ""))
            #expect(renamed.name == "Physics II" && renamed.color == nil && renamed.createdAt == created.createdAt)
            #expect(renamed.updatedAt == StoreWorld.start.addingTimeInterval(60))
            #expect(try await world.call(Store.listSubjects, SubjectList()).items == [renamed])
            _ = try await world.call(Store.deleteSubject, SubjectDelete(id: created.id))
            #expect(await world.failure(Store.getSubject, RecordID(id: created.id))?.code == .notFound)
            #expect(await world.failure(Store.deleteSubject, SubjectDelete(id: created.id))?.code == .notFound)
            let events = try await world.events()
            #expect(events.map(\.topic) == ["subject.created", "subject.updated", "subject.deleted"])
            #expect(events.map(\.header.user) == ["alice", "alice", "alice"])
            #expect(try events[2].decode(Store.subjectDeleted) == RecordDeleted(kind: .subject, id: created.id, userId: "alice", deletedAt: renamed.updatedAt))
        }
    }

    @Test("a client-chosen id is kept; reusing it is ALREADY_EXISTS; a malformed one is INVALID_ARGUMENT")
    func clientIDs() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let task = try await world.call(Store.createTask, StudyTaskCreate(id: "task-1", title: "Read chapter 3"))
            #expect(task.id == "task-1")
            #expect(await world.failure(Store.createTask, StudyTaskCreate(id: "task-1", title: "Again"))?.code == .alreadyExists)
            // Ids are per user: bob may use the same one.
            #expect(try await world.call(Store.createTask, StudyTaskCreate(id: "task-1", title: "Bob's"), as: "bob").title == "Bob's")
            let bad = await world.failure(Store.createTask, StudyTaskCreate(id: "no spaces allowed", title: "x"))
            #expect(bad?.code == .invalidArgument && bad?.message.contains("'id'") == true)
            #expect(await world.failure(Store.getTask, RecordID(id: String(repeating: "a", count: 65)))?.code == .invalidArgument)
        }
    }

    @Test("invalid fields are INVALID_ARGUMENT naming the field and the limit, and write nothing")
    func validation() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let cases: [(BusError?, String)] = [
                (await world.failure(Store.createSubject, SubjectCreate(name: "   ")), "'name' must not be empty"),
                (await world.failure(Store.createMaterial, MaterialCreate(title: String(repeating: "t", count: 201), sourceKind: .txt)), "'title' must be at most 200 characters"),
                (await world.failure(Store.createFlashcard, FlashcardCreate(front: "f", back: String(repeating: "b", count: 10_001))), "'back' must be at most 10000 characters"),
                (await world.failure(Store.createFlashcard, FlashcardCreate(front: "f", back: "b", tags: (0...20).map { "t\($0)" })), "'tags' must hold at most 20 entries"),
                (await world.failure(Store.createSession, StudySessionCreate(startedAt: StoreWorld.start, endedAt: StoreWorld.start.addingTimeInterval(-1))), "'endedAt'"),
                (await world.failure(Store.listTasks, StudyTaskList(limit: 501)), "'limit' must be between 1 and 500"),
                (await world.failure(Store.listTasks, StudyTaskList(cursor: "bogus")), "'cursor'"),
                (await world.failure(Store.progressToday, ProgressTodayRequest(timeZone: "Mars/Olympus")), "'timeZone'"),
                (await world.failure(Store.createFlashcard, FlashcardCreate(front: "f", back: "b", setId: "missing")), "set 'missing' not found"),
            ]
            for (error, text) in cases {
                #expect(error?.message.contains(text) == true, "\(String(describing: error)) should mention \(text)")
            }
            #expect(cases.dropLast().allSatisfy { $0.0?.code == .invalidArgument })
            // The details carry the field the message names.
            for (error, _) in cases.dropLast() {
                let field = error?.details?["field"]?.stringValue ?? "(none)"
                #expect(error?.message.hasPrefix("field '\(field)' ") == true, "\(String(describing: error)) should carry its field in the details")
            }
            #expect(cases.last?.0?.code == .notFound)
            // An unknown enum value is caught by decoding, naming the field.
            let raw = try? await world.client.callRaw(service: "store", method: "flashcards.create",
                                                      payload: Data(#"{"front":"f","back":"b","kind":"essay"}"#.utf8), options: CallOptions(user: "alice"))
            #expect(raw == nil)
            do throws(BusError) {
                _ = try await world.client.callRaw(service: "store", method: "flashcards.create",
                                                   payload: Data(#"{"front":"f","back":"b","kind":"essay"}"#.utf8), options: CallOptions(user: "alice"))
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("kind"))
            }
            let events = try await world.events()
            #expect(events.isEmpty)
        }
    }

    @Test("every method without a user header is INVALID_ARGUMENT (except the ingest sweep)")
    func userRequired() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let id = RecordID(id: "x")
            var errors: [BusError?] = [
                await world.failure(Store.createSubject, SubjectCreate(name: "n"), as: nil),
                await world.failure(Store.getMaterial, id, as: nil),
                await world.failure(Store.listFlashcards, FlashcardList(), as: nil),
                await world.failure(Store.updateTask, StudyTaskUpdate(id: "x"), as: nil),
                await world.failure(Store.deleteNote, id, as: nil),
                await world.failure(Store.putMaterial, samplePut(), as: nil),
                await world.failure(Store.uploadMaterial, MaterialUpload(title: "t", sourceKind: .txt), as: nil, attachment: Data("x".utf8)),
                await world.failure(Store.materialOriginal, id, as: nil),
                await world.failure(Store.search, SearchRequest(query: "light"), as: nil),
                await world.failure(Store.export, ExportRequest(content: .flashcards, format: .json), as: nil),
                await world.failure(Store.syncPull, SyncPullRequest(), as: nil),
                await world.failure(Store.progressToday, ProgressTodayRequest(), as: nil),
            ]
            errors.append(await world.failure(Store.syncPush, SyncPushRequest(deviceId: "d", changes: []), as: nil))
            for error in errors {
                #expect(error?.code == .invalidArgument && error?.message.contains("'user'") == true, "\(String(describing: error))")
            }
            let stuck = try await world.call(Store.stuckMaterials, StuckMaterialsRequest(), as: nil)
            #expect(stuck.materials.isEmpty)
        }
    }

    @Test("lists page with opaque cursors in a stable order that survives inserts between pages")
    func paging() async throws {
        try await withWorld(StoreWorld.start()) { world in
            for index in 0..<7 {
                _ = try await world.call(Store.createTask, StudyTaskCreate(id: "t\(index)", title: "Task \(index)"))
                if index % 2 == 0 { world.clock.advance(by: 1) }  // some tasks share a creation time: the id breaks the tie
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await world.call(Store.listTasks, StudyTaskList(limit: 3, cursor: cursor))
                seen += page.items.map(\.id)
                cursor = page.nextCursor
                if seen.count == 3 {
                    // A task created between pages that sorts before the cursor does not shift the pages.
                    world.clock.set(StoreWorld.start.addingTimeInterval(-100))
                    _ = try await world.call(Store.createTask, StudyTaskCreate(id: "early", title: "Early"))
                }
            } while cursor != nil
            #expect(seen == (0..<7).map { "t\($0)" })
            let newestFirst = try await world.call(Store.listMaterials, MaterialList())
            #expect(newestFirst.items.isEmpty && newestFirst.nextCursor == nil)
        }
    }

    @Test("flashcards take their subject from set or material and filter by set, material, subject and tag")
    func flashcardsAndSets() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let subject = try await world.call(Store.createSubject, SubjectCreate(name: "Biology"))
            let set = try await world.call(Store.createSet, FlashcardSetCreate(name: "Cells", subjectId: subject.id))
            let card = try await world.call(Store.createFlashcard, FlashcardCreate(front: "ATP?", back: "Energy", kind: .definition, tags: ["cell", "energy"], setId: set.id))
            #expect(card.subjectId == subject.id && card.setId == set.id && card.kind == .definition)
            _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Loose", back: "card"))
            #expect(try await world.call(Store.getSet, RecordID(id: set.id)).cardCount == 1)
            #expect(try await world.call(Store.listFlashcards, FlashcardList(setId: set.id)).items.map(\.id) == [card.id])
            #expect(try await world.call(Store.listFlashcards, FlashcardList(subjectId: subject.id)).items.map(\.id) == [card.id])
            #expect(try await world.call(Store.listFlashcards, FlashcardList(tag: "energy")).items.map(\.id) == [card.id])
            #expect(try await world.call(Store.listFlashcards, FlashcardList()).items.count == 2)
            let moved = try await world.call(Store.updateFlashcard, FlashcardUpdate(id: card.id, setId: ""))
            #expect(moved.setId == nil)
            #expect(try await world.call(Store.getSet, RecordID(id: set.id)).cardCount == 0)
            // Deleting the subject unlinks, it does not delete.
            _ = try await world.call(Store.deleteSubject, SubjectDelete(id: subject.id))
            #expect(try await world.call(Store.getFlashcard, RecordID(id: card.id)).subjectId == nil)
            #expect(try await world.call(Store.getSet, RecordID(id: set.id)).subjectId == nil)
        }
    }

    @Test("deleting a set deletes its cards, a flashcard.deleted for each in the same transaction")
    func setDeleteCascades() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let set = try await world.call(Store.createSet, FlashcardSetCreate(name: "Deck"))
            var cards: [Flashcard] = []
            for index in 0..<3 { cards.append(try await world.call(Store.createFlashcard, FlashcardCreate(front: "Q\(index)", back: "A", setId: set.id))) }
            let other = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Other", back: "A"))
            let before = try await world.events().count
            _ = try await world.call(Store.deleteSet, RecordID(id: set.id))
            let events = try await world.events(after: before)
            #expect(events.map(\.topic) == ["flashcard.deleted", "flashcard.deleted", "flashcard.deleted", "set.deleted"])
            let deleted = try events.prefix(3).map { try $0.decode(Store.flashcardDeleted) }
            #expect(Set(deleted.map(\.id)) == Set(cards.map(\.id)))
            #expect(deleted.allSatisfy { $0.cause == .setDeleted && $0.setId == set.id && $0.userId == "alice" })
            #expect(try await world.call(Store.listFlashcards, FlashcardList()).items == [other])
        }
    }

    @Test("questions, notes and completion percentages per category")
    func notesQA() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let q1 = try await world.call(Store.createQuestion, QuestionCreate(text: "Where is the fuse box?", category: "utilities", displayOrder: 2, isRequired: true))
            let q2 = try await world.call(Store.createQuestion, QuestionCreate(text: "Water shut-off?", category: "utilities", displayOrder: 1, hint: "basement"))
            let q3 = try await world.call(Store.createQuestion, QuestionCreate(text: "Wi-Fi password?", category: "network"))
            #expect(try await world.call(Store.listQuestions, QuestionList()).items.map(\.id) == [q3.id, q2.id, q1.id])
            #expect(try await world.call(Store.listQuestions, QuestionList(category: "utilities")).items.map(\.id) == [q2.id, q1.id])
            let note = try await world.call(Store.createNote, NoteCreate(questionId: q1.id, answer: "Garage, left wall", metadata: ["source": "voice"]))
            _ = try await world.call(Store.createNote, NoteCreate(questionId: q2.id, answer: "   "))
            #expect(await world.failure(Store.createNote, NoteCreate(questionId: q1.id, answer: "again"))?.code == .alreadyExists)
            var completion = try await world.call(Store.notesCompletion, NotesCompletionRequest())
            #expect(completion.answered == 1 && completion.total == 3 && abs(completion.percentage - 100.0 / 3) < 1e-9)
            #expect(completion.requiredAnswered == 1 && completion.requiredTotal == 1)
            #expect(completion.categories == [
                CategoryCompletion(category: "network", answered: 0, total: 1, percentage: 0),
                CategoryCompletion(category: "utilities", answered: 1, total: 2, percentage: 50),
            ])
            _ = try await world.call(Store.deleteQuestion, RecordID(id: q1.id))
            #expect(await world.failure(Store.getNote, RecordID(id: note.id))?.code == .notFound)
            completion = try await world.call(Store.notesCompletion, NotesCompletionRequest(category: "utilities"))
            #expect(completion.answered == 0 && completion.total == 1)
        }
    }

    @Test("conversations keep messages in order; the last N newest first; a message bumps the conversation")
    func conversations() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let first = try await world.call(Store.createConversation, ConversationCreate(title: "Cells"))
            let second = try await world.call(Store.createConversation, ConversationCreate(title: "Light"))
            for (index, role) in [ConversationRole.system, .user, .assistant, .user, .assistant, .user].enumerated() {
                world.clock.advance(by: 1)
                _ = try await world.call(Store.createMessage, MessageCreate(id: "m\(index)", conversationId: first.id, role: role, text: "message \(index)"))
            }
            #expect(try await world.call(Store.listConversations, ConversationList()).items.map(\.id) == [first.id, second.id])
            #expect(try await world.call(Store.listMessages, MessageList(conversationId: first.id)).items.map(\.id) == (0..<6).map { "m\($0)" })
            let lastFive = try await world.call(Store.listMessages, MessageList(limit: 5, conversationId: first.id, newestFirst: true))
            #expect(lastFive.items.map(\.id) == ["m5", "m4", "m3", "m2", "m1"])
            #expect(await world.failure(Store.createMessage, MessageCreate(conversationId: first.id, role: .user, text: ""))?.code == .invalidArgument)
            _ = try await world.call(Store.deleteConversation, RecordID(id: first.id))
            #expect(await world.failure(Store.getMessage, RecordID(id: "m0"))?.code == .notFound)
        }
    }

    @Test("progress.today counts the day's study minutes, cards, tasks and materials from the rows")
    func progressToday() async throws {
        try await withWorld(StoreWorld.start()) { world in
            // StoreWorld.start is 2026-09-21T14:13:20Z.
            func at(_ text: String) -> Date { ISO8601.parse(text)! }
            _ = try await world.call(Store.createSession, StudySessionCreate(startedAt: at("2026-09-21T09:00:00Z"), endedAt: at("2026-09-21T09:45:00Z"), cardsReviewed: 30))
            // Crosses midnight into the day: only 30 minutes count.
            _ = try await world.call(Store.createSession, StudySessionCreate(startedAt: at("2026-09-20T23:30:00Z"), endedAt: at("2026-09-21T00:30:00Z"), cardsReviewed: 10))
            // Still going: counts up to now (14:13:20 - 13:00 = 73 min 20 s).
            _ = try await world.call(Store.createSession, StudySessionCreate(startedAt: at("2026-09-21T13:00:00Z")))
            _ = try await world.call(Store.createSession, StudySessionCreate(startedAt: at("2026-09-19T10:00:00Z"), endedAt: at("2026-09-19T11:00:00Z"), cardsReviewed: 99))
            let done = try await world.call(Store.createTask, StudyTaskCreate(title: "Done today"))
            _ = try await world.call(Store.updateTask, StudyTaskUpdate(id: done.id, isDone: true))
            _ = try await world.call(Store.createTask, StudyTaskCreate(title: "Due today", dueAt: at("2026-09-21T18:00:00Z")))
            _ = try await world.call(Store.createTask, StudyTaskCreate(title: "Overdue", dueAt: at("2026-09-20T18:00:00Z")))
            _ = try await world.call(Store.createMaterial, MaterialCreate(title: "Notes", sourceKind: .text))
            let progress = try await world.call(Store.progressToday, ProgressTodayRequest())
            // Minutes: 45 + 30 + 73.33.
            #expect(progress == ProgressToday(
                date: "2026-09-21", timeZone: "UTC", studyMinutes: 148.33, sessions: 3, cardsReviewed: 40, tasksDone: 1,
                tasksOpen: 2, tasksDueToday: 1, tasksOverdue: 1, materialsAdded: 1, flashcardsCreated: 0))
            // Los Angeles' 2026-09-20 (UTC-7) runs until 07:00Z on the 21st: only the midnight session.
            let losAngeles = try await world.call(Store.progressToday, ProgressTodayRequest(date: "2026-09-20", timeZone: "America/Los_Angeles"))
            #expect(losAngeles.sessions == 1 && losAngeles.studyMinutes == 60 && losAngeles.cardsReviewed == 10)
            #expect(await world.failure(Store.progressToday, ProgressTodayRequest(date: "2026-02-30"))?.code == .invalidArgument)
        }
    }
}
