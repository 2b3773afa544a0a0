import Contracts
import Foundation

/// The tutor without a model: it says so plainly, then answers from the study context it was
/// given — the sentences and flashcards that best match the question (BM25 over sentences; the
/// previous user message counts half, so "and why?" still finds its topic).
enum ExtractiveTutor {
    static let noModel = "No language model is configured on this server, so I'm answering from your study material only."

    static func answer(messages: [ChatMessage], context: StudyContext?) -> String {
        let userTurns = messages.filter { $0.role == .user }.map(\.content)
        guard let question = userTurns.last else { return noModel }
        let chunks = context?.chunks ?? []
        let flashcards = context?.flashcards ?? []
        guard !chunks.isEmpty || !flashcards.isEmpty else {
            return "No language model is configured on this server, so I can't answer open questions myself. "
                + "Share study material or a flashcard set in this conversation and I'll point you to the parts that answer your question. "
                + "(An administrator can connect a model; see the ai-gateway documentation.)"
        }
        var weights: [String: Double] = [:]
        if userTurns.count >= 2 {
            for word in queryWords(userTurns[userTurns.count - 2]) { weights[word] = 0.5 }
        }
        for word in queryWords(question) { weights[word] = 1 }
        let sentences = bestSentences(chunks, weights: weights, limit: 3)
        let cards = bestFlashcards(flashcards, weights: weights, limit: 2)
        guard !sentences.isEmpty || !cards.isEmpty else {
            let topic = queryWords(question).prefix(4).joined(separator: " ")
            return "No language model is configured on this server, and I couldn't find anything about “\(topic)” in the material you shared. "
                + "Try asking with words from your notes."
        }
        var answer = noModel
        if !sentences.isEmpty {
            answer += "\n\nHere is what your material says:\n" + sentences.map { "• " + $0 }.joined(separator: "\n")
        }
        if !cards.isEmpty {
            answer += "\n\nFrom your flashcards:\n" + cards.map { "• \($0.front) — \($0.back)" }.joined(separator: "\n")
        }
        return answer
    }

    /// The question's content words, stemmed.
    private static func queryWords(_ text: String) -> [String] {
        CommandText.words(text).filter { !Stopwords.contains($0) && $0.count > 1 }.map(Stemmer.stem)
    }

    private static func bestSentences(_ chunks: [TextChunk], weights: [String: Double], limit: Int) -> [String] {
        let document = TextDocument(chunks.map(\.text).joined(separator: "\n\n"))
        let sentences = document.sentences.indices.filter { document.sentences[$0].kind != .heading }
        guard !sentences.isEmpty else { return [] }
        var queryStems: [Int32: Double] = [:]
        for (word, weight) in weights {
            if let id = document.vocabulary.stemID(word) { queryStems[id] = weight }
        }
        guard !queryStems.isEmpty else { return [] }
        // BM25 (k1 = 1.2, b = 0.75) with sentences as documents.
        var frequency: [Int32: Int] = [:]
        var perSentence: [[Int32: Int]] = []
        var totalLength = 0
        for index in sentences {
            var counts: [Int32: Int] = [:]
            for token in document.tokens[document.sentences[index].tokenRange] {
                let stem = document.stem(token)
                if queryStems[stem] != nil { counts[stem, default: 0] += 1 }
            }
            for stem in counts.keys { frequency[stem, default: 0] += 1 }
            perSentence.append(counts)
            totalLength += document.sentences[index].tokenCount
        }
        let n = Double(sentences.count)
        let averageLength = Double(totalLength) / n
        var scored: [(score: Double, index: Int)] = []
        for (position, index) in sentences.enumerated() where !perSentence[position].isEmpty {
            let length = Double(document.sentences[index].tokenCount)
            var score = 0.0
            for (stem, tf) in perSentence[position] {
                let df = Double(frequency[stem] ?? 0)
                let idf = log(1 + (n - df + 0.5) / (df + 0.5))
                score += (queryStems[stem] ?? 0) * idf * Double(tf) * 2.2 / (Double(tf) + 1.2 * (0.25 + 0.75 * length / averageLength))
            }
            scored.append((score, index))
        }
        let best = scored.sorted { $0.score > $1.score }.prefix(limit).map(\.index).sorted()
        return best.map { document.text(of: document.sentences[$0]) }
    }

    private static func bestFlashcards(_ cards: [ContextFlashcard], weights: [String: Double], limit: Int) -> [ContextFlashcard] {
        let scored = cards.map { card -> (Double, ContextFlashcard) in
            let words = Set(queryWords(card.front + " " + card.back))
            return (weights.reduce(0) { $0 + (words.contains($1.key) ? $1.value : 0) }, card)
        }
        return scored.filter { $0.0 >= 1 }.sorted { $0.0 > $1.0 }.prefix(limit).map(\.1)
    }
}
