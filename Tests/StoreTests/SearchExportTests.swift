import Bus
import Contracts
import Foundation
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("Search and export")
struct SearchExportTests {
    @Test("search ranks by bm25, highlights matches in snippets, matches stems and prefixes")
    func ranking() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let put = try await world.call(Store.putMaterial, samplePut(cards: 0))
            // Two mentions of "light" in a short card outrank one mention in a longer chunk.
            let card = try await world.call(Store.createFlashcard, FlashcardCreate(front: "What does light do?", back: "Light drives photosynthesis."))
            let response = try await world.call(Store.search, SearchRequest(query: "light"))
            #expect(response.hits.first?.id == card.id && response.hits.first?.kind == .flashcard)
            #expect(Set(response.hits.map(\.id)) == [card.id, put.chunkIds[0], put.chunkIds[2]])
            #expect(zip(response.hits, response.hits.dropFirst()).allSatisfy { $0.score >= $1.score })
            let chunkHit = try #require(response.hits.first { $0.id == put.chunkIds[2] })
            #expect(chunkHit.snippet.contains("<mark>light</mark>") && chunkHit.title == "Biology notes" && chunkHit.pageNumber == 1)
            #expect(chunkHit.materialId == put.material.id)
            // Stemming: "absorbing" finds "absorbs"; a prefix with *; custom markers.
            let stemmed = try await world.call(Store.search, SearchRequest(query: "absorbing", highlightOpen: "[", highlightClose: "]"))
            #expect(stemmed.hits.map(\.id) == [put.chunkIds[2]] && stemmed.hits[0].snippet.contains("[absorbs]"))
            #expect(try await world.call(Store.search, SearchRequest(query: "mitochon*")).hits.map(\.id) == [put.chunkIds[1]])
            // Every word must match; a quoted phrase must match as a phrase.
            #expect(try await world.call(Store.search, SearchRequest(query: "light glucose")).hits.map(\.id) == [put.chunkIds[0]])
            #expect(try await world.call(Store.search, SearchRequest(query: "\"red wavelengths\"")).hits.map(\.id) == [put.chunkIds[2]])
            #expect(try await world.call(Store.search, SearchRequest(query: "\"wavelengths red\"")).hits.isEmpty)
            // FTS5 syntax in the query is just text.
            #expect(try await world.call(Store.search, SearchRequest(query: "light AND NOT OR (")).hits.isEmpty)
            #expect(await world.failure(Store.search, SearchRequest(query: " ** () "))?.code == .invalidArgument)
        }
    }

    @Test("a snippet is the window of 16 tokens with the most query words, highlighted, with … where text was left out")
    func snippets() async throws {
        try await withWorld(StoreWorld.start()) { world in
            var words = (1...40).map { "w\($0)" }
            words[4] = "alpha"
            words[29] = "alpha"
            words[31] = "beta"
            var put = samplePut(cards: 0)
            put.chunks.append(ChunkInput(ordinal: 3, text: words.joined(separator: " ") + "."))
            let result = try await world.call(Store.putMaterial, put)
            let both = try await world.call(Store.search, SearchRequest(query: "alpha beta")).hits
            #expect(both.map(\.id) == [result.chunkIds[3]])
            #expect(both.first?.snippet == "…w28 w29 <mark>alpha</mark> w31 <mark>beta</mark> w33 w34 w35 w36 w37 w38 w39 w40.")
            let first = try await world.call(Store.search, SearchRequest(query: "alpha")).hits
            #expect(first.first?.snippet == "…w3 w4 <mark>alpha</mark> w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18…")
            let phrase = try await world.call(Store.search, SearchRequest(query: "\"red wavelengths\"")).hits
            #expect(phrase.first?.snippet == "…blue and <mark>red wavelengths</mark>.")
        }
    }

    @Test("search filters by kind, subject and material, pages, and follows edits and deletes")
    func filtersAndUpdates() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let biology = try await world.call(Store.createSubject, SubjectCreate(name: "Biology"))
            let put = try await world.call(Store.putMaterial, samplePut(cards: 0))
            let question = try await world.call(Store.createQuestion, QuestionCreate(text: "Which light bulbs?", category: "house"))
            let note = try await world.call(Store.createNote, NoteCreate(questionId: question.id, answer: "LED light everywhere"))
            let card = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Light?", back: "Energy", subjectId: biology.id))
            #expect(try await world.call(Store.search, SearchRequest(query: "light", kinds: [.note])).hits.map(\.id) == [note.id])
            let noteHit = try await world.call(Store.search, SearchRequest(query: "bulbs")).hits
            #expect(noteHit.map(\.questionId) == [question.id])
            #expect(try await world.call(Store.search, SearchRequest(query: "light", subjectId: biology.id)).hits.map(\.id) == [card.id])
            // Moving the material to the subject moves its chunks into the subject's results.
            _ = try await world.call(Store.updateMaterial, MaterialUpdate(id: put.material.id, subjectId: biology.id))
            #expect(try await world.call(Store.search, SearchRequest(query: "light", subjectId: biology.id)).hits.count == 3)
            #expect(try await world.call(Store.search, SearchRequest(query: "light", materialId: put.material.id)).hits.count == 2)
            // Pages.
            let first = try await world.call(Store.search, SearchRequest(query: "light", limit: 2))
            let second = try await world.call(Store.search, SearchRequest(query: "light", limit: 2, cursor: first.nextCursor))
            #expect(first.hits.count == 2 && second.hits.count == 2 && second.nextCursor == nil)
            #expect(Set((first.hits + second.hits).map(\.id)).count == 4)
            // Edits and deletes reach the index.
            _ = try await world.call(Store.updateFlashcard, FlashcardUpdate(id: card.id, front: "Dark?"))
            _ = try await world.call(Store.deleteNote, RecordID(id: note.id))
            #expect(try await world.call(Store.search, SearchRequest(query: "light")).hits.map(\.id).sorted() == [put.chunkIds[0], put.chunkIds[2]].sorted())
            _ = try await world.call(Store.updateQuestion, QuestionUpdate(id: question.id, text: "Which lamps?"))
        }
    }

    @Test("a word in more than 1,000 entries ranks the newest 1,000 of them; rarer words rank every match")
    func boundedRanking() async throws {
        try await withWorld(StoreWorld.start()) { world in
            var put = samplePut(cards: 0)
            // The oldest chunk mentions the common word most, but is not among the newest 1,000 matches.
            put.chunks = (0..<1_100).map { ChunkInput(ordinal: $0, text: $0 == 0 ? "common common common rare" : "common filler \($0)") }
            let result = try await world.call(Store.putMaterial, put)
            let common = try await world.call(Store.search, SearchRequest(query: "common", limit: 100))
            #expect(common.hits.count == 100 && !common.hits.contains { $0.id == result.chunkIds[0] })
            #expect(try await world.call(Store.search, SearchRequest(query: "rare")).hits.map(\.id) == [result.chunkIds[0]])
        }
    }

    @Test("flashcards export as JSON, CSV and Anki text that parse back to the same cards")
    func exportFormats() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let set = try await world.call(Store.createSet, FlashcardSetCreate(name: "Tricky deck"))
            let cards = [
                try await world.call(Store.createFlashcard, FlashcardCreate(front: "Plain", back: "card", tags: ["a", "two words"], setId: set.id)),
                try await world.call(Store.createFlashcard, FlashcardCreate(front: "Comma, \"quote\"", back: "tab\there\nnew line", setId: set.id)),
                // Anki skips a line that starts with '#' as a header: the front is quoted.
                try await world.call(Store.createFlashcard, FlashcardCreate(front: "#1 rule", back: "# not a header", setId: set.id)),
            ]
            _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Not in the set", back: "x"))

            let json = try await world.call(Store.export, ExportRequest(content: .flashcards, format: .json, setId: set.id))
            #expect(json.itemCount == 3 && !json.inAttachment && json.contentType.hasPrefix("application/json"))
            #expect(try WireCoding.decode([Flashcard].self, from: Data(try #require(json.content).utf8)) == cards)

            let csv = try await world.call(Store.export, ExportRequest(content: .flashcards, format: .csv, setId: set.id))
            let rows = parseCSV(try #require(csv.content))
            #expect(rows.first == ["id", "front", "back", "kind", "tags", "setId", "materialId", "subjectId", "createdAt", "updatedAt"])
            #expect(rows.dropFirst().map { [$0[0], $0[1], $0[2], $0[4]] } == cards.map { [$0.id, $0.front, $0.back, $0.tags.joined(separator: ";")] })

            let anki = try await world.call(Store.export, ExportRequest(content: .flashcards, format: .anki, setId: set.id))
            let text = try #require(anki.content)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(Array(lines.prefix(4)) == ["#separator:tab", "#html:false", "#deck:Tricky deck", "#tags column:3"])
            let records = parseDelimited(String(lines.dropFirst(4).joined(separator: "\n")), separator: "\t", lineEnd: "\n")
            #expect(records == [["Plain", "card", "a two_words"], ["Comma, \"quote\"", "tab\there\nnew line", ""], ["#1 rule", "# not a header", ""]])
            #expect(lines.dropFirst(4).allSatisfy { !$0.hasPrefix("#") })
            #expect(await world.failure(Store.export, ExportRequest(content: .studySessions, format: .anki))?.code == .invalidArgument)
        }
    }

    @Test("the Anki text export imported by Anki itself: every card, a front starting with # too, with its tags and deck")
    func ankiImportsTheExport() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let set = try await world.call(Store.createSet, FlashcardSetCreate(name: "Tricky deck"))
            let cards = [
                ("Plain", "card", ["a", "two words"]), ("Comma, \"quote\"", "tab\there\nnew line", []), ("#1 rule", "# not a header", ["hash"]),
                ("<b>not bold</b> & co", "ünïcode ✓ 日本語", []),
            ]
            for (front, back, tags) in cards {
                _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: front, back: back, tags: tags, setId: set.id))
            }
            let export = try await world.call(Store.export, ExportRequest(content: .flashcards, format: .anki, setId: set.id))
            let file = try temporaryDirectory().appending(path: "deck.txt")
            try Data(try #require(export.content).utf8).write(to: file)
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "anki_import.py").path
            let imported = try JSONValue.parse(try await runPython([script, file.path]))
            let notes = try #require(imported.objectValue?["notes"]?.arrayValue)
            #expect(notes.count == cards.count)
            for (note, card) in zip(notes, cards) {
                #expect(note.objectValue?["fields"] == .array([.string(card.0), .string(card.1)]))
                #expect(note.objectValue?["tags"] == .array(card.2.map { .string($0.replacingOccurrences(of: " ", with: "_")) }))
                #expect(note.objectValue?["deck"] == .string("Tricky deck"))
            }
        }
    }

    @Test("a large export comes in the attachment frame; study sessions export as JSON")
    func largeExport() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let long = String(repeating: "x", count: 9_000)
            for index in 0..<10 { _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Card \(index)", back: long)) }
            let (result, attachment) = try await world.client.callWithAttachment(
                Store.export, ExportRequest(content: .flashcards, format: .csv), options: CallOptions(user: "alice"))
            #expect(result.inAttachment && result.content == nil && attachment?.count == result.byteCount && result.byteCount > 64 * 1024)
            #expect(parseCSV(String(decoding: try #require(attachment), as: UTF8.self)).count == 11)

            let session = try await world.call(Store.createSession, StudySessionCreate(startedAt: StoreWorld.start, endedAt: StoreWorld.start.addingTimeInterval(600), cardsReviewed: 12))
            let sessions = try await world.call(Store.export, ExportRequest(content: .studySessions, format: .json))
            #expect(try WireCoding.decode([StudySession].self, from: Data(try #require(sessions.content).utf8)) == [session])
            #expect(try await world.call(Store.export, ExportRequest(content: .studySessions, format: .json), as: "bob").itemCount == 0)
        }
    }
}

/// RFC 4180 CSV with CRLF line ends.
func parseCSV(_ text: String) -> [[String]] { parseDelimited(text, separator: ",", lineEnd: "\r\n") }

/// Fields separated by `separator`, records by `lineEnd`; a field in double quotes may hold
/// either, with `""` for a quote.
func parseDelimited(_ text: String, separator: Character, lineEnd: String) -> [[String]] {
    var records: [[String]] = []
    var record: [String] = []
    var field = ""
    var quoted = false
    var index = text.startIndex
    while index < text.endIndex {
        let character = text[index]
        if quoted {
            if character == "\"" {
                let next = text.index(after: index)
                if next < text.endIndex && text[next] == "\"" {
                    field.append("\"")
                    index = next
                } else {
                    quoted = false
                }
            } else {
                field.append(character)
            }
        } else if character == "\"" && field.isEmpty {
            quoted = true
        } else if character == separator {
            record.append(field)
            field = ""
        } else if text[index...].hasPrefix(lineEnd) {
            record.append(field)
            records.append(record)
            record = []
            field = ""
            index = text.index(index, offsetBy: lineEnd.count - 1)
        } else {
            field.append(character)
        }
        index = text.index(after: index)
    }
    if !field.isEmpty || !record.isEmpty { records.append(record + [field]) }
    return records
}
