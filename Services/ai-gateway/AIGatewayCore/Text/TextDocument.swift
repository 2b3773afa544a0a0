import Foundation

/// A text split into sentences and word tokens, with a vocabulary of lower-case words and their
/// stems: what the local summarizer, keyword extractor, flashcard maker and tutor work on.
///
/// One pass over the UTF-8 bytes, line by line: fenced code is skipped; Markdown headings and
/// short title lines become heading sentences; list items and table rows are sentences of their
/// own; prose is split at `.`, `!` and `?` unless an abbreviation, an initial or a lower-case
/// continuation says otherwise. Wrapped lines join their paragraph.
struct TextDocument {
    /// What a sentence is.
    enum SentenceKind: UInt8 {
        case prose, heading, listItem
    }

    /// One word: where it is and what it is.
    struct Token {
        /// Byte range in ``bytes``.
        var start: Int32
        var end: Int32
        /// Index in ``Vocabulary/words``.
        var word: Int32
        var sentence: Int32
        var flags: Flags
    }

    struct Flags: OptionSet {
        let rawValue: UInt8
        /// Starts with an upper-case letter.
        static let capitalized = Flags(rawValue: 1)
        /// Two or more letters, all upper case (an acronym).
        static let allCaps = Flags(rawValue: 2)
        /// Punctuation (a comma, a colon, a bracket…) stands between it and the word before.
        static let breakBefore = Flags(rawValue: 4)
        /// The first word of its sentence.
        static let sentenceStart = Flags(rawValue: 8)
        /// Digits only (with `.` or `,` inside).
        static let numeric = Flags(rawValue: 16)
    }

    struct Sentence {
        /// Byte range in ``bytes`` (without list or heading markers).
        var start: Int32
        var end: Int32
        /// Index range in ``tokens``.
        var tokenStart: Int32
        var tokenEnd: Int32
        var kind: SentenceKind
        /// Paragraph number (headings and list items count as paragraphs).
        var paragraph: Int32

        var tokenRange: Range<Int> { Int(tokenStart)..<Int(tokenEnd) }
        var tokenCount: Int { Int(tokenEnd - tokenStart) }
    }

    let bytes: [UInt8]
    private(set) var tokens: [Token] = []
    private(set) var sentences: [Sentence] = []
    private(set) var vocabulary = Vocabulary()

    init(_ text: String) {
        bytes = Array(text.utf8)
        var builder = TextDocumentBuilder(bytes: bytes)
        builder.run()
        tokens = builder.tokens
        sentences = builder.sentences
        vocabulary = builder.vocabulary
    }

    /// The text of bytes `start..<end`.
    func text(_ start: Int32, _ end: Int32) -> String {
        String(decoding: bytes[Int(start)..<Int(end)], as: UTF8.self)
    }

    /// The sentence's text on one line: line breaks and runs of spaces become one space, and
    /// Markdown emphasis and code marks are dropped.
    func text(of sentence: Sentence) -> String {
        Self.clean(bytes[Int(sentence.start)..<Int(sentence.end)])
    }

    /// The sentence's text with bytes `blank` replaced by `replacement` (a cloze gap).
    func text(of sentence: Sentence, replacing blank: Range<Int>, with replacement: String) -> String {
        Self.clean(bytes[Int(sentence.start)..<blank.lowerBound] + Array(replacement.utf8) + bytes[blank.upperBound..<Int(sentence.end)])
    }

    /// Bytes as text on one line, without Markdown emphasis and code marks.
    static func clean<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var lastWasSpace = false
        for byte in bytes where byte != 0x2A && byte != 0x60 {  // Markdown * and `
            let isSpace = byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
            if isSpace {
                if !lastWasSpace, !out.isEmpty { out.append(0x20) }
                lastWasSpace = true
            } else {
                out.append(byte)
                lastWasSpace = false
            }
        }
        while out.last == 0x20 { out.removeLast() }
        return String(decoding: out, as: UTF8.self)
    }

    /// The surface text of tokens `range` (as written, with what stands between them).
    func text(tokens range: Range<Int>) -> String {
        guard let first = range.first, let last = range.last else { return "" }
        return Self.clean(bytes[Int(tokens[first].start)..<Int(tokens[last].end)])
    }

    /// Whether the token's word is a stopword.
    func isStopword(_ token: Token) -> Bool { vocabulary.isStopword[Int(token.word)] }

    /// The token's stem id.
    func stem(_ token: Token) -> Int32 { vocabulary.stemOf[Int(token.word)] }

    /// The token's lower-case word.
    func word(_ token: Token) -> String { vocabulary.words[Int(token.word)] }
}

/// Lower-case words with their stems and stopword flags, each stored once.
struct Vocabulary {
    private(set) var ids: [String: Int32] = [:]
    private(set) var words: [String] = []
    private(set) var stemOf: [Int32] = []
    private(set) var isStopword: [Bool] = []
    private var stemIDs: [String: Int32] = [:]
    private(set) var stems: [String] = []

    /// The id of `word` (lower case), adding it if new.
    mutating func intern(_ word: String) -> Int32 {
        if let id = ids[word] { return id }
        let id = Int32(words.count)
        ids[word] = id
        words.append(word)
        isStopword.append(Stopwords.contains(word))
        let stem = Stemmer.stem(word)
        if let stemID = stemIDs[stem] {
            stemOf.append(stemID)
        } else {
            let stemID = Int32(stems.count)
            stemIDs[stem] = stemID
            stems.append(stem)
            stemOf.append(stemID)
        }
        return id
    }

    /// The id of a stem, if the text has it.
    func stemID(_ stem: String) -> Int32? { stemIDs[stem] }
}
