import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("Ingest's methods: uploads, materials.put, failures and the sweep")
struct IngestTests {
    @Test("an upload is stored content-addressed: the same bytes twice are one material, and the original comes back")
    func uploadDeduplicates() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let file = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let first = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Lecture", sourceKind: .pdf, fileName: "l.pdf", mimeType: "application/pdf"), attachment: file)
            #expect(!first.duplicate && first.material.status == .processing && first.material.processingStartedAt == StoreWorld.start)
            #expect(first.material.sizeBytes == file.count && first.material.sha256?.count == 64)
            let second = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Same file", sourceKind: .pdf), attachment: file)
            #expect(second.duplicate && second.material == first.material)
            let (info, bytes) = try await world.client.callWithAttachment(Store.materialOriginal, RecordID(id: first.material.id), options: CallOptions(user: "alice"))
            #expect(bytes == file && info.sha256 == first.material.sha256 && info.fileName == "l.pdf")
            // Another user uploading the same bytes gets a material of their own.
            let bobs = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Bob", sourceKind: .pdf), as: "bob", attachment: file)
            #expect(!bobs.duplicate && bobs.material.userId == "bob")
            #expect(try await world.sql { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM material_original") } == 1)
            // The bytes stay while a material uses them.
            _ = try await world.call(Store.deleteMaterial, RecordID(id: first.material.id))
            #expect(try await world.sql { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM material_original") } == 1)
            _ = try await world.call(Store.deleteMaterial, RecordID(id: bobs.material.id), as: "bob")
            #expect(try await world.sql { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM material_original") } == 0)
        }
    }

    @Test("uploads are refused without an attachment or over the limit of their kind")
    func uploadLimits() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let missing = await world.failure(Store.uploadMaterial, MaterialUpload(title: "t", sourceKind: .pdf))
            #expect(missing?.code == .invalidArgument && missing?.message.contains("attachment") == true)
            let audio = await world.failure(Store.uploadMaterial, MaterialUpload(title: "t", sourceKind: .audio), attachment: Data(count: 50 * 1024 * 1024 + 1))
            #expect(audio?.code == .invalidArgument && audio?.message.contains("a recording may have at most 50 MB") == true)
            let material = try await world.call(Store.createMaterial, MaterialCreate(title: "typed", sourceKind: .text))
            #expect(await world.failure(Store.materialOriginal, RecordID(id: material.id))?.code == .notFound)
        }
    }

    @Test("materials.put stores document, chunks and cards, marks the material ready and publishes its events in order")
    func putWritesEverything() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let upload = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Bio", sourceKind: .txt), attachment: Data("text".utf8))
            let before = try await world.events().count
            world.clock.advance(by: 30)
            let result = try await world.call(Store.putMaterial, samplePut(materialId: upload.material.id, cards: 3, setName: "Bio cards"))
            #expect(result.material.status == .ready && result.material.processingStartedAt == nil && result.material.summary == "Plants and cells.")
            #expect(result.material.createdAt == upload.material.createdAt && result.material.sha256 == upload.material.sha256)
            #expect(result.chunkIds.count == 3 && result.flashcardIds.count == 3)
            #expect(result.sourceDocument.characterCount == sampleChunks.map(\.count).reduce(0, +))
            let chunks = try await world.call(Store.listChunks, ChunkList(materialId: upload.material.id))
            #expect(chunks.items.map(\.id) == result.chunkIds && chunks.items.map(\.text) == sampleChunks)
            #expect(chunks.items[1].startOffset == sampleChunks[0].count && chunks.items[1].endOffset == sampleChunks[0].count + sampleChunks[1].count)
            let cards = try await world.call(Store.listFlashcards, FlashcardList(materialId: upload.material.id))
            #expect(cards.items.map(\.id) == result.flashcardIds)
            #expect(cards.items.map(\.chunkId) == [result.chunkIds[0], result.chunkIds[1], result.chunkIds[2]])
            #expect(cards.items.allSatisfy { $0.setId == result.setId && $0.tags == ["bio"] })
            #expect(try await world.call(Store.getSet, RecordID(id: try #require(result.setId))).cardCount == 3)

            let events = try await world.events(after: before)
            #expect(events.map(\.topic) == ["material.updated", "set.created", "flashcard.created", "flashcard.created", "flashcard.created", "material.ingested"])
            let ingested = try events.last!.decode(Store.materialIngested)
            #expect(ingested.material == result.material && ingested.flashcardIds == result.flashcardIds && ingested.chunkCount == 3)
            let created = try events[2].decode(Store.flashcardCreated)
            #expect(created.userId == "alice" && created.materialId == upload.material.id && created.setId == result.setId)
            // The events are on the bus too, with the durable stream's seq.
            #expect(Set(events.map(\.header.source)) == ["store"])
        }
    }

    @Test("materials.put is idempotent under the idem key, and refuses a ready material unless replace")
    func putIdempotentAndReplace() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let first = try await world.call(Store.putMaterial, samplePut(cards: 2), idem: "ingest-job-1")
            let count = try await world.events().count
            let again = try await world.call(Store.putMaterial, samplePut(cards: 2), idem: "ingest-job-1")
            #expect(again == first)
            #expect(try await world.events().count == count)
            #expect(try await world.call(Store.listMaterials, MaterialList()).items.count == 1)

            let refused = await world.failure(Store.putMaterial, samplePut(materialId: first.material.id))
            #expect(refused?.code == .failedPrecondition)
            var replacement = samplePut(materialId: first.material.id, cards: 1)
            replacement.replace = true
            let replaced = try await world.call(Store.putMaterial, replacement)
            let events = try await world.events(after: count)
            let deleted = try events.filter { $0.topic == "flashcard.deleted" }.map { try $0.decode(Store.flashcardDeleted) }
            #expect(Set(deleted.map(\.id)) == Set(first.flashcardIds) && deleted.allSatisfy { $0.cause == .replaced })
            #expect(try await world.call(Store.listFlashcards, FlashcardList()).items.map(\.id) == replaced.flashcardIds)
            #expect(try await world.call(Store.listChunks, ChunkList(materialId: first.material.id)).items.map(\.id) == replaced.chunkIds)
        }
    }

    @Test("a failure in the middle of materials.put rolls everything back: no material, chunk, card or event")
    func putRollsBack() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let upload = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Bio", sourceKind: .txt), attachment: Data("x".utf8))
            let eventsBefore = try await world.events().count
            // Injected fault: the database refuses the third card, after the chunks and two cards are written.
            try await world.sql { db in
                try db.execute(sql: """
                    CREATE TEMP TRIGGER fail_third_card BEFORE INSERT ON flashcard WHEN new.front = 'Question 2?'
                    BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                    """)
            }
            let error = await world.failure(Store.putMaterial, samplePut(materialId: upload.material.id, cards: 4, setName: "Deck"), attachment: nil)
            #expect(error?.code == .internal)
            let counts = try await world.sql { db in
                try ["chunk", "flashcard", "source_document", "flashcard_set", "search_queue", "search_index"].map {
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") ?? -1
                }
            }
            #expect(counts == [0, 0, 0, 0, 0, 0])
            #expect(try await world.call(Store.getMaterial, RecordID(id: upload.material.id)) == upload.material)
            #expect(try await world.events().count == eventsBefore)
            // The same put succeeds once the fault is gone.
            try await world.sql { db in try db.execute(sql: "DROP TRIGGER fail_third_card") }
            #expect(try await world.call(Store.putMaterial, samplePut(materialId: upload.material.id, cards: 4)).flashcardIds.count == 4)
        }
    }

    @Test("materials.put writes a calendar's tasks and sessions in its transaction: rolled back with it, and kept once across a replace")
    func putCalendarEntries() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let upload = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Term", sourceKind: .text), attachment: Data("x".utf8))
            var put = samplePut(materialId: upload.material.id, cards: 0)
            put.tasks = [StudyTaskCreate(id: "ics-exam", title: "Biology exam", dueAt: Date(timeIntervalSince1970: 1_795_000_000))]
            put.sessions = [StudySessionCreate(id: "ics-seminar", startedAt: Date(timeIntervalSince1970: 1_794_900_000))]
            func calendarCounts() async throws -> [Int] {
                try await world.sql { db in
                    try ["task", "study_session"].map { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") ?? -1 }
                }
            }

            // A put that fails after the calendar rows would be written leaves none of them.
            try await world.sql { db in
                try db.execute(sql: """
                    CREATE TEMP TRIGGER fail_event BEFORE INSERT ON bus_outbox WHEN new.topic = 'material.ingested'
                    BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                    """)
            }
            #expect(await world.failure(Store.putMaterial, put, attachment: nil)?.code == .internal)
            #expect(try await calendarCounts() == [0, 0])
            try await world.sql { db in try db.execute(sql: "DROP TRIGGER fail_event") }

            let stored = try await world.call(Store.putMaterial, put)
            #expect(stored.taskIds == ["ics-exam"] && stored.sessionIds == ["ics-seminar"])
            let task = try await world.call(Store.getTask, RecordID(id: "ics-exam"))
            #expect(task.materialId == upload.material.id && task.title == "Biology exam")
            put.replace = true
            #expect(try await world.call(Store.putMaterial, put).taskIds == ["ics-exam"])
            #expect(try await calendarCounts() == [1, 1])

            put.tasks = (0...500).map { StudyTaskCreate(id: "t\($0)", title: "Task \($0)") }
            let tooMany = await world.failure(Store.putMaterial, put, attachment: nil)
            #expect(tooMany == .invalidArgument("fields 'tasks' and 'sessions' have 502 entries; materials.put takes at most 500"))
        }
    }

    @Test("materials.put validates every part before writing, naming the field")
    func putValidation() async throws {
        try await withWorld(StoreWorld.start()) { world in
            var duplicate = samplePut()
            duplicate.chunks.append(ChunkInput(ordinal: 1, text: "again"))
            #expect(await world.failure(Store.putMaterial, duplicate)?.message.contains("chunks[3].ordinal") == true)
            var dangling = samplePut()
            dangling.flashcards.append(GeneratedFlashcard(front: "f", back: "b", chunkOrdinal: 42))
            #expect(await world.failure(Store.putMaterial, dangling)?.message.contains("flashcards[2].chunkOrdinal") == true)
            var untitled = samplePut()
            untitled.title = nil
            #expect(await world.failure(Store.putMaterial, untitled)?.message.contains("'title' is required") == true)
            var emptyBack = samplePut()
            emptyBack.flashcards[0].back = " "
            #expect(await world.failure(Store.putMaterial, emptyBack)?.message.contains("flashcards[0].back") == true)
            let materials = try await world.call(Store.listMaterials, MaterialList())
            #expect(materials.items.isEmpty)
        }
    }

    @Test("materials.fail marks the material failed and publishes ingest.failed in the same transaction")
    func failPublishesIngestFailed() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let upload = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Scan", sourceKind: .image), attachment: Data("img".utf8))
            let before = try await world.events().count
            world.clock.advance(by: 5)
            let failed = try await world.call(Store.failMaterial, MaterialFail(id: upload.material.id, reason: "OCR found no text"))
            #expect(failed.status == .failed && failed.failureReason == "OCR found no text" && failed.processingStartedAt == nil)
            let events = try await world.events(after: before)
            #expect(events.map(\.topic) == ["material.updated", "ingest.failed"])
            #expect(try events[1].decode(Store.ingestFailed) == IngestFailed(
                materialId: upload.material.id, userId: "alice", title: "Scan", reason: "OCR found no text", failedAt: failed.updatedAt))
            #expect(await world.failure(Store.failMaterial, MaterialFail(id: upload.material.id, reason: "again"))?.code == .failedPrecondition)
            // A retry takes it again.
            let retried = try await world.call(Store.startProcessing, RecordID(id: upload.material.id))
            #expect(retried.status == .processing && retried.failureReason == nil && retried.processingStartedAt == world.clock.now())
        }
    }

    @Test("materials.stuck finds processing materials older than the cutoff, for every user without a user header")
    func stuckSweep() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let old = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Old", sourceKind: .txt), attachment: Data("a".utf8))
            let bobs = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Bob's", sourceKind: .txt), as: "bob", attachment: Data("b".utf8))
            world.clock.advance(by: 900)
            _ = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Fresh", sourceKind: .txt), attachment: Data("c".utf8))
            _ = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Waiting", sourceKind: .txt, status: .pending), attachment: Data("d".utf8))
            let all = try await world.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 600), as: nil)
            #expect(Set(all.materials.map(\.id)) == [old.material.id, bobs.material.id])
            let alices = try await world.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 600))
            #expect(alices.materials.map(\.id) == [old.material.id])
            #expect(await world.failure(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 0))?.code == .invalidArgument)
        }
    }

    @Test("materials.renew keeps a long job's material out of materials.stuck; only the attempt that holds it may renew, silently")
    func renewKeepsALongJobAlive() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let upload = try await world.call(Store.uploadMaterial, MaterialUpload(title: "Lecture", sourceKind: .audio), attachment: Data("a".utf8))
            let attempt = try #require(upload.material.processingStartedAt)
            let before = try await world.events(after: 0).count
            world.clock.advance(by: 500)
            _ = try await world.call(Store.renewMaterial, MaterialRenew(id: upload.material.id, attemptStartedAt: attempt))
            world.clock.advance(by: 500)  // 1,000 s since the attempt began, 500 since its renewal
            #expect(try await world.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 600), as: nil).materials.isEmpty)
            world.clock.advance(by: 101)
            #expect(try await world.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 600), as: nil).materials.map(\.id) == [upload.material.id])
            // Not a change of the record: no event, the same updatedAt.
            #expect(try await world.events(after: 0).count == before)
            #expect(try await world.call(Store.getMaterial, RecordID(id: upload.material.id)).updatedAt == upload.material.updatedAt)

            // Another attempt's stamp, another user, a failed material: FAILED_PRECONDITION, nothing renewed.
            let stale = MaterialRenew(id: upload.material.id, attemptStartedAt: attempt - 1)
            #expect(await world.failure(Store.renewMaterial, stale)?.code == .failedPrecondition)
            #expect(await world.failure(Store.renewMaterial, MaterialRenew(id: upload.material.id, attemptStartedAt: attempt), as: "bob")?.code == .failedPrecondition)
            _ = try await world.call(Store.failMaterial, MaterialFail(id: upload.material.id, reason: "cancelled"))
            #expect(await world.failure(Store.renewMaterial, MaterialRenew(id: upload.material.id, attemptStartedAt: attempt))?.code == .failedPrecondition)
            // A retry is a new attempt: a fresh age, whatever the old one renewed.
            world.clock.advance(by: 10)
            let retried = try await world.call(Store.startProcessing, RecordID(id: upload.material.id))
            world.clock.advance(by: 599)
            #expect(try await world.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 600), as: nil).materials.isEmpty)
            _ = try await world.call(Store.renewMaterial, MaterialRenew(id: upload.material.id, attemptStartedAt: try #require(retried.processingStartedAt)))
        }
    }

    @Test("deleting a material removes its documents, chunks and cards with a flashcard.deleted each, and its search entries")
    func materialDeleteCascades() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let put = try await world.call(Store.putMaterial, samplePut(cards: 3, setName: "Deck"))
            let task = try await world.call(Store.createTask, StudyTaskCreate(title: "Revise", materialId: put.material.id))
            let before = try await world.events().count
            _ = try await world.call(Store.deleteMaterial, RecordID(id: put.material.id))
            let events = try await world.events(after: before)
            let deleted = try events.filter { $0.topic == "flashcard.deleted" }.map { try $0.decode(Store.flashcardDeleted) }
            #expect(deleted.map(\.id) == put.flashcardIds && deleted.allSatisfy { $0.cause == .materialDeleted && $0.materialId == put.material.id })
            #expect(events.last?.topic == "material.deleted")
            #expect(try await world.call(Store.getTask, RecordID(id: task.id)).materialId == nil)
            #expect(try await world.call(Store.getSet, RecordID(id: try #require(put.setId))).cardCount == 0)
            #expect(try await world.call(Store.search, SearchRequest(query: "light")).hits.isEmpty)
            let counts = try await world.sql { db in
                try ["chunk", "flashcard", "source_document", "search_index"].map { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") ?? -1 }
            }
            #expect(counts == [0, 0, 0, 0])
        }
    }

    @Test("deleting a subject with cascade deletes its materials as materials.delete does; without, they stay, unlinked")
    func subjectDeleteCascades() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let biology = try await world.call(Store.createSubject, SubjectCreate(name: "Biology"))
            let chemistry = try await world.call(Store.createSubject, SubjectCreate(name: "Chemistry"))
            let cells = try await world.call(Store.putMaterial, samplePut(title: "Cells", cards: 2))
            let enzymes = try await world.call(Store.putMaterial, samplePut(title: "Enzymes", cards: 1))
            let acids = try await world.call(Store.putMaterial, samplePut(title: "Acids", cards: 1))
            for (material, subject) in [(cells, biology), (enzymes, biology), (acids, chemistry)] {
                _ = try await world.call(Store.updateMaterial, MaterialUpdate(id: material.material.id, subjectId: subject.id))
            }
            let session = try await world.call(Store.createSession, StudySessionCreate(subjectId: biology.id, startedAt: Date(timeIntervalSince1970: 1_795_000_000)))
            let before = try await world.events().count

            _ = try await world.call(Store.deleteSubject, SubjectDelete(id: biology.id, cascade: true))
            let events = try await world.events(after: before)
            let deletedCards = try events.filter { $0.topic == "flashcard.deleted" }.map { try $0.decode(Store.flashcardDeleted).id }
            #expect(Set(deletedCards) == Set(cells.flashcardIds + enzymes.flashcardIds))
            let deletedMaterials = try events.filter { $0.topic == "material.deleted" }.map { try $0.decode(Store.materialDeleted).id }
            #expect(Set(deletedMaterials) == [cells.material.id, enzymes.material.id])
            #expect(events.last?.topic == "subject.deleted")
            #expect(try await world.call(Store.listMaterials, MaterialList()).items.map(\.id) == [acids.material.id])
            #expect(try await world.call(Store.getSession, RecordID(id: session.id)).subjectId == nil)
            let chunks = try await world.sql { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM chunk") ?? -1 }
            #expect(chunks == samplePut().chunks.count)

            // Without cascade the material stays, without subject.
            _ = try await world.call(Store.deleteSubject, SubjectDelete(id: chemistry.id))
            #expect(try await world.call(Store.getMaterial, RecordID(id: acids.material.id)).subjectId == nil)
        }
    }
}
