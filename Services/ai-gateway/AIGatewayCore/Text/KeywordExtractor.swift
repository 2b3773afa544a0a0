import Foundation

/// Key terms by YAKE (Campos et al., 2020): each word is scored from statistics of the text
/// alone — casing, position, frequency, how many different words surround it (a word that sits
/// next to anything is a function word), and how many sentences it appears in — and candidate
/// phrases of one to three words that neither start nor end with a stopword (RAKE's split) are
/// scored from their words (one change: the position feature is flatter, see `scores()`).
/// Lower raw scores are better; the result is normalized so the best
/// term has 1. One pass over the tokens plus hash-table counting: linear in the text.
enum KeywordExtractor {
    /// The longest phrase considered.
    static let maxPhraseWords = 3

    /// The `maxCount` best key terms of `text`.
    static func keywords(_ text: String, maxCount: Int) -> [(term: String, score: Double)] {
        keywords(TextDocument(text), maxCount: maxCount).map { ($0.term, $0.score) }
    }

    /// A scored key term with where it first appears.
    struct Candidate {
        var term: String
        var score: Double
        /// Stems of its content words, for matching the term elsewhere.
        var stems: [Int32]
        /// Its words' count.
        var length: Int
    }

    /// The `maxCount` best key terms of `document`, best first.
    static func keywords(_ document: TextDocument, maxCount: Int) -> [Candidate] {
        guard maxCount > 0, !document.tokens.isEmpty else { return [] }
        let wordScores = WordStatistics(document).scores()
        return phrases(document, wordScores: wordScores, maxCount: maxCount)
    }

    private struct PhraseKey: Hashable {
        var a: Int32, b: Int32, c: Int32
    }

    private struct PhraseStats {
        var count = 0
        var firstToken: Int
        var length: Int
        var capitalized = 0
    }

    private static func phrases(_ document: TextDocument, wordScores: [Double], maxCount: Int) -> [Candidate] {
        let tokens = document.tokens
        let isStop = document.vocabulary.isStopword
        let stemOf = document.vocabulary.stemOf
        func usable(_ token: TextDocument.Token) -> Bool {
            !token.flags.contains(.numeric) && (token.end - token.start >= 2 || token.flags.contains(.allCaps))
        }
        var index: [PhraseKey: Int] = [:]
        var stats: [PhraseStats] = []
        for start in tokens.indices {
            let first = tokens[start]
            guard !isStop[Int(first.word)], usable(first) else { continue }
            var key = PhraseKey(a: stemOf[Int(first.word)], b: -1, c: -1)
            for length in 1...maxPhraseWords {
                let last = start + length - 1
                guard last < tokens.count else { break }
                let token = tokens[last]
                if length > 1 {
                    guard token.sentence == first.sentence, !token.flags.contains(.breakBefore), usable(token) else { break }
                    if length == 2 { key.b = stemOf[Int(token.word)] } else { key.c = stemOf[Int(token.word)] }
                }
                guard !isStop[Int(token.word)] else {
                    // Only "of" joins words into one term ("bill of rights"); "and", "in", … join two.
                    if document.word(token) == "of" { continue } else { break }
                }
                let slot: Int
                if let existing = index[key] {
                    slot = existing
                } else {
                    slot = stats.count
                    index[key] = slot
                    stats.append(PhraseStats(firstToken: start, length: length))
                }
                stats[slot].count += 1
                if first.flags.contains(.allCaps) || (first.flags.contains(.capitalized) && !first.flags.contains(.sentenceStart)) {
                    stats[slot].capitalized += 1
                }
            }
        }
        // S(kw) = Π S(w) / (TF(kw) × (1 + Σ S(w))) over the phrase's content words.
        var scored: [(slot: Int, raw: Double)] = []
        scored.reserveCapacity(stats.count)
        for (slot, phrase) in stats.enumerated() {
            var product = 1.0, sum = 0.0
            for offset in 0..<phrase.length {
                let token = tokens[phrase.firstToken + offset]
                guard !isStop[Int(token.word)] else { continue }
                let score = wordScores[Int(stemOf[Int(token.word)])]
                product *= score
                sum += score
            }
            scored.append((slot, product / (Double(phrase.count) * (1 + sum))))
        }
        scored.sort { $0.raw < $1.raw || ($0.raw == $1.raw && stats[$0.slot].firstToken < stats[$1.slot].firstToken) }

        // A pool larger than asked for, then terms that (almost) only occur inside a longer
        // chosen term are dropped in its favour ("Calvin" inside "Calvin cycle").
        var pool: [(candidate: Candidate, count: Int, content: Set<Int32>)] = []
        for (slot, raw) in scored where pool.count < maxCount * 2 + 10 {
            let phrase = stats[slot]
            let range = phrase.firstToken..<(phrase.firstToken + phrase.length)
            let stems = range.map { stemOf[Int(tokens[$0].word)] }
            let content = Set(range.filter { !isStop[Int(tokens[$0].word)] }.map { stemOf[Int(tokens[$0].word)] })
            if pool.contains(where: { $0.content == content }) { continue }
            let properNoun = phrase.capitalized * 2 > phrase.count || tokens[phrase.firstToken].flags.contains(.allCaps)
            var term = document.text(tokens: range)
            if !properNoun { term = term.lowercased() }
            let score = raw > 0 ? min(1, scored[0].raw / raw) : 1
            pool.append((Candidate(term: term, score: score, stems: stems, length: phrase.length), phrase.count, content))
        }
        var chosen: [Candidate] = []
        for (position, entry) in pool.enumerated() where chosen.count < maxCount {
            let subsumed = pool.indices.contains { (other: Int) -> Bool in
                let longer = pool[other]
                guard other != position, longer.content.count > entry.content.count else { return false }
                return longer.content.isSuperset(of: entry.content) && longer.count * 4 >= entry.count * 3
            }
            if !subsumed { chosen.append(entry.candidate) }
        }
        return chosen
    }
}

/// YAKE's per-word features, gathered in one pass.
private struct WordStatistics {
    let document: TextDocument
    var frequency: [Int]
    var upper: [Int]
    var acronym: [Int]
    var sentenceList: [[Int32]]
    var leftTotal: [Int]
    var rightTotal: [Int]
    var leftDistinct: [Int]
    var rightDistinct: [Int]

    init(_ document: TextDocument) {
        self.document = document
        let stemCount = document.vocabulary.stems.count
        frequency = Array(repeating: 0, count: stemCount)
        upper = frequency
        acronym = frequency
        sentenceList = Array(repeating: [], count: stemCount)
        leftTotal = frequency
        rightTotal = frequency
        leftDistinct = frequency
        rightDistinct = frequency
        gather()
    }

    private mutating func gather() {
        let tokens = document.tokens
        let isStop = document.vocabulary.isStopword
        let stemOf = document.vocabulary.stemOf
        var pairs = Set<UInt64>()
        pairs.reserveCapacity(tokens.count * 2)
        for (position, token) in tokens.enumerated() {
            guard !isStop[Int(token.word)], !token.flags.contains(.numeric) else { continue }
            let stem = Int(stemOf[Int(token.word)])
            frequency[stem] += 1
            if token.flags.contains(.allCaps) {
                acronym[stem] += 1
            } else if token.flags.contains(.capitalized), !token.flags.contains(.sentenceStart) {
                upper[stem] += 1
            }
            if sentenceList[stem].last != token.sentence { sentenceList[stem].append(token.sentence) }
            // Neighbours within the same phrase (window of one word each side).
            if position > 0, !token.flags.contains(.breakBefore), tokens[position - 1].sentence == token.sentence {
                let neighbour = UInt64(UInt32(stemOf[Int(tokens[position - 1].word)]))
                leftTotal[stem] += 1
                if pairs.insert(UInt64(stem) << 33 | neighbour).inserted { leftDistinct[stem] += 1 }
            }
            if position + 1 < tokens.count, !tokens[position + 1].flags.contains(.breakBefore), tokens[position + 1].sentence == token.sentence {
                let neighbour = UInt64(UInt32(stemOf[Int(tokens[position + 1].word)]))
                rightTotal[stem] += 1
                if pairs.insert(UInt64(stem) << 33 | 1 << 32 | neighbour).inserted { rightDistinct[stem] += 1 }
            }
        }
    }

    /// S(w) for every stem (lower is more important); stems that never occur as content words
    /// get +∞.
    func scores() -> [Double] {
        let used = frequency.filter { $0 > 0 }
        guard !used.isEmpty else { return frequency.map { _ in .infinity } }
        let mean = Double(used.reduce(0, +)) / Double(used.count)
        let variance = used.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / Double(used.count)
        let spread = mean + variance.squareRoot()
        let maxFrequency = Double(used.max()!)
        let sentenceCount = Double(max(1, document.sentences.count))
        return frequency.indices.map { stem in
            let tf = Double(frequency[stem])
            guard tf > 0 else { return .infinity }
            let casing = Double(max(upper[stem], acronym[stem])) / (1 + log(tf))
            let sentences = sentenceList[stem]
            let median = Double(sentences[sentences.count / 2])
            // YAKE uses ln(ln(3 + median)), which makes the first sentence's words several times
            // better than the third's; study notes often open with greetings or admin, so the
            // curve starts flatter.
            let position = log(log(10 + median))
            let normalizedFrequency = tf / spread
            let left = leftTotal[stem] > 0 ? Double(leftDistinct[stem]) / Double(leftTotal[stem]) : 0
            let right = rightTotal[stem] > 0 ? Double(rightDistinct[stem]) / Double(rightTotal[stem]) : 0
            let relatedness = 1 + (left + right) * tf / maxFrequency
            let spreadOverSentences = Double(sentences.count) / sentenceCount
            return (relatedness * position) / (casing + normalizedFrequency / relatedness + spreadOverSentences / relatedness)
        }
    }
}
