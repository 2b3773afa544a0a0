import Bus
import Contracts
import Foundation
import TestSupport
import Wire
import Testing

@Suite("A material's whole text from the store, rebuilt from ingest's overlapping chunks")
struct MaterialTextTests {
    @Test("materials.text of an uploaded text is that text, though its chunks overlap")
    func wholeTextRoundTrip() async throws {
        try await withIngest { world in
            let paragraphs = (1...40).map { index in
                "Paragraph \(index) tells how cell number \(index) divides, grows and ends — ünïcode \(index) included."
            }
            let text = paragraphs.joined(separator: "\n\n")
            let result = try await world.submit(data: Data(text.utf8), IngestSubmit(fileName: "cells.txt"))
            let chunks = try await world.chunks(result.materialId)
            #expect(chunks.count > 2)
            #expect(zip(chunks, chunks.dropFirst()).contains { $0.endOffset > $1.startOffset }, "the chunks overlap")
            let whole = try await world.client.call(Store.materialText, RecordID(id: result.materialId), options: CallOptions(user: "alice"))
            #expect(whole.text == text)
            #expect(whole.characterCount == text.unicodeScalars.count && whole.documentCount == 1)
            // Another user's material is not found.
            let refused = await #expect(throws: BusError.self) {
                try await world.client.call(Store.materialText, RecordID(id: result.materialId), options: CallOptions(user: "bob"))
            }
            #expect(refused?.code == .notFound)
        }
    }
}
