import Bus
import Wire

/// Spoken or typed commands as words: lower case, curly apostrophes made plain, everything that
/// is not a letter, a digit or an apostrophe inside a word treated as a space.
enum CommandText {
    /// The words of `text`; with `keepPatternMarks`, `*`, `[` and `]` are words of their own.
    static func words(_ text: String, keepPatternMarks: Bool = false) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        func flush() {
            while let last = current.last, last == "'" { current.removeLast() }
            if !current.isEmpty { words.append(String(current)) }
            current.removeAll()
        }
        for scalar in text.unicodeScalars {
            if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                if scalar.isASCII {
                    current.append(("A"..."Z").contains(scalar) ? Unicode.Scalar(scalar.value + 32)! : scalar)
                } else {
                    current.append(contentsOf: String(scalar).lowercased().unicodeScalars)
                }
            } else if (scalar == "'" || scalar == "\u{2019}"), !current.isEmpty {
                current.append("'")
            } else {
                flush()
                if keepPatternMarks, scalar == "*" || scalar == "[" || scalar == "]" { words.append(String(scalar)) }
            }
        }
        flush()
        return words
    }
}

/// A command pattern: literal words, `*` (one or more words, captured) and `[optional words]`.
///
/// ```swift
/// let pattern = try IntentPattern("show * materials")
/// pattern.match(["show", "math", "materials"])   // captures ["math"], 2 literal words
/// ```
struct IntentPattern: Sendable {
    enum Element: Sendable, Hashable {
        case word(String)
        case wildcard
        case optional([String])
    }

    let text: String
    let elements: [Element]
    /// How many wildcards the pattern has.
    let wildcards: Int
    /// Required literal words, for fuzzy matching.
    let requiredWords: [String]
    /// The same as UTF-8, compared byte by byte by the edit distance.
    let requiredBytes: [[UInt8]]

    /// A successful match: what each wildcard captured and how many literal words matched (the
    /// more, the more specific the match).
    struct Match {
        var captures: [String]
        var literalWords: Int
        var capturedWords: Int
    }

    /// Parses `text`.
    /// - Throws: `INVALID_ARGUMENT` for unbalanced or nested brackets, a wildcard inside
    ///   brackets, two wildcards in a row, or a pattern without a literal word.
    init(_ text: String) throws(BusError) {
        self.text = text
        var elements: [Element] = []
        var optional: [String]?
        for word in CommandText.words(text, keepPatternMarks: true) {
            switch word {
            case "[":
                guard optional == nil else { throw .invalidArgument("pattern '\(text)': brackets cannot nest") }
                optional = []
            case "]":
                guard let words = optional else { throw .invalidArgument("pattern '\(text)': ']' without '['") }
                if !words.isEmpty { elements.append(.optional(words)) }
                optional = nil
            case "*":
                guard optional == nil else { throw .invalidArgument("pattern '\(text)': a wildcard cannot be optional") }
                guard elements.last != .wildcard else { throw .invalidArgument("pattern '\(text)': two wildcards in a row cannot be told apart") }
                elements.append(.wildcard)
            default:
                if optional != nil { optional!.append(word) } else { elements.append(.word(word)) }
            }
        }
        guard optional == nil else { throw .invalidArgument("pattern '\(text)': '[' without ']'") }
        let required = elements.compactMap { element -> String? in if case .word(let word) = element { word } else { nil } }
        guard !required.isEmpty else { throw .invalidArgument("pattern '\(text)' needs at least one literal word") }
        self.elements = elements
        self.requiredWords = required
        self.requiredBytes = required.map { Array($0.utf8) }
        self.wildcards = elements.filter { $0 == .wildcard }.count
    }

    /// Matches all of `words`; among several ways, the one with the most literal words (optional
    /// words taken when they fit) and the shortest captures.
    func match(_ words: [String]) -> Match? {
        var best: Match?
        var captures: [String] = []
        search(element: 0, word: 0, words: words, literal: 0, captured: 0, captures: &captures, best: &best)
        return best
    }

    private func search(element: Int, word: Int, words: [String], literal: Int, captured: Int, captures: inout [String], best: inout Match?) {
        if element == elements.count {
            guard word == words.count else { return }
            if best == nil || literal > best!.literalWords || (literal == best!.literalWords && captured < best!.capturedWords) {
                best = Match(captures: captures, literalWords: literal, capturedWords: captured)
            }
            return
        }
        switch elements[element] {
        case .word(let expected):
            guard word < words.count, words[word] == expected else { return }
            search(element: element + 1, word: word + 1, words: words, literal: literal + 1, captured: captured, captures: &captures, best: &best)
        case .optional(let optionalWords):
            if word + optionalWords.count <= words.count, Array(words[word..<(word + optionalWords.count)]) == optionalWords {
                search(element: element + 1, word: word + optionalWords.count, words: words, literal: literal + optionalWords.count,
                       captured: captured, captures: &captures, best: &best)
            }
            search(element: element + 1, word: word, words: words, literal: literal, captured: captured, captures: &captures, best: &best)
        case .wildcard:
            // When a literal word follows, only the places where it appears can end the capture.
            var nextWord: String?
            if element + 1 < elements.count, case .word(let following) = elements[element + 1] { nextWord = following }
            var end = word + 1
            while end <= words.count {
                if let nextWord, end < words.count, words[end] != nextWord { end += 1; continue }
                captures.append(words[word..<end].joined(separator: " "))
                search(element: element + 1, word: end, words: words, literal: literal, captured: captured + (end - word),
                       captures: &captures, best: &best)
                captures.removeLast()
                end += 1
            }
        }
    }
}
