import Bus
import Contracts
import Foundation
import IngestCore
import TestSupport
import Testing

/// Every format, submitted through the bus, processed by ingest with the real ai-gateway (local
/// provider) and stored by the real store.
@Suite("Each format end to end through the bus into the store", .serialized)
struct FormatEndToEndTests {
    @Test("Markdown: headings start chunks and name their sections; summary, keywords and linked cards are stored")
    func markdown() async throws {
        try await withIngest { world in
            let result = try await world.submit("notes.md", IngestSubmit(fileName: "notes.md", options: IngestOptions(maxFlashcards: 5)))
            #expect(result.material.status == .ready)
            #expect(result.material.title == "Cell Biology")  // the first heading; no title was given
            #expect(result.material.sourceKind == .md)
            #expect(result.material.summary?.isEmpty == false)
            #expect(!result.material.keywords.isEmpty)
            let chunks = try await world.chunks(result.materialId)
            #expect(chunks.count == result.outcome?.chunkCount)
            #expect(chunks.contains { $0.text.hasPrefix("Mitochondria\n\nThe mitochondria is the powerhouse") })
            #expect(chunks.contains { $0.text.hasPrefix("Chloroplasts\n\n") && $0.text.contains("# not a heading: code") })
            #expect(!chunks.contains { $0.text.contains("author: Test Author") })
            #expect(chunks.allSatisfy { !$0.text.contains("](https://") && !$0.text.contains("**") })
            let cards = try await world.flashcards(result.materialId)
            #expect(!cards.isEmpty && cards.count <= 5)
            #expect(cards.allSatisfy { card in chunks.contains { $0.id == card.chunkId } })
            #expect(cards.allSatisfy { $0.setId == result.outcome?.setId })
            let ingested = try await world.storeEvents(Store.materialIngested)
            #expect(ingested.map(\.material.id) == [result.materialId])
        }
    }

    @Test("TXT: paragraphs become chunks with offsets into the document's text")
    func plainText() async throws {
        try await withIngest { world in
            let result = try await world.submit("notes.txt", IngestSubmit(fileName: "notes.txt", title: "Revolution", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.title == "Revolution")
            #expect(result.outcome?.flashcardIds == [])
            let chunks = try await world.chunks(result.materialId)
            let text = String(decoding: try Fixture.data("notes.txt"), as: UTF8.self)
            #expect(chunks.first?.startOffset == 0)
            #expect(chunks.allSatisfy { text.contains($0.text) })
            #expect(chunks.map(\.text).joined(separator: " ").contains("The storming of the Bastille followed on 14 July."))
        }
    }

    @Test("TXT in UTF-16 with a byte order mark and in Latin-1 is read correctly")
    func encodings() async throws {
        try await withIngest { world in
            for name in ["utf16.txt", "latin1.txt"] {
                let result = try await world.submit(name)
                let text = try await world.chunks(result.materialId).map(\.text).joined(separator: "\n\n")
                #expect(text.contains("Perché la città è così bella?"), "\(name): \(text)")
                #expect(text.contains("L'università di Bologna è la più antica d'Europa."), "\(name)")
            }
        }
    }

    @Test("HTML: text without markup, scripts or styles; headings kept; the title is the page's")
    func html() async throws {
        try await withIngest { world in
            let result = try await world.submit("page.html")
            #expect(result.material.title == "Plant Cells & Tissues")
            let chunks = try await world.chunks(result.materialId)
            let text = chunks.map(\.text).joined(separator: "\n\n")
            #expect(text.contains("Plant cells have a cell wall made of cellulose. The wall gives the cell its shape — and protects it."))
            #expect(text.contains("The central vacuole stores water & nutrients.\nIt keeps the cell firm."))
            #expect(chunks.contains { $0.text.hasPrefix("Vacuoles") })
            #expect(!text.contains("secret") && !text.contains("color: red") && !text.contains("<") && !text.contains("comment"))
        }
    }

    @Test("PDF: text per page with page numbers")
    func pdf() async throws {
        try await withIngest { world in
            let result = try await world.submit("lecture.pdf")
            #expect(result.material.sourceKind == .pdf)
            let chunks = try await world.chunks(result.materialId)
            #expect(Set(chunks.compactMap(\.pageNumber)) == [1, 2, 3])
            #expect(chunks.first { $0.pageNumber == 2 }?.text.contains("The mitochondria releases the energy stored in glucose.") == true)
            let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(result.outcome?.sourceDocumentId)))
            #expect(document.pageCount == 3)
        }
    }
}
