import Bus
import Contracts
import Foundation
import Wire

/// What ai-gateway made of a document.
struct Enrichment: Sendable {
    var summary: String?
    var keywords: [String]
    var cards: [GeneratedFlashcard]
}

/// Asks ai-gateway for the summary, the keywords and (unless the file held cards itself, or the
/// caller said no) flashcards linked to their chunks — the three at once.
///
/// A long document is not sent whole: summary and keywords get at most `inputBytes` of text
/// (`INGEST_AI_INPUT_KB`), cards at most ``chunksPerCard`` chunks per card wanted — chunks
/// sampled evenly across the document, so the result still covers all of it while the work
/// stays bounded: the local provider ranks every sentence it is sent, and a remote model's
/// prompt would otherwise grow with the document.
struct Enricher: Sendable {
    let bus: Bus
    let summarySentences: Int
    let keywordCount: Int
    /// The most text (UTF-8 bytes) sent to `summarize` and `keywords`.
    let inputBytes: Int
    /// Chunks sent to `flashcards.generate` per card asked for (evenly spread).
    static let chunksPerCard = 4

    func enrich(_ document: ExtractedDocument, chunks: [Chunk], job: IngestJob) async throws(BusError) -> Enrichment {
        let text = document.text.count <= inputBytes
            ? document.string
            : Self.sample(chunks, bytes: inputBytes, count: .max).map(\.text).joined(separator: "\n\n")
        let options = CallOptions(user: job.user, deadline: job.wallDeadline, meta: job.meta)
        let wantsCards = job.generateFlashcards && document.cards.isEmpty
        do {
            async let summary = bus.call(AIGateway.summarize, SummarizeRequest(text: text, maxSentences: summarySentences), options: options)
            async let keywords = bus.call(AIGateway.keywords, KeywordsRequest(text: text, maxCount: keywordCount), options: options)
            async let cards = wantsCards ? generateCards(chunks, max: job.maxFlashcards, options: options) : []
            let enrichment = Enrichment(
                summary: Self.summary(try await summary.summary), keywords: Self.keywords(try await keywords.keywords.map(\.term)),
                cards: try await cards)
            return enrichment
        } catch let error as BusError {
            throw Self.explain(error)
        } catch {
            throw .internal("ai-gateway call failed: \(error)")
        }
    }

    private func generateCards(_ chunks: [Chunk], max: Int, options: CallOptions) async throws(BusError) -> [GeneratedFlashcard] {
        let selected = Self.sample(chunks, bytes: AIGatewayLimits.textBytes, count: min(AIGatewayLimits.chunks, max * Self.chunksPerCard))
        guard !selected.isEmpty else { return [] }
        let request = FlashcardsRequest(chunks: selected.map { TextChunk(id: String($0.ordinal), text: $0.text, heading: $0.section) }, maxCards: max)
        let response = try await bus.call(AIGateway.generateFlashcards, request, options: options)
        return response.cards.compactMap { card in
            guard let ordinal = Int(card.chunkId), !card.front.isEmpty, !card.back.isEmpty,
                  card.front.unicodeScalars.count <= StoreLimits.cardSideLength, card.back.unicodeScalars.count <= StoreLimits.cardSideLength
            else { return nil }
            return GeneratedFlashcard(front: card.front, back: card.back, kind: card.kind, chunkOrdinal: ordinal)
        }
    }

    /// Evenly spaced chunks within `bytes` of text and `count` chunks, in order.
    static func sample(_ chunks: [Chunk], bytes: Int, count: Int) -> [Chunk] {
        let total = chunks.reduce(0) { $0 + $1.bytes.count + 2 }
        guard total > bytes || chunks.count > count else { return chunks }
        // Rounded up, written so that `count` may be Int.max.
        let step = max((chunks.count - 1) / max(count, 1) + 1, (total - 1) / max(bytes, 1) + 1)
        var selected: [Chunk] = []
        var used = 0
        for chunk in stride(from: 0, to: chunks.count, by: step).map({ chunks[$0] }) where used + chunk.bytes.count + 2 <= bytes {
            selected.append(chunk)
            used += chunk.bytes.count + 2
        }
        return selected
    }

    /// The summary within the store's limit.
    static func summary(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed.clipped(toScalars: StoreLimits.summaryLength)
    }

    /// Keywords within the store's limits: trimmed, short enough, no duplicates.
    static func keywords(_ terms: [String]) -> [String] {
        var seen = Set<String>()
        return terms.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty && $0.unicodeScalars.count <= StoreLimits.labelLength && seen.insert($0.lowercased()).inserted }
            .prefix(StoreLimits.keywordsPerMaterial).map { $0 }
    }

    /// An ai-gateway error in words a user can act on.
    static func explain(_ error: BusError) -> BusError {
        switch error.code {
        case .unavailable, .deadlineExceeded, .resourceExhausted:
            BusError(error.code, "ai-gateway could not analyze the text right now (\(error.code.name): \(error.message)); retry later with ingest.retry")
        default:
            BusError(error.code, "ai-gateway could not analyze the text (\(error.code.name): \(error.message))")
        }
    }
}
