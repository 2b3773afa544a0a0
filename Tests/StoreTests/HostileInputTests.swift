import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

/// What an outside client can send, through the broker to the store in this process: a trap
/// would end the test run, so every test passing shows the store stayed up.
@Suite("Hostile input: the store stays up, answers with the right code, loses and amplifies nothing")
struct HostileInputTests {
    /// The error's code is INVALID_ARGUMENT and its details name `field`.
    func isInvalid(_ error: BusError?, field: String) -> Bool {
        error?.code == .invalidArgument && error?.details == .object(["field": .string(field)])
    }

    @Test("numbers out of range are INVALID_ARGUMENT naming the field, and nothing is written")
    func numbers() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let material = try await world.call(Store.createMaterial, MaterialCreate(title: "Notes", sourceKind: .text))
            let document = try await world.call(Store.createSourceDocument, SourceDocumentCreate(materialId: material.id))
            let events = try await world.events().count

            // materials.stuck without a user: Int64(Double) of the cutoff trapped for 1e17.
            for age in [1e17, 1e300, 0.5, -1] {
                #expect(isInvalid(await world.failure(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: age), as: nil), field: "olderThanSeconds"))
            }
            // chunks.create: a start near Int.max overflowed when the text's length was added.
            func chunk(_ input: ChunkInput) -> ChunkCreate { ChunkCreate(sourceDocumentId: document.id, chunk: input) }
            #expect(isInvalid(await world.failure(Store.createChunk, chunk(ChunkInput(ordinal: 0, text: "hello", startOffset: Int.max - 2))), field: "chunk.startOffset"))
            #expect(isInvalid(await world.failure(Store.createChunk, chunk(ChunkInput(ordinal: 0, text: "hello", endOffset: Int.max))), field: "chunk.endOffset"))
            #expect(isInvalid(await world.failure(Store.createChunk, chunk(ChunkInput(ordinal: 0, text: "hello", startOffset: -1))), field: "chunk.startOffset"))
            #expect(isInvalid(await world.failure(Store.createChunk, chunk(ChunkInput(ordinal: 0, text: "hello", startOffset: 9, endOffset: 3))), field: "chunk.endOffset"))
            #expect(isInvalid(await world.failure(Store.createChunk, chunk(ChunkInput(ordinal: 0, text: "hello", startSeconds: 1e300))), field: "chunk.startSeconds"))
            #expect(isInvalid(await world.failure(Store.updateSourceDocument, SourceDocumentUpdate(id: document.id, durationSeconds: 1e12)), field: "durationSeconds"))
            // materials.put: offsets were not checked at all.
            var put = samplePut()
            put.chunks[1].startOffset = Int.max - 2
            #expect(isInvalid(await world.failure(Store.putMaterial, put), field: "chunks[1].startOffset"))
            put = samplePut()
            put.chunks[2].startOffset = 50
            put.chunks[2].endOffset = 10
            #expect(isInvalid(await world.failure(Store.putMaterial, put), field: "chunks[2].endOffset"))
            // A cursor is the client's to send back: one crafted to overflow the next page's offset.
            let crafted = Data(#"{"l":"search","k":[9223372036854775807]}"#.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(isInvalid(await world.failure(Store.search, SearchRequest(query: "light", cursor: crafted)), field: "cursor"))
            #expect(isInvalid(await world.failure(Store.listSubjects, SubjectList(cursor: String(repeating: "A", count: 5000))), field: "cursor"))

            // Nothing was written, and the store still serves.
            #expect(try await world.events().count == events)
            #expect(try await world.call(Store.listMaterials, MaterialList()).items.map(\.id) == [material.id])
            #expect(try await world.call(Store.listChunks, ChunkList(sourceDocumentId: document.id)).items.isEmpty)
            #expect(try await world.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: StoreLimits.maximumStuckAgeSeconds), as: nil).materials.isEmpty)
            let stored = try await world.call(Store.createChunk, chunk(ChunkInput(ordinal: 0, text: "hello", startOffset: StoreLimits.maximumOffset)))
            #expect(stored.startOffset == StoreLimits.maximumOffset && stored.endOffset == StoreLimits.maximumOffset + 5)
        }
    }

    @Test("a search reply stays within limit × 10 KiB + 1 KiB with the longest markers over the worst text")
    func searchAmplification() async throws {
        try await withWorld(StoreWorld.start()) { world in
            // Text that escapes to six bytes a character, titles over the 200 characters a hit
            // shows, 5,000 matches in an entry (FTS5's snippet(), quadratic in them, took more than
            // the call's 30 s here), and tokens of 100,000 characters.
            let control = "\u{1}"
            var put = samplePut(cards: 0)
            put.chunks = (0..<20).map { ChunkInput(ordinal: $0, text: "x" + String(repeating: "y", count: StoreLimits.textLength - 1)) }
            put.flashcards = (0..<100).map { _ in
                GeneratedFlashcard(
                    front: "x" + String(repeating: control, count: StoreLimits.cardSideLength - 1),
                    back: String(repeating: "x" + control, count: StoreLimits.cardSideLength / 2))
            }
            _ = try await world.call(Store.putMaterial, put)

            // Markers of the longest length, escaped six bytes a byte too; told apart from the text.
            let open = String(repeating: "\u{2}", count: StoreLimits.highlightMarkerBytes - 1) + "["
            let close = String(repeating: "\u{2}", count: StoreLimits.highlightMarkerBytes - 1) + "]"
            let request = SearchRequest(query: "x*", limit: 100, highlightOpen: open, highlightClose: close)
            let reply = try await world.client.callRaw(
                service: "store", method: Store.search.name, payload: try WireCoding.encode(request), options: CallOptions(user: "alice"))
            let bound = 100 * StoreLimits.searchHitBytes + 1024
            #expect(reply.payload.count <= bound, "a reply of \(reply.payload.count) bytes")
            let hits = try WireCoding.decode(SearchResponse.self, from: reply.payload).hits
            #expect(hits.count == 100)
            for hit in hits {
                let highlights = hit.snippet.components(separatedBy: open).count - 1
                let text = hit.snippet.replacingOccurrences(of: open, with: "").replacingOccurrences(of: close, with: "")
                #expect(highlights >= 1 && highlights <= StoreLimits.snippetHighlights && hit.snippet.components(separatedBy: close).count - 1 == highlights)
                #expect(text.unicodeScalars.count <= StoreLimits.snippetLength)
                #expect((hit.title?.unicodeScalars.count ?? 0) <= StoreLimits.titleLength)
            }
            // A match in a token of 100,000 characters is cut inside the highlight, which is closed.
            let chunks = try await world.call(Store.search, SearchRequest(query: "x*", kinds: [.chunk], highlightOpen: open, highlightClose: close)).hits
            #expect(chunks.count == 20 && chunks.allSatisfy { $0.snippet.hasPrefix(open + "x") && $0.snippet.hasSuffix("y" + close + "…") })

            // Over-long markers and queries are refused before any work.
            let longMarker = String(repeating: "m", count: StoreLimits.highlightMarkerBytes + 1)
            #expect(isInvalid(await world.failure(Store.search, SearchRequest(query: "x", highlightOpen: longMarker)), field: "highlightOpen"))
            #expect(isInvalid(await world.failure(Store.search, SearchRequest(query: "x", highlightClose: "é" + longMarker.dropFirst(2))), field: "highlightClose"))
            let manyWords = (0...StoreLimits.searchTerms).map { "w\($0)" }.joined(separator: " ")
            #expect(isInvalid(await world.failure(Store.search, SearchRequest(query: manyWords)), field: "query"))
            #expect(isInvalid(await world.failure(Store.search, SearchRequest(query: String(repeating: "x", count: StoreLimits.searchQueryLength + 1))), field: "query"))
            #expect(isInvalid(await world.failure(Store.search, SearchRequest(query: "x", kinds: [.chunk, .note, .flashcard, .chunk])), field: "kinds"))
        }
    }

    @Test("an idempotency key is bound to its request: another body is FAILED_PRECONDITION and changes nothing")
    func idempotencyFingerprint() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let first = try await world.call(Store.createFlashcard, FlashcardCreate(front: "A", back: "1"), idem: "k1")
            let events = try await world.events().count
            let other = await world.failure(Store.createFlashcard, FlashcardCreate(front: "B", back: "2"), idem: "k1")
            #expect(other?.code == .failedPrecondition && other?.message.contains("different flashcards.create request") == true)
            #expect(await world.failure(Store.createSet, FlashcardSetCreate(name: "A"), idem: "k1")?.code == .failedPrecondition)
            // A retry of the same request, however its JSON is written, gets the first response.
            #expect(try await world.call(Store.createFlashcard, FlashcardCreate(front: "A", back: "1"), idem: "k1") == first)
            let reordered = try await world.client.callRaw(
                service: "store", method: Store.createFlashcard.name, payload: Data(#" { "back" : "1", "front":"A" } "#.utf8),
                options: CallOptions(user: "alice", idempotencyKey: "k1"))
            #expect(try WireCoding.decode(Flashcard.self, from: reordered.payload) == first)
            #expect(try await world.events().count == events)
            #expect(try await world.call(Store.listFlashcards, FlashcardList()).items == [first])
            // Keys are per user.
            #expect(try await world.call(Store.createFlashcard, FlashcardCreate(front: "B", back: "2"), as: "bob", idem: "k1").front == "B")
            // An upload's key covers its file.
            let upload = MaterialUpload(title: "Scan", sourceKind: .txt)
            let uploaded = try await world.call(Store.uploadMaterial, upload, idem: "u1", attachment: Data("first file".utf8))
            #expect(await world.failure(Store.uploadMaterial, upload, idem: "u1", attachment: Data("second file".utf8))?.code == .failedPrecondition)
            #expect(try await world.call(Store.uploadMaterial, upload, idem: "u1", attachment: Data("first file".utf8)) == uploaded)
            #expect(try await world.call(Store.listMaterials, MaterialList()).items.map(\.id) == [uploaded.material.id])

            // After 24 hours the key is forgotten: the same key applies again.
            world.clock.advance(by: 24 * 3600 + 1)
            let later = try await world.call(Store.createFlashcard, FlashcardCreate(front: "B", back: "2"), idem: "k1")
            #expect(later.id != first.id && later.front == "B")
        }
    }

    @Test("expired idempotency keys are pruned as new keys come, at most 16 per write")
    func idempotencyPruning() async throws {
        try await withWorld(StoreWorld.start()) { world in
            func keys() async throws -> Int { try await world.sql { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bus_idempotency") ?? 0 } }
            for index in 0..<20 { _ = try await world.call(Store.createSubject, SubjectCreate(name: "S\(index)"), idem: "old-\(index)") }
            #expect(try await keys() == 20)
            world.clock.advance(by: 25 * 3600)
            _ = try await world.call(Store.createSubject, SubjectCreate(name: "new 1"), idem: "new-1")
            #expect(try await keys() == 20 - 16 + 1)
            _ = try await world.call(Store.createSubject, SubjectCreate(name: "new 2"), idem: "new-2")
            #expect(try await keys() == 2)
            // A write without a key prunes nothing and stores nothing.
            _ = try await world.call(Store.createSubject, SubjectCreate(name: "no key"))
            #expect(try await keys() == 2)
        }
    }

    @Test("sync.push refuses a change stamped past the allowed clock skew, naming the record, and applies none of the push")
    func syncClockSkew() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let now = world.clock.now()
            func card(_ id: String, at date: Date) throws -> SyncChange {
                SyncChange(kind: .flashcard, id: id, updatedAt: date, record: try JSONValue.parse(WireCoding.encode(FlashcardCreate(front: id, back: "b"))))
            }
            let lastWireDate = try #require(ISO8601.parse("9999-12-31T23:59:59.999Z"))
            let error = await world.failure(Store.syncPush, SyncPushRequest(deviceId: "evil", changes: [try card("c1", at: now), try card("c2", at: lastWireDate)]))
            #expect(isInvalid(error, field: "changes[1].updatedAt") && error?.message.contains("flashcard 'c2'") == true)
            #expect(await world.failure(Store.getFlashcard, RecordID(id: "c1"))?.code == .notFound)
            let deletion = SyncChange(kind: .flashcard, id: "c3", updatedAt: lastWireDate, deleted: true)
            #expect(isInvalid(await world.failure(Store.syncPush, SyncPushRequest(deviceId: "evil", changes: [deletion])), field: "changes[0].updatedAt"))
            // Within five minutes ahead a device's clock is believed; beyond, it is not.
            #expect(isInvalid(await world.failure(Store.syncPush, SyncPushRequest(deviceId: "fast", changes: [try card("c4", at: now + 301)])), field: "changes[0].updatedAt"))
            let push = try await world.call(Store.syncPush, SyncPushRequest(deviceId: "fast", changes: [try card("c4", at: now + 300)]))
            #expect(push.results.map(\.outcome) == [.applied])
            // A later edit through the API wins, with a time the wire carries.
            let edited = try await world.call(Store.updateFlashcard, FlashcardUpdate(id: "c4", back: "edited"))
            #expect(edited.updatedAt > now + 300 && edited.back == "edited")
            #expect(try await world.call(Store.syncPull, SyncPullRequest()).changes.map(\.id) == ["c4"])
        }
    }

    @Test("CSV cells a spreadsheet would run as formulas get a leading quote, and the file still parses back")
    func csvFormulas() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let hostile = ["=HYPERLINK(\"http://evil.example\",\"x\")", "+1+1", "-2+3", "@SUM(A1:A9)", "\tcmd", "\rcmd|' /C calc'!A0"]
            for (index, text) in hostile.enumerated() {
                _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: text, back: "b=\(index)", tags: ["=tag"]))
            }
            _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "plain, with = inside", back: "b"))
            let csv = try await world.call(Store.export, ExportRequest(content: .flashcards, format: .csv))
            let rows = parseCSV(try #require(csv.content))
            #expect(rows.count == hostile.count + 2 && rows.allSatisfy { $0.count == 10 })
            #expect(rows.dropFirst().map { $0[1] } == hostile.map { "'" + $0 } + ["plain, with = inside"])
            #expect(rows.dropFirst().map { $0[2] } == hostile.indices.map { "b=\($0)" } + ["b"])
            #expect(rows.dropFirst().prefix(hostile.count).allSatisfy { $0[4] == "'=tag" })
            // Dropping the quote of a cell that begins with one gets the value back.
            #expect(rows.dropFirst().prefix(hostile.count).map { String($0[1].dropFirst()) } == hostile)

            let session = try await world.call(Store.createSession, StudySessionCreate(id: "-1-cmd", startedAt: StoreWorld.start))
            let sessions = parseCSV(try #require(try await world.call(Store.export, ExportRequest(content: .studySessions, format: .csv)).content))
            #expect(sessions.dropFirst().map(\.first) == ["'" + session.id])
        }
    }
}
