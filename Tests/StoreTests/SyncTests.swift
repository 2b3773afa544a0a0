import Bus
import Contracts
import Foundation
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("Multi-device sync: last write wins, tombstones, cursors")
struct SyncTests {
    static let t0 = StoreWorld.start

    func at(_ seconds: Double) -> Date { Self.t0.addingTimeInterval(seconds) }

    func card(_ id: String, front: String, at seconds: Double) throws -> SyncChange {
        SyncChange(kind: .flashcard, id: id, updatedAt: at(seconds), record: try JSONValue.parse(WireCoding.encode(FlashcardCreate(front: front, back: "back"))))
    }

    func deletion(_ kind: SyncKind, _ id: String, at seconds: Double) -> SyncChange {
        SyncChange(kind: kind, id: id, updatedAt: at(seconds), deleted: true)
    }

    func push(_ world: StoreWorld, _ device: String, _ changes: [SyncChange]) async throws -> [SyncOutcome] {
        try await world.call(Store.syncPush, SyncPushRequest(deviceId: device, changes: changes)).results.map(\.outcome)
    }

    @Test("pushed records reach another device's pull once, in their latest state, and the cursor moves on")
    func pushThenPull() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let subject = SyncChange(kind: .subject, id: "s1", updatedAt: at(1), record: try JSONValue.parse(WireCoding.encode(SubjectCreate(name: "Maths"))))
            #expect(try await push(world, "phone", [subject, try card("c1", front: "2+2?", at: 2)]) == [.applied, .applied])
            #expect(try await push(world, "phone", [try card("c1", front: "2+3?", at: 3)]) == [.applied])
            let pulled = try await world.call(Store.syncPull, SyncPullRequest())
            #expect(pulled.changes.map(\.id) == ["s1", "c1"] && !pulled.hasMore)
            let pulledCard = try WireCoding.decode(Flashcard.self, from: try #require(pulled.changes[1].record).jsonData)
            #expect(pulledCard.front == "2+3?" && pulledCard.updatedAt == at(3) && pulled.changes[1].deviceId == "phone")
            #expect(try await world.call(Store.getFlashcard, RecordID(id: "c1")).front == "2+3?")
            #expect(try await world.call(Store.syncPull, SyncPullRequest(cursor: pulled.cursor)).changes.isEmpty)
            // An edit through the API is a change too.
            _ = try await world.call(Store.updateSubject, SubjectUpdate(id: "s1", name: "Mathematics"))
            let next = try await world.call(Store.syncPull, SyncPullRequest(cursor: pulled.cursor))
            #expect(next.changes.map(\.id) == ["s1"] && next.changes[0].deviceId == "")
            // Paging through the log.
            let page = try await world.call(Store.syncPull, SyncPullRequest(limit: 1))
            #expect(page.changes.count == 1 && page.hasMore)
        }
    }

    @Test("concurrent edits: the later updatedAt wins whatever order the pushes arrive in")
    func concurrentEdits() async throws {
        for order in [["tablet", "phone"], ["phone", "tablet"]] {
            try await withWorld(StoreWorld.start()) { world in
                _ = try await push(world, "phone", [try card("c1", front: "original", at: 1)])
                let edits = ["phone": try card("c1", front: "phone edit", at: 10), "tablet": try card("c1", front: "tablet edit", at: 12)]
                let outcomes = [try await push(world, order[0], [edits[order[0]]!]), try await push(world, order[1], [edits[order[1]]!])]
                #expect(try await world.call(Store.getFlashcard, RecordID(id: "c1")).front == "tablet edit")
                #expect(outcomes == (order[0] == "tablet" ? [[.applied], [.superseded]] : [[.applied], [.applied]]))
            }
        }
    }

    @Test("delete versus edit: an older edit cannot bring a deleted record back, a newer one does")
    func deleteVersusEdit() async throws {
        try await withWorld(StoreWorld.start()) { world in
            _ = try await push(world, "phone", [try card("c1", front: "v1", at: 1)])
            let before = try await world.events().count
            #expect(try await push(world, "phone", [deletion(.flashcard, "c1", at: 20)]) == [.applied])
            let deleted = try await world.events(after: before).filter { $0.topic == "flashcard.deleted" }.map { try $0.decode(Store.flashcardDeleted) }
            #expect(deleted.map(\.cause) == [.synced] && deleted.map(\.deletedAt) == [at(20)])
            #expect(try await push(world, "tablet", [try card("c1", front: "stale edit", at: 15)]) == [.superseded])
            #expect(await world.failure(Store.getFlashcard, RecordID(id: "c1"))?.code == .notFound)
            let tombstone = try await world.call(Store.syncPull, SyncPullRequest()).changes.first { $0.id == "c1" }
            #expect(tombstone?.deleted == true && tombstone?.record == nil && tombstone?.updatedAt == at(20))
            #expect(try await push(world, "tablet", [try card("c1", front: "newer edit", at: 25)]) == [.applied])
            #expect(try await world.call(Store.getFlashcard, RecordID(id: "c1")).front == "newer edit")
            // A delete older than the current version loses too.
            #expect(try await push(world, "phone", [deletion(.flashcard, "c1", at: 22)]) == [.superseded])
        }
    }

    @Test("clock ties are broken the same way in any order: delete over edit, then the greater device id")
    func clockTies() async throws {
        for order in [[0, 1], [1, 0]] {
            try await withWorld(StoreWorld.start()) { world in
                _ = try await push(world, "a-device", [try card("c1", front: "base", at: 1)])
                let pushes = [("a-device", try card("c1", front: "from a", at: 5)), ("b-device", try card("c1", front: "from b", at: 5))]
                for index in order { _ = try await push(world, pushes[index].0, [pushes[index].1]) }
                #expect(try await world.call(Store.getFlashcard, RecordID(id: "c1")).front == "from b")
                // Same time, edit and delete: the delete wins from either side.
                let racing = [("a-device", deletion(.flashcard, "c1", at: 9)), ("b-device", try card("c1", front: "edit at 9", at: 9))]
                for index in order { _ = try await push(world, racing[index].0, [racing[index].1]) }
                #expect(await world.failure(Store.getFlashcard, RecordID(id: "c1"))?.code == .notFound)
            }
        }
    }

    @Test("a push is one transaction: an invalid change rejects the batch, naming it")
    func pushIsAtomic() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let bad = SyncChange(kind: .flashcard, id: "c2", updatedAt: at(2), record: .object(["front": .string("f")]))
            let error = await world.failure(Store.syncPush, SyncPushRequest(deviceId: "phone", changes: [try card("c1", front: "ok", at: 1), bad]))
            #expect(error?.code == .invalidArgument && error?.message.contains("changes[1].record") == true && error?.message.contains("back") == true)
            #expect(await world.failure(Store.getFlashcard, RecordID(id: "c1"))?.code == .notFound)
            let material = SyncChange(kind: .material, id: "m1", updatedAt: at(1), record: .object(["title": .string("new")]))
            #expect(try await push(world, "phone", [material]) == [.superseded])
            // Parents first: a message of a conversation the store does not have fails the push, naming it.
            let message = SyncChange(kind: .message, id: "x1", updatedAt: at(1), record: .object([
                "conversationId": .string("c9"), "role": .string("user"), "text": .string("hi")]))
            let orphan = await world.failure(Store.syncPush, SyncPushRequest(deviceId: "phone", changes: [try card("c3", front: "ok", at: 1), message]))
            #expect(orphan?.code == .notFound && orphan?.message.hasPrefix("changes[1]: ") == true)
            // A question has one note: another device's note for it loses to the one already there.
            let question = try await world.call(Store.createQuestion, QuestionCreate(text: "Boiler?", category: "house"))
            _ = try await world.call(Store.createNote, NoteCreate(id: "n1", questionId: question.id, answer: "Basement"))
            let rival = SyncChange(kind: .note, id: "n2", updatedAt: at(5), record: .object(["questionId": .string(question.id), "answer": .string("Attic")]))
            #expect(try await push(world, "tablet", [rival]) == [.superseded])
            #expect(try await world.call(Store.listNotes, NoteList(questionId: question.id)).items.map(\.id) == ["n1"])
        }
    }

    @Test("material edits and deletes sync; a device's future clock does not make API edits lose")
    func materialsAndFutureClocks() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let material = try await world.call(Store.createMaterial, MaterialCreate(title: "Notes", sourceKind: .text))
            let rename = SyncChange(kind: .material, id: material.id, updatedAt: at(240), record: .object(["title": .string("Renamed 4 minutes ahead")]))
            #expect(try await push(world, "fast-clock", [rename]) == [.applied])
            let edited = try await world.call(Store.updateMaterial, MaterialUpdate(id: material.id, isPriority: true))
            #expect(edited.title == "Renamed 4 minutes ahead" && edited.isPriority && edited.updatedAt > at(240))
        }
    }
}
