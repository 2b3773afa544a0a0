import Foundation
import Wire

// Payloads of ai-gateway's text methods: `summarize`, `keywords`, `flashcards.generate`.

/// `summarize` request.
public struct SummarizeRequest: Codable, Sendable, Equatable {
    /// The text, ≤ 2 MiB.
    public var text: String
    /// 1...20; default 3.
    public var maxSentences: Int?
    /// Use only this provider (`local`, `openai`, `gemini`), no fallback; default: the method's route.
    public var provider: String?

    public init(text: String, maxSentences: Int? = nil, provider: String? = nil) {
        self.text = text
        self.maxSentences = maxSentences
        self.provider = provider
    }
}

/// `summarize` response.
public struct SummarizeResponse: Codable, Sendable, Equatable {
    /// The sentences joined by spaces.
    public var summary: String
    /// The chosen sentences in the order of the text.
    public var sentences: [String]
    public var generation: GenerationInfo

    public init(summary: String, sentences: [String], generation: GenerationInfo) {
        self.summary = summary
        self.sentences = sentences
        self.generation = generation
    }
}

/// `keywords` request.
public struct KeywordsRequest: Codable, Sendable, Equatable {
    /// The text, ≤ 2 MiB.
    public var text: String
    /// 1...50; default 10.
    public var maxCount: Int?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(text: String, maxCount: Int? = nil, provider: String? = nil) {
        self.text = text
        self.maxCount = maxCount
        self.provider = provider
    }
}

/// One key term.
public struct Keyword: Codable, Sendable, Equatable {
    /// The term as it appears in the text (lower case unless written as a name or acronym).
    public var term: String
    /// Relevance in (0, 1]; the best term has 1.
    public var score: Double

    public init(term: String, score: Double) {
        self.term = term
        self.score = score
    }
}

/// `keywords` response.
public struct KeywordsResponse: Codable, Sendable, Equatable {
    /// Best first.
    public var keywords: [Keyword]
    public var generation: GenerationInfo

    public init(keywords: [Keyword], generation: GenerationInfo) {
        self.keywords = keywords
        self.generation = generation
    }
}

/// `flashcards.generate` request.
public struct FlashcardsRequest: Codable, Sendable, Equatable {
    /// 1...2000 chunks, ≤ 2 MiB of text in all; ids must be unique.
    public var chunks: [TextChunk]
    /// 1...500; default 50.
    public var maxCards: Int?
    /// 1...20; default 5.
    public var maxCardsPerChunk: Int?
    /// Only these kinds; default all.
    public var kinds: [FlashcardKind]?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(chunks: [TextChunk], maxCards: Int? = nil, maxCardsPerChunk: Int? = nil, kinds: [FlashcardKind]? = nil, provider: String? = nil) {
        self.chunks = chunks
        self.maxCards = maxCards
        self.maxCardsPerChunk = maxCardsPerChunk
        self.kinds = kinds
        self.provider = provider
    }
}

/// One generated card; store keeps it, linked to its chunk.
public struct GeneratedCard: Codable, Sendable, Equatable {
    /// The id of the chunk the card was made from.
    public var chunkId: String
    public var kind: FlashcardKind
    public var front: String
    public var back: String

    public init(chunkId: String, kind: FlashcardKind, front: String, back: String) {
        self.chunkId = chunkId
        self.kind = kind
        self.front = front
        self.back = back
    }
}

/// `flashcards.generate` response.
public struct FlashcardsResponse: Codable, Sendable, Equatable {
    /// In the order of the chunks.
    public var cards: [GeneratedCard]
    public var generation: GenerationInfo

    public init(cards: [GeneratedCard], generation: GenerationInfo) {
        self.cards = cards
        self.generation = generation
    }
}
