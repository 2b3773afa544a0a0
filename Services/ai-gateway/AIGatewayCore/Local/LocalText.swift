import Contracts

/// The local provider's text methods, callable directly (the gateway, tests and the benchmark):
/// no network, no model, deterministic.
public enum LocalText {
    /// The `maxSentences` most central sentences of `text` (TextRank), in text order.
    public static func summarize(_ text: String, maxSentences: Int) -> [String] {
        Summarizer.summarize(text, maxSentences: maxSentences)
    }

    /// The `maxCount` key terms of `text` (YAKE), best first, scored in (0, 1].
    public static func keywords(_ text: String, maxCount: Int) -> [Keyword] {
        KeywordExtractor.keywords(TextDocument(text), maxCount: maxCount).map { Keyword(term: $0.term, score: $0.score) }
    }

    /// Flashcards from `chunks`: definitions, questions and cloze cards, each naming its chunk.
    public static func flashcards(
        _ chunks: [TextChunk], maxCards: Int, maxCardsPerChunk: Int, kinds: Set<FlashcardKind> = Set(FlashcardKind.allCases)
    ) -> [GeneratedCard] {
        FlashcardGenerator(chunks: chunks).generate(.init(maxCards: maxCards, maxCardsPerChunk: maxCardsPerChunk, kinds: kinds))
    }
}
