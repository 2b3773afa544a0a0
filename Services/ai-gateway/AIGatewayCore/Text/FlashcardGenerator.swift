import Contracts
import Foundation

/// Flashcards from study text without a model: definitions ("Photosynthesis is the process…",
/// glossary lines "Term: meaning"), questions from "… is called X" and "… because …"
/// sentences and from headings (answered by the section's most central sentences), and cloze
/// cards that blank out the text's key terms. Every card names the chunk it came from.
///
/// All chunks are read as one document (so key terms are those of the whole material), each
/// sentence at most one card, the best cards first within the limits, then in text order.
struct FlashcardGenerator {
    struct Limits {
        var maxCards: Int
        var maxCardsPerChunk: Int
        var kinds: Set<FlashcardKind>
    }

    private struct Candidate {
        var chunk: Int
        var sentence: Int
        var card: GeneratedCard
        /// Higher is better: definitions 3, questions 2–2.8, cloze 1–2.
        var quality: Double
    }

    let chunks: [TextChunk]
    let document: TextDocument
    /// Start byte of each chunk in the joined text.
    private let chunkStarts: [Int32]
    /// Words the text also writes in lower case somewhere (so a capital is only the sentence's).
    private let writtenLowercase: [Bool]

    init(chunks: [TextChunk]) {
        self.chunks = chunks
        var joined = ""
        var starts: [Int32] = []
        for chunk in chunks {
            starts.append(Int32(joined.utf8.count))
            if let heading = chunk.heading?.trimmingCharacters(in: .whitespacesAndNewlines), !heading.isEmpty,
               !chunk.text.hasPrefix(heading + "\n"), !chunk.text.hasPrefix("# " + heading) {
                joined += "# " + heading.replacingOccurrences(of: "\n", with: " ") + "\n\n"
            }
            joined += chunk.text
            joined += "\n\n"
        }
        chunkStarts = starts
        document = TextDocument(joined)
        var lowercase = [Bool](repeating: false, count: document.vocabulary.words.count)
        for token in document.tokens where !token.flags.contains(.capitalized) { lowercase[Int(token.word)] = true }
        writtenLowercase = lowercase
    }

    func generate(_ limits: Limits) -> [GeneratedCard] {
        var candidates: [Candidate] = []
        let sentences = document.sentences
        if limits.kinds.contains(.qa) { candidates += headingQuestions() }
        var keyTerms: [KeywordExtractor.Candidate] = []
        if limits.kinds.contains(.cloze) {
            keyTerms = KeywordExtractor.keywords(document, maxCount: min(300, limits.maxCards * 2 + 10)).filter { $0.score >= 0.1 }
        }
        let termIndex = Dictionary(grouping: keyTerms.indices, by: { keyTerms[$0].stems[0] })
        for index in sentences.indices where sentences[index].kind != .heading {
            let chunk = chunkIndex(of: sentences[index])
            if let card = definition(index) ?? glossary(index), limits.kinds.contains(.definition) {
                candidates.append(Candidate(chunk: chunk, sentence: index, card: card.with(chunkId: chunks[chunk].id), quality: 3))
            } else if let card = calledQuestion(index), limits.kinds.contains(.qa) {
                candidates.append(Candidate(chunk: chunk, sentence: index, card: card.with(chunkId: chunks[chunk].id), quality: 2.8))
            } else if let card = becauseQuestion(index), limits.kinds.contains(.qa) {
                candidates.append(Candidate(chunk: chunk, sentence: index, card: card.with(chunkId: chunks[chunk].id), quality: 2.5))
            } else if !keyTerms.isEmpty, let (card, score) = cloze(index, terms: keyTerms, index: termIndex) {
                candidates.append(Candidate(chunk: chunk, sentence: index, card: card.with(chunkId: chunks[chunk].id), quality: 1 + score))
            }
        }
        return select(candidates, limits)
    }

    private func select(_ candidates: [Candidate], _ limits: Limits) -> [GeneratedCard] {
        let ranked = candidates.sorted { ($0.quality, -$0.sentence) > ($1.quality, -$1.sentence) }
        var perChunk = [Int](repeating: 0, count: chunks.count)
        var fronts = Set<String>()
        var usedSentences = Set<Int>()
        var chosen: [Candidate] = []
        for candidate in ranked where chosen.count < limits.maxCards {
            guard perChunk[candidate.chunk] < limits.maxCardsPerChunk, !usedSentences.contains(candidate.sentence),
                  fronts.insert(candidate.card.front.lowercased()).inserted
            else { continue }
            perChunk[candidate.chunk] += 1
            usedSentences.insert(candidate.sentence)
            chosen.append(candidate)
        }
        return chosen.sorted { ($0.chunk, $0.sentence) < ($1.chunk, $1.sentence) }.map(\.card)
    }

    private func chunkIndex(of sentence: TextDocument.Sentence) -> Int {
        var low = 0, high = chunkStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if chunkStarts[middle] <= sentence.start { low = middle } else { high = middle - 1 }
        }
        return low
    }

    // MARK: Patterns

    private func words(_ index: Int) -> (tokens: ArraySlice<TextDocument.Token>, words: [String]) {
        let slice = document.tokens[document.sentences[index].tokenRange]
        return (slice, slice.map { document.word($0) })
    }

    private static let articles: Set<String> = ["a", "an", "the"]
    private static let definitionOpeners: Set<String> = ["a", "an", "the", "one", "any"]
    private static let vagueHeads: Set<String> = ["good", "great", "bad", "lot", "bit", "big", "small", "nice", "fun", "huge", "very", "really", "new"]

    /// "X is/are a|an|the Y", "X refers to Y", "X means Y", "X is defined as Y" -> definition.
    private func definition(_ index: Int) -> GeneratedCard? {
        let (tokens, words) = words(index)
        guard words.count >= 5 else { return nil }
        for verb in 1..<min(8, words.count - 3) {
            let definitionStart: Int
            switch words[verb] {
            case "is", "are":
                if Self.definitionOpeners.contains(words[verb + 1]), !Self.vagueHeads.contains(words[verb + 2]) {
                    definitionStart = verb + 1
                } else if words[verb + 1] == "defined", words[verb + 2] == "as" {
                    definitionStart = verb + 3
                } else {
                    continue
                }
            case "refers", "refer":
                guard words[verb + 1] == "to" else { continue }
                definitionStart = verb + 2
            case "means", "denotes", "describes":
                definitionStart = verb + 1
            default:
                continue
            }
            guard let subject = subject(tokens: tokens, words: words, end: verb, maxWords: 6),
                  words.count - definitionStart >= 3 else { return nil }
            let back = sentenceCase(document.text(tokens: absolute(tokens, definitionStart..<words.count)) + tailPunctuation(index))
            return GeneratedCard(chunkId: "", kind: .definition, front: sentenceCase(subject), back: back)
        }
        return nil
    }

    /// "Term: meaning" or "Term – meaning" at the start of a line or list item -> definition.
    private func glossary(_ index: Int) -> GeneratedCard? {
        let (tokens, words) = words(index)
        guard words.count >= 4 else { return nil }
        for split in 1...min(4, words.count - 3) where tokens[tokens.startIndex + split].flags.contains(.breakBefore) {
            let gap = document.bytes[Int(tokens[tokens.startIndex + split - 1].end)..<Int(tokens[tokens.startIndex + split].start)]
            let text = String(decoding: gap, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            guard text == ":" || text == "-" || text == "–" || text == "—" || text == "**:" || text == ":**" else { return nil }
            guard !Stopwords.contains(words[0]) else { return nil }
            let term = document.text(tokens: absolute(tokens, 0..<split))
            let meaning = document.text(tokens: absolute(tokens, split..<words.count)) + tailPunctuation(index)
            return GeneratedCard(chunkId: "", kind: .definition, front: sentenceCase(term), back: sentenceCase(meaning))
        }
        return nil
    }

    /// "The green pigment in leaves is called chlorophyll." -> "What is the green pigment in
    /// leaves called?" / "Chlorophyll".
    private func calledQuestion(_ index: Int) -> GeneratedCard? {
        let (tokens, words) = words(index)
        guard words.count >= 4 else { return nil }
        for verb in 2..<(words.count - 1) where words[verb] == "is" || words[verb] == "are" {
            var termStart = verb + 1
            switch words[verb + 1] {
            case "called", "termed", "named": termStart += 1
            case "known" where verb + 2 < words.count && words[verb + 2] == "as": termStart += 2
            default: continue
            }
            guard termStart < words.count else { return nil }
            var termEnd = termStart + 1
            while termEnd < words.count, termEnd - termStart < 5, !tokens[tokens.startIndex + termEnd].flags.contains(.breakBefore) { termEnd += 1 }
            guard termEnd == words.count || tokens[tokens.startIndex + termEnd].flags.contains(.breakBefore),
                  let subject = subject(tokens: tokens, words: words, end: verb, maxWords: 12, allowLong: true)
            else { return nil }
            let term = document.text(tokens: absolute(tokens, termStart..<termEnd))
            return GeneratedCard(chunkId: "", kind: .qa, front: "What \(words[verb]) \(lowerFirst(subject)) called?", back: sentenceCase(term))
        }
        return nil
    }

    private static let auxiliaries: Set<String> = [
        "is", "are", "was", "were", "can", "could", "will", "would", "should", "has", "have", "had", "do", "does", "did",
        "must", "may", "might",
    ]

    /// "Leaves are green because they contain chlorophyll." -> "Why are leaves green?" /
    /// "Because they contain chlorophyll."
    private func becauseQuestion(_ index: Int) -> GeneratedCard? {
        let (tokens, words) = words(index)
        guard let because = words.firstIndex(of: "because"), because >= 3, words.count - because >= 3 else { return nil }
        guard let aux = words[1..<because].firstIndex(where: { Self.auxiliaries.contains($0) }), aux < because - 1,
              !tokens[tokens.startIndex + 1..<tokens.startIndex + because].contains(where: { $0.flags.contains(.breakBefore) }),
              let subject = subject(tokens: tokens, words: words, end: aux, maxWords: 6)
        else { return nil }
        let rest = document.text(tokens: absolute(tokens, (aux + 1)..<because))
        let reason = document.text(tokens: absolute(tokens, (because + 1)..<words.count))
        return GeneratedCard(chunkId: "", kind: .qa, front: "Why \(words[aux]) \(lowerFirst(subject)) \(rest)?", back: "Because \(reason).")
    }

    private static let pronouns: Set<String> = [
        "it", "this", "that", "these", "those", "there", "here", "he", "she", "they", "we", "you", "i", "which", "what",
        "who", "its", "their", "his", "her", "our", "my", "your", "each", "every", "one", "some", "such", "another",
        "other", "all", "most", "many", "both", "either", "neither",
    ]

    /// The subject phrase before `end`: an optional article, then words that are not pronouns,
    /// without punctuation inside (except a bracketed abbreviation).
    private func subject(tokens: ArraySlice<TextDocument.Token>, words: [String], end: Int, maxWords: Int, allowLong: Bool = false) -> String? {
        guard end >= 1, end <= maxWords, !Self.pronouns.contains(words[0]) else { return nil }
        let start = Self.articles.contains(words[0]) ? 1 : 0
        guard start < end, !Stopwords.contains(words[start]) else { return nil }
        if !allowLong {
            for position in (start + 1)..<end where tokens[tokens.startIndex + position].flags.contains(.breakBefore) {
                guard tokens[tokens.startIndex + position].flags.contains(.allCaps) else { return nil }
            }
        }
        return document.text(tokens: absolute(tokens, (allowLong ? 0 : start)..<end))
    }

    /// A heading with at least two sentences under it -> "What are the key ideas of “H”?",
    /// answered by the section's two most central sentences.
    private func headingQuestions() -> [Candidate] {
        var cards: [Candidate] = []
        let sentences = document.sentences
        var index = 0
        while index < sentences.count {
            guard sentences[index].kind == .heading else { index += 1; continue }
            let chunk = chunkIndex(of: sentences[index])
            var end = index + 1
            while end < sentences.count, sentences[end].kind != .heading, chunkIndex(of: sentences[end]) == chunk { end += 1 }
            if end - index >= 3 {
                let heading = document.text(of: sentences[index]).trimmingCharacters(in: CharacterSet(charactersIn: "#:. "))
                let summary = Summarizer.summarize(document, maxSentences: 2, within: (index + 1)..<end)
                if !summary.isEmpty, !heading.isEmpty {
                    let question = heading.hasSuffix("?") ? heading : "What are the key ideas of “\(heading)”?"
                    let answer = summary.map { document.text(of: sentences[$0]) }.joined(separator: " ")
                    cards.append(Candidate(chunk: chunk, sentence: index, card: GeneratedCard(chunkId: chunks[chunk].id, kind: .qa, front: question, back: answer), quality: 2))
                }
            }
            index = end
        }
        return cards
    }

    /// The sentence with its best key term blanked out.
    private func cloze(_ index: Int, terms: [KeywordExtractor.Candidate], index termIndex: [Int32: [Int]]) -> (GeneratedCard, Double)? {
        let sentence = document.sentences[index]
        guard sentence.tokenCount >= 6, sentence.tokenCount <= 40 else { return nil }
        let tokens = document.tokens
        var best: (term: Int, start: Int, end: Int)?
        for position in sentence.tokenRange {
            guard let options = termIndex[document.stem(tokens[position])] else { continue }
            for option in options where best == nil || option < best!.term {
                let stems = terms[option].stems
                let end = position + stems.count
                guard end <= sentence.tokenRange.upperBound,
                      (0..<stems.count).allSatisfy({ document.stem(tokens[position + $0]) == stems[$0] }),
                      isWholePhrase(position..<end, in: sentence)
                else { continue }
                best = (option, position, end)
            }
        }
        guard let best else { return nil }
        // A term that appears twice in the sentence would give its own answer away.
        let stems = terms[best.term].stems
        let occurrences = sentence.tokenRange.filter { start in
            start + stems.count <= sentence.tokenRange.upperBound && (0..<stems.count).allSatisfy { document.stem(tokens[start + $0]) == stems[$0] }
        }
        guard occurrences.count == 1 else { return nil }
        let blank = Int(tokens[best.start].start)..<Int(tokens[best.end - 1].end)
        let front = document.text(of: sentence, replacing: blank, with: "_____")
        let answer = document.text(tokens: best.start..<best.end)
        return (GeneratedCard(chunkId: "", kind: .cloze, front: front, back: answer), terms[best.term].score)
    }

    /// Whether blanking `range` keeps a whole phrase: no content word of the same phrase right
    /// after it (blanking "green" out of "green light" makes a poor card).
    private func isWholePhrase(_ range: Range<Int>, in sentence: TextDocument.Sentence) -> Bool {
        let tokens = document.tokens
        return range.upperBound == sentence.tokenRange.upperBound || tokens[range.upperBound].flags.contains(.breakBefore)
            || document.isStopword(tokens[range.upperBound])
    }

    // MARK: Text helpers

    private func absolute(_ tokens: ArraySlice<TextDocument.Token>, _ range: Range<Int>) -> Range<Int> {
        (tokens.startIndex + range.lowerBound)..<(tokens.startIndex + range.upperBound)
    }

    /// The sentence's closing `.`/`!`/`?` if its text has one after the last word.
    private func tailPunctuation(_ index: Int) -> String {
        let sentence = document.sentences[index]
        let lastToken = document.tokens[Int(sentence.tokenEnd) - 1]
        let tail = document.bytes[Int(lastToken.end)..<Int(sentence.end)]
        return tail.contains(0x3F) ? "?" : tail.contains(0x21) ? "!" : "."
    }

    private func sentenceCase(_ text: String) -> String {
        guard let first = text.first, first.isLowercase else { return text }
        return first.uppercased() + text.dropFirst()
    }

    /// The phrase with its first letter in lower case, unless the first word is a name (written
    /// with a capital everywhere in the text).
    private func lowerFirst(_ text: String) -> String {
        let firstWord = String(text.prefix { !$0.isWhitespace }).lowercased()
        guard let id = document.vocabulary.ids[firstWord], writtenLowercase[Int(id)] || Stopwords.contains(firstWord) else { return text }
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}

private extension GeneratedCard {
    func with(chunkId: String) -> GeneratedCard {
        var card = self
        card.chunkId = chunkId
        return card
    }
}
