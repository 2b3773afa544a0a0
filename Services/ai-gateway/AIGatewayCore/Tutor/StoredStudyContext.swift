import Bus
import Contracts
import Foundation
import Wire

extension TutorStore {
    /// Of the study context's 256 KiB (``AIGatewayLimits/chatBytes``, counted as inline contexts
    /// are: chunk text plus card fronts and backs), at most this much is flashcards. Cards load
    /// first, so a long material cannot crowd them out; chunks fill what is left.
    static let cardBytes = 64 * 1024

    /// The study context from store: the material's title (else the set's name); flashcards —
    /// the set's, then the material's, in creation order, duplicates once — up to
    /// ``cardBytes``; then the material's chunks in reading order (document, then ordinal) until
    /// the context holds ``AIGatewayLimits/chatBytes``. The chunk that crosses the limit is cut
    /// there and the rest of the material is left out: the same request always gets the same
    /// context.
    /// - Throws: NOT_FOUND naming `materialId` / `setId` when the caller has no such record.
    func studyContext(materialId: String?, setId: String?) async throws(BusError) -> StudyContext {
        var title: String?
        if let materialId { title = try await fetch(Store.getMaterial, RecordID(id: materialId), field: "materialId").title }
        if let setId {
            let set = try await fetch(Store.getSet, RecordID(id: setId), field: "setId")
            title = title ?? set.name
        }
        let cards = try await flashcards(setId: setId, materialId: materialId)
        var remaining = AIGatewayLimits.chatBytes - cards.reduce(0) { $0 + $1.front.utf8.count + $1.back.utf8.count }
        var chunks: [TextChunk] = []
        if let materialId {
            try await forEachItem(Store.listChunks, field: "materialId", request: { cursor in
                ChunkList(limit: StoreLimits.maximumPageSize, cursor: cursor, materialId: materialId)
            }) { chunk in
                let text = Self.prefix(of: chunk.text, utf8Bytes: remaining)
                if !text.isEmpty { chunks.append(TextChunk(id: chunk.id, text: text)) }
                remaining -= text.utf8.count
                return text.utf8.count == chunk.text.utf8.count && remaining > 0
            }
        }
        return StudyContext(title: title, chunks: chunks, flashcards: cards)
    }

    /// The set's cards, then the material's, each once, while they fit in ``cardBytes``.
    private func flashcards(setId: String?, materialId: String?) async throws(BusError) -> [ContextFlashcard] {
        var cards: [ContextFlashcard] = []
        var seen = Set<String>()
        var bytes = 0
        let sources = [("setId", FlashcardList(setId: setId)), ("materialId", FlashcardList(materialId: materialId))]
        for (field, filter) in sources where filter.setId != nil || filter.materialId != nil {
            var full = false
            try await forEachItem(Store.listFlashcards, field: field, request: { cursor in
                var page = filter
                (page.limit, page.cursor) = (StoreLimits.maximumPageSize, cursor)
                return page
            }) { card in
                guard seen.insert(card.id).inserted else { return true }
                let size = card.front.utf8.count + card.back.utf8.count
                guard bytes + size <= Self.cardBytes else {
                    full = true
                    return false
                }
                bytes += size
                cards.append(ContextFlashcard(front: card.front, back: card.back))
                return true
            }
            if full { break }
        }
        return cards
    }

    /// The longest prefix of `text` (whole characters) of at most `utf8Bytes` bytes.
    static func prefix(of text: String, utf8Bytes: Int) -> String {
        guard text.utf8.count > utf8Bytes else { return text }
        var bytes = 0
        return String(text.prefix { character in
            bytes += character.utf8.count
            return bytes <= utf8Bytes
        })
    }
}
