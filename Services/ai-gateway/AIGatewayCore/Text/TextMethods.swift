import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `summarize`, `keywords` and `flashcards.generate`: study text along each method's route, the
/// local provider's algorithms when it comes to `local`.
struct TextMethods: Sendable {
    let dispatcher: Dispatcher

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.summarize) { service, request, context in try await service.text.summarize(request, context) }
        handlers.handle(AIGateway.keywords) { service, request, context in try await service.text.keywords(request, context) }
        handlers.handle(AIGateway.generateFlashcards) { service, request, context in try await service.text.flashcards(request, context) }
    }

    func summarize(_ request: SummarizeRequest, _ context: RequestContext) async throws -> SummarizeResponse {
        let scope = try CallScope(context)
        try Self.studyText(request.text, "text")
        let count = try Field.int(request.maxSentences, "maxSentences", in: 1...20, default: 3)
        let text = request.text
        let (sentences, generation) = try await dispatcher.run(
            .summarize, pinned: request.provider, scope: scope, cacheInput: "summarize\n\(count)\n" + text,
            local: { Summarizer.summarize(text, maxSentences: count) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.summarize(text, maxSentences: count), timeout: timeout)
                return (try Prompts.sentences(completion.text, maxSentences: count), completion.usage)
            })
        return SummarizeResponse(summary: sentences.joined(separator: " "), sentences: sentences, generation: generation)
    }

    func keywords(_ request: KeywordsRequest, _ context: RequestContext) async throws -> KeywordsResponse {
        let scope = try CallScope(context)
        try Self.studyText(request.text, "text")
        let count = try Field.int(request.maxCount, "maxCount", in: 1...50, default: 10)
        let text = request.text
        let (keywords, generation) = try await dispatcher.run(
            .keywords, pinned: request.provider, scope: scope, cacheInput: "keywords\n\(count)\n" + text,
            local: { LocalText.keywords(text, maxCount: count) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.keywords(text, maxCount: count), timeout: timeout)
                return (try Prompts.keywordList(completion.text, maxCount: count), completion.usage)
            })
        return KeywordsResponse(keywords: keywords, generation: generation)
    }

    func flashcards(_ request: FlashcardsRequest, _ context: RequestContext) async throws -> FlashcardsResponse {
        let scope = try CallScope(context)
        try Self.chunks(request.chunks)
        let maxCards = try Field.int(request.maxCards, "maxCards", in: 1...500, default: 50)
        let perChunk = try Field.int(request.maxCardsPerChunk, "maxCardsPerChunk", in: 1...20, default: 5)
        let kinds = Set(request.kinds ?? FlashcardKind.allCases)
        guard !kinds.isEmpty else { throw Field.invalid("kinds", "must name at least one kind (qa, cloze, definition) when given") }
        var keyed = request
        keyed.provider = nil
        let chunks = request.chunks
        let (cards, generation) = try await dispatcher.run(
            .flashcards, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.flashcards, keyed),
            local: { LocalText.flashcards(chunks, maxCards: maxCards, maxCardsPerChunk: perChunk, kinds: kinds) },
            remote: { provider, timeout throws(ProviderError) in
                let prompt = Prompts.flashcards(chunks, maxCards: maxCards, maxPerChunk: perChunk, kinds: kinds)
                let completion = try await provider.complete(prompt, timeout: timeout)
                return (try Prompts.flashcardList(completion.text, chunks: chunks, maxCards: maxCards, maxPerChunk: perChunk, kinds: kinds), completion.usage)
            })
        return FlashcardsResponse(cards: cards, generation: generation)
    }

    /// A text of at most ``AIGatewayLimits/textBytes`` bytes of UTF-8 with a visible character.
    static func studyText(_ text: String, _ name: String) throws(BusError) {
        try Field.bytes(text, name, maximum: AIGatewayLimits.textBytes)
        guard text.contains(where: { !$0.isWhitespace }) else { throw Field.invalid(name, "must not be empty") }
    }

    /// 1 to ``AIGatewayLimits/chunks`` chunks with ids of their own and at most
    /// ``AIGatewayLimits/textBytes`` bytes of text and headings in all.
    static func chunks(_ chunks: [TextChunk]) throws(BusError) {
        try Field.count(chunks, "chunks", in: 1...AIGatewayLimits.chunks)
        var ids = Set<String>()
        var total = 0
        for (index, chunk) in chunks.enumerated() {
            guard !chunk.id.isEmpty else { throw Field.invalid("chunks[\(index)].id", "must not be empty") }
            guard ids.insert(chunk.id).inserted else { throw Field.invalid("chunks[\(index)].id", "must be unique, got '\(chunk.id)' again") }
            total += chunk.text.utf8.count + (chunk.heading?.utf8.count ?? 0)
        }
        guard total <= AIGatewayLimits.textBytes else {
            throw Field.invalid("chunks", "must hold at most \(AIGatewayLimits.textBytes) bytes of text in all, got \(total)")
        }
    }
}
