import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("Migrations")
struct MigrationTests {
    @Test("a database of the first schema with data in it migrates: rows load with defaults, are searchable and sync")
    func fromFirstSchema() async throws {
        let directory = try temporaryDirectory()
        let t = StoreWorld.start.unixMilliseconds
        do {
            // The first released schema, written as a store of that version wrote it (no keywords,
            // flags or tags given: their columns' defaults apply).
            let old = try ServiceDatabase.open(at: directory.appending(path: "store.sqlite"), migrator: StoreSchema.migrator(through: .content), logger: testLogger("old"))
            try await old.pool.write { db in
                try db.execute(sql: "INSERT INTO subject (id, user_id, name, created_at, updated_at) VALUES ('s1', 'alice', 'Biology', ?, ?)", arguments: [t, t])
                try db.execute(sql: """
                    INSERT INTO material (id, user_id, title, subject_id, source_kind, status, created_at, updated_at)
                    VALUES ('m1', 'alice', 'Old notes', 's1', 'txt', 'ready', ?, ?)
                    """, arguments: [t, t])
                try db.execute(sql: "INSERT INTO source_document (id, user_id, material_id, kind, created_at, updated_at) VALUES ('d1', 'alice', 'm1', 'txt', ?, ?)", arguments: [t, t])
                try db.execute(sql: """
                    INSERT INTO chunk (id, user_id, material_id, source_document_id, ordinal, text, start_offset, end_offset, created_at, updated_at)
                    VALUES ('k1', 'alice', 'm1', 'd1', 0, 'Enzymes speed up chemical reactions.', 0, 36, ?, ?)
                    """, arguments: [t, t])
                try db.execute(sql: "INSERT INTO flashcard (id, user_id, front, back, material_id, chunk_id, created_at, updated_at) VALUES ('c1', 'alice', 'What do enzymes do?', 'Catalyse', 'm1', 'k1', ?, ?)", arguments: [t, t])
                try db.execute(sql: "INSERT INTO question (id, user_id, text, category, created_at, updated_at) VALUES ('q1', 'alice', 'Boiler?', 'house', ?, ?)", arguments: [t, t])
                try db.execute(sql: "INSERT INTO note (id, user_id, question_id, answer, created_at, updated_at) VALUES ('n1', 'alice', 'q1', 'Enzymes not involved', ?, ?)", arguments: [t, t])
                try db.execute(sql: "INSERT INTO task (id, user_id, title, created_at, updated_at) VALUES ('t1', 'alice', 'Revise', ?, ?)", arguments: [t, t])
            }
        }
        try await withWorld(StoreWorld.start(directory: directory)) { world in
            let applied = try await world.sql { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") }
            #expect(applied.contains("store.v2.search") && applied.contains("store.v3.sync") && applied.contains("store.v4.chunk-sections"))
            #expect(try await world.call(Store.getChunk, RecordID(id: "k1")).section == nil, "an old chunk has no section")

            let material = try await world.call(Store.getMaterial, RecordID(id: "m1"))
            #expect(material.keywords == [] && !material.isArchived && !material.isPriority && material.sizeBytes == 0 && material.createdAt == StoreWorld.start)
            let card = try await world.call(Store.getFlashcard, RecordID(id: "c1"))
            #expect(card.kind == .qa && card.tags == [] && card.chunkId == "k1")
            #expect(try await world.call(Store.getNote, RecordID(id: "n1")).metadata == [:])
            #expect(try await world.call(Store.getTask, RecordID(id: "t1")).isDone == false)

            let hits = try await world.call(Store.search, SearchRequest(query: "enzymes")).hits
            #expect(Set(hits.map(\.id)) == ["k1", "c1", "n1"])
            #expect(hits.first { $0.id == "k1" }?.subjectId == "s1")
            let pulled = try await world.call(Store.syncPull, SyncPullRequest())
            #expect(Set(pulled.changes.map(\.id)) == ["s1", "m1", "c1", "q1", "n1", "t1"])
            // Old rows take part in new writes.
            _ = try await world.call(Store.updateFlashcard, FlashcardUpdate(id: "c1", tags: ["bio"]))
            _ = try await world.call(Store.deleteMaterial, RecordID(id: "m1"))
            #expect(try await world.call(Store.search, SearchRequest(query: "enzymes")).hits.map(\.id) == ["n1"])
            #expect(try world.store.owner.database.integrityCheck() == "ok")
        }
    }
}
