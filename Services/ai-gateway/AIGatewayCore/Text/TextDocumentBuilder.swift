import Foundation

/// The one pass that splits a text into lines, sentences and tokens (see ``TextDocument``).
struct TextDocumentBuilder {
    let bytes: [UInt8]
    var tokens: [TextDocument.Token] = []
    var sentences: [TextDocument.Sentence] = []
    var vocabulary = Vocabulary()

    /// The sentence being built.
    private var sentenceStart: Int32 = -1
    private var sentenceEnd: Int32 = 0
    private var sentenceTokenStart: Int32 = 0
    private var sentenceKind = TextDocument.SentenceKind.prose
    private var paragraph: Int32 = 0
    private var pendingBreak = false
    private var lowercaseScratch: [UInt8] = []

    init(bytes: [UInt8]) {
        self.bytes = bytes
        tokens.reserveCapacity(bytes.count / 5)
    }

    struct Line {
        var start: Int
        var end: Int
        /// Where the content starts after indentation and any marker.
        var contentStart: Int
        var marker: Marker
        var isBlank: Bool
    }

    enum Marker { case none, heading, listItem, tableRow, fence }

    mutating func run() {
        let lines = splitLines()
        var inFence = false
        var previousBlank = true
        for (index, line) in lines.enumerated() {
            if line.marker == .fence {
                endSentence()
                inFence.toggle()
                previousBlank = true
                continue
            }
            if inFence { continue }
            if line.isBlank {
                endSentence()
                if !previousBlank { paragraph += 1 }
                previousBlank = true
                continue
            }
            switch line.marker {
            case .heading:
                standalone(line, kind: .heading)
            case .listItem, .tableRow:
                standalone(line, kind: .listItem)
            case .none:
                let next = index + 1 < lines.count ? lines[index + 1] : nil
                if previousBlank, isTitle(line, next: next) {
                    standalone(line, kind: .heading)
                } else {
                    if sentenceStart < 0 { sentenceKind = .prose }
                    scan(line, next: next)
                }
            case .fence:
                break
            }
            previousBlank = false
        }
        endSentence()
    }

    /// A heading, list item or table row: a sentence of its own (prose punctuation inside a list
    /// item still splits it).
    private mutating func standalone(_ line: Line, kind: TextDocument.SentenceKind) {
        endSentence()
        paragraph += 1
        sentenceKind = kind
        scan(line, next: nil)
        endSentence()
        paragraph += 1
        sentenceKind = .prose
    }

    private func splitLines() -> [Line] {
        var lines: [Line] = []
        var start = 0
        let count = bytes.count
        while start <= count {
            var end = start
            while end < count, bytes[end] != 0x0A { end += 1 }
            var contentEnd = end
            if contentEnd > start, bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            lines.append(classify(start, contentEnd))
            start = end + 1
        }
        return lines
    }

    private func classify(_ start: Int, _ end: Int) -> Line {
        var position = start
        while position < end, bytes[position] == 0x20 || bytes[position] == 0x09 { position += 1 }
        guard position < end else { return Line(start: start, end: end, contentStart: end, marker: .none, isBlank: true) }
        let first = bytes[position]
        func followedBySpace(_ index: Int) -> Bool { index < end && (bytes[index] == 0x20 || bytes[index] == 0x09) }
        if first == 0x60, end - position >= 3, bytes[position + 1] == 0x60, bytes[position + 2] == 0x60 {
            return Line(start: start, end: end, contentStart: end, marker: .fence, isBlank: false)
        }
        if first == 0x23 {  // '#'
            var level = position
            while level < end, bytes[level] == 0x23 { level += 1 }
            if level - position <= 6, followedBySpace(level) {
                return Line(start: start, end: end, contentStart: level + 1, marker: .heading, isBlank: false)
            }
        }
        if (first == 0x2D || first == 0x2A || first == 0x2B), followedBySpace(position + 1) {  // - * +
            return Line(start: start, end: end, contentStart: position + 2, marker: .listItem, isBlank: false)
        }
        if first == 0xE2, position + 2 < end, bytes[position + 1] == 0x80, bytes[position + 2] == 0xA2, followedBySpace(position + 3) {  // •
            return Line(start: start, end: end, contentStart: position + 4, marker: .listItem, isBlank: false)
        }
        if isDigit(first) {
            var digits = position
            while digits < end, isDigit(bytes[digits]) { digits += 1 }
            if digits - position <= 3, digits < end, bytes[digits] == 0x2E || bytes[digits] == 0x29, followedBySpace(digits + 1) {
                return Line(start: start, end: end, contentStart: digits + 2, marker: .listItem, isBlank: false)
            }
        }
        if first == 0x7C {  // '|'
            return Line(start: start, end: end, contentStart: position + 1, marker: .tableRow, isBlank: false)
        }
        return Line(start: start, end: end, contentStart: position, marker: .none, isBlank: false)
    }

    /// A short line at the start of a paragraph, without closing punctuation, that starts with a
    /// capital and is not continued in lower case on the next line: a title.
    private func isTitle(_ line: Line, next: Line?) -> Bool {
        guard isUpper(bytes[line.contentStart]) || isDigit(bytes[line.contentStart]) else { return false }
        var last = line.end - 1
        while last > line.contentStart, bytes[last] == 0x20 || bytes[last] == 0x09 { last -= 1 }
        if [0x2E, 0x21, 0x3F, 0x2C, 0x3B, 0x3A, 0x22, 0x29].contains(bytes[last]) { return false }
        var words = 1
        for index in line.contentStart...last where bytes[index] == 0x20 { words += 1 }
        guard words <= 10 else { return false }
        guard let next, !next.isBlank, next.marker == .none else { return true }
        let nextFirst = bytes[next.contentStart]
        return !isLower(nextFirst)
    }

    /// Tokenizes one line's content into the current sentence, ending sentences at terminators.
    private mutating func scan(_ line: Line, next: Line?) {
        var position = line.contentStart
        let end = line.end
        while position < end {
            let byte = bytes[position]
            if isSpace(byte) {
                position += 1
                continue
            }
            if byte == 0xC2, position + 1 < end, bytes[position + 1] == 0xA0 {  // no-break space
                position += 2
                continue
            }
            if isWordStart(at: position, end: end) {
                position = word(from: position, end: end)
                continue
            }
            if byte == 0x2E || byte == 0x21 || byte == 0x3F {  // . ! ?
                position = terminator(at: position, end: end, line: line, next: next)
                continue
            }
            // Any other punctuation separates phrases; a multi-byte one is skipped whole.
            pendingBreak = true
            position += byte < 0x80 ? 1 : utf8Length(byte)
        }
        // A line break inside a paragraph is a space; the sentence goes on.
    }

    private mutating func word(from start: Int, end: Int) -> Int {
        var position = start
        var asciiOnly = true
        var hasCurlyApostrophe = false
        var upperLetters = 0, lowerLetters = 0, digits = 0
        while position < end {
            let byte = bytes[position]
            if isAlnum(byte) {
                if isUpper(byte) { upperLetters += 1 } else if isLower(byte) { lowerLetters += 1 } else { digits += 1 }
                position += 1
            } else if byte >= 0x80 {
                if isUnicodePunctuation(at: position, end: end) {
                    // ’ between letters is an apostrophe inside the word.
                    if bytes[position] == 0xE2, position + 3 < end, bytes[position + 1] == 0x80, bytes[position + 2] == 0x99,
                       isWordByte(bytes[position + 3]) {
                        hasCurlyApostrophe = true
                        asciiOnly = false
                        position += 3
                        continue
                    }
                    break
                }
                asciiOnly = false
                lowerLetters += 1
                position += utf8Length(byte)
            } else if (byte == 0x27 || byte == 0x2D || byte == 0x5F), position + 1 < end, isWordByte(bytes[position + 1]) {
                position += 1  // ' - _ inside a word
            } else if byte == 0x2E, position + 1 < end, isAlnum(bytes[position + 1]) {
                position += 1  // 3.14, e.g, U.S
            } else {
                break
            }
        }
        addToken(start: start, end: min(position, end), asciiOnly: asciiOnly, curly: hasCurlyApostrophe,
                 upper: upperLetters, lower: lowerLetters, digits: digits)
        return position
    }

    private mutating func addToken(start: Int, end: Int, asciiOnly: Bool, curly: Bool, upper: Int, lower: Int, digits: Int) {
        let lowered: String
        if asciiOnly {
            lowercaseScratch.removeAll(keepingCapacity: true)
            for byte in bytes[start..<end] { lowercaseScratch.append(isUpper(byte) ? byte | 0x20 : byte) }
            lowered = String(decoding: lowercaseScratch, as: UTF8.self)
        } else {
            var text = String(decoding: bytes[start..<end], as: UTF8.self).lowercased()
            if curly { text = text.replacingOccurrences(of: "\u{2019}", with: "'") }
            lowered = text
        }
        if sentenceStart < 0 {
            sentenceStart = Int32(start)
            sentenceTokenStart = Int32(tokens.count)
        }
        var flags: TextDocument.Flags = []
        if isUpper(bytes[start]) { flags.insert(.capitalized) }
        if upper >= 2, lower == 0 { flags.insert(.allCaps) }
        if digits > 0, upper == 0, lower == 0 { flags.insert(.numeric) }
        if pendingBreak { flags.insert(.breakBefore) }
        if Int32(tokens.count) == sentenceTokenStart { flags.insert(.sentenceStart) }
        pendingBreak = false
        tokens.append(.init(start: Int32(start), end: Int32(end), word: vocabulary.intern(lowered),
                            sentence: Int32(sentences.count), flags: flags))
        sentenceEnd = Int32(end)
    }

    /// Handles `.`, `!`, `?` (and the closing quotes or brackets after them); ends the sentence
    /// when what follows starts a new one.
    private mutating func terminator(at start: Int, end: Int, line: Line, next: Line?) -> Int {
        let mark = bytes[start]
        var position = start
        while position < end, bytes[position] == 0x2E || bytes[position] == 0x21 || bytes[position] == 0x3F { position += 1 }
        while position < end {
            let byte = bytes[position]
            if byte == 0x22 || byte == 0x27 || byte == 0x29 || byte == 0x5D {
                position += 1
            } else if byte == 0xE2, position + 2 < end, bytes[position + 1] == 0x80, bytes[position + 2] == 0x9D || bytes[position + 2] == 0x99 {
                position += 3
            } else {
                break
            }
        }
        if sentenceStart >= 0 { sentenceEnd = Int32(position) }
        guard position >= end || isSpace(bytes[position]) else {
            pendingBreak = true
            return position
        }
        // What comes next: later on this line, or the next line's first character.
        var look = position
        while look < end, isSpace(bytes[look]) { look += 1 }
        let following: UInt8?
        if look < end {
            following = bytes[look]
        } else if let next, !next.isBlank, next.marker == .none {
            following = bytes[next.contentStart]
        } else {
            following = nil  // the paragraph ends here
        }
        var ends = true
        if let following {
            if isLower(following) {
                ends = false
            } else if mark == 0x2E, position - start == 1, let last = tokens.last, Int(last.end) == start, isAbbreviation(last) {
                ends = false
            }
        }
        if ends { endSentence() } else { pendingBreak = true }
        return position
    }

    private func isAbbreviation(_ token: TextDocument.Token) -> Bool {
        let length = token.end - token.start
        if length == 1, isUpper(bytes[Int(token.start)]) { return true }  // an initial: J. K. Rowling
        return Self.abbreviations.contains(vocabulary.words[Int(token.word)])
    }

    private static let abbreviations: Set<String> = [
        "mr", "mrs", "ms", "dr", "prof", "st", "vs", "e.g", "i.e", "fig", "no", "approx", "jr", "sr", "inc", "ltd",
        "co", "cf", "al", "ca", "vol", "pp", "ch", "sec", "dept", "est", "gen", "gov", "sgt", "capt", "lt", "col",
    ]

    private mutating func endSentence() {
        guard sentenceStart >= 0 else { return }
        sentences.append(.init(start: sentenceStart, end: sentenceEnd, tokenStart: sentenceTokenStart,
                               tokenEnd: Int32(tokens.count), kind: sentenceKind, paragraph: paragraph))
        sentenceStart = -1
        pendingBreak = false
    }

    // MARK: Bytes

    private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    private func isUpper(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }
    private func isLower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
    private func isAlnum(_ byte: UInt8) -> Bool { isDigit(byte) || isUpper(byte) || isLower(byte) }
    private func isWordByte(_ byte: UInt8) -> Bool { isAlnum(byte) || byte >= 0xC3 }

    private func isWordStart(at position: Int, end: Int) -> Bool {
        let byte = bytes[position]
        if isAlnum(byte) { return true }
        return byte >= 0x80 && !isUnicodePunctuation(at: position, end: end)
    }

    /// Multi-byte characters that separate words: U+2000–U+2FFF (dashes, curly quotes, ellipsis,
    /// bullets, arrows, symbols), Latin-1 punctuation (U+0080–U+00BF, ×, ÷), emoji, and the stray
    /// bytes of broken UTF-8.
    private func isUnicodePunctuation(at position: Int, end: Int) -> Bool {
        let byte = bytes[position]
        if byte == 0xE2 || byte == 0xC2 { return true }
        if byte == 0xF0, position + 1 < end, bytes[position + 1] == 0x9F { return true }  // emoji
        if byte == 0xC3, position + 1 < end, bytes[position + 1] == 0x97 || bytes[position + 1] == 0xB7 { return true }
        return byte < 0xC2 || byte > 0xF4
    }

    private func utf8Length(_ byte: UInt8) -> Int {
        if byte >= 0xF0 { return 4 }
        if byte >= 0xE0 { return 3 }
        if byte >= 0xC0 { return 2 }
        return 1
    }
}
