import Contracts
import Foundation

/// One piece of a document's text: a heading, a paragraph or a timed cue, with where it came from.
struct TextBlock: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case heading(level: Int)
        case paragraph
        /// A subtitle cue or transcript segment: `startSeconds`/`endSeconds` are set.
        case cue
    }

    var kind: Kind
    /// The block's bytes in ``ExtractedDocument/text``.
    var bytes: Range<Int>
    /// The page it is on (PDF, images), from 1.
    var page: Int?
    var startSeconds: Double?
    var endSeconds: Double?
    /// The title of the section it belongs to (a heading's own text for a heading).
    var section: String?
    /// True for the first block of a part that must not share a chunk with what comes before
    /// (an e-mail attachment).
    var breakBefore = false
}

/// A flashcard a file holds itself (CSV/TSV, Anki's plain-text export).
struct ImportedCard: Sendable, Equatable {
    var front: String
    var back: String
    var kind: FlashcardKind
    var tags: [String]
    /// The block that holds the card's text; the card links to that block's chunk.
    var block: Int
}

/// A calendar entry that becomes a store task or study session.
struct CalendarItem: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A to-do, or an event to prepare for (an exam): a task due at `due`.
        case task(due: Date?, isDone: Bool)
        /// An event marked as studying: a study session.
        case session(start: Date, end: Date?)
    }

    var kind: Kind
    var title: String
    /// The event's UID (and recurrence id), so the same entry makes the same record on a retry.
    var key: String
}

/// What an extractor made of a file: its text, cut into blocks, and what else it holds.
///
/// The text is UTF-8, blocks separated by a blank line; chunk offsets count Unicode scalars of
/// this text.
struct ExtractedDocument: Sendable {
    var text: [UInt8]
    var blocks: [TextBlock]
    var title: String?
    var pageCount: Int?
    var durationSeconds: Double?
    var language: String?
    var cards: [ImportedCard] = []
    var calendar: [CalendarItem] = []

    /// The text of `block`.
    func string(_ block: TextBlock) -> String {
        String(decoding: text[block.bytes], as: UTF8.self)
    }

    /// The whole text.
    var string: String { String(decoding: text, as: UTF8.self) }

    /// True when no block has any letter or digit.
    var isBlank: Bool {
        !text.contains { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte >= 0x80
        }
    }
}

/// Builds an ``ExtractedDocument`` block by block: normalizes white space, joins blocks with
/// a blank line and keeps track of sections and pages.
struct DocumentBuilder {
    /// The document so far; extractors set its title, page count, duration, language, cards and
    /// calendar entries directly, its text and blocks only through the builder.
    var document = ExtractedDocument(text: [], blocks: [])
    /// The page the next blocks are on.
    var page: Int?
    private var section: String?
    private var breakNext = false

    init() {}

    /// Adds a heading; the blocks after it belong to its section. Returns false if it was blank.
    @discardableResult
    mutating func heading(_ raw: String, level: Int) -> Bool {
        let title = Self.singleLine(raw)
        guard !title.isEmpty else { return false }
        section = String(decoding: title, as: UTF8.self)
        append(title, kind: .heading(level: level))
        return true
    }

    /// Adds a paragraph: line ends normalized, blank lines inside it removed, trailing spaces
    /// trimmed. Returns the block's index, or nil if it was blank.
    @discardableResult
    mutating func paragraph(_ raw: String) -> Int? {
        paragraph(utf8: raw.utf8)
    }

    /// ``paragraph(_:)`` for UTF-8 bytes.
    @discardableResult
    mutating func paragraph(utf8 raw: some Sequence<UInt8>) -> Int? {
        let text = Self.normalizedParagraph(raw)
        guard !text.isEmpty else { return nil }
        append(text, kind: .paragraph)
        return document.blocks.count - 1
    }

    /// Adds the paragraphs of laid-out text (a PDF page, OCR output): blank lines separate them,
    /// and each one's lines are joined back into running text (``TextLines/unwrapped(_:)``).
    mutating func laidOutText(_ bytes: [UInt8]) {
        for lines in TextLines.paragraphs(TextLines.lines(bytes)) {
            paragraph(utf8: TextLines.unwrapped(lines))
        }
    }

    /// Adds a timed cue (subtitles, transcript segments). Its times are kept to a recording's
    /// range (``DocumentValues/mediaSeconds(_:)``): they come from the file or a provider.
    mutating func cue(_ raw: String, start: Double, end: Double) {
        let text = Self.normalizedParagraph(raw.utf8)
        guard !text.isEmpty else { return }
        let start = DocumentValues.mediaSeconds(start) ?? 0
        let end = DocumentValues.mediaSeconds(end) ?? start
        append(text, kind: .cue, start: start, end: max(start, end))
    }

    /// Appends another document's blocks: under a heading of their own as a separate part (an
    /// e-mail attachment), or, without a heading, as more of this document (an e-mail's body).
    mutating func append(_ other: ExtractedDocument, heading: String?) {
        if let heading {
            // A part of its own: no chunk joins it to what came before. The heading sets the section.
            breakNext = true
            // On the page of what it introduces, so the two share a chunk.
            let current = page
            page = other.blocks.first?.page
            self.heading(heading, level: 2)
            page = current
        }
        let cardBase = document.blocks.count
        for (index, block) in other.blocks.enumerated() {
            var copy = block
            copy.breakBefore = block.breakBefore || (index == 0 && breakNext)
            if copy.section == nil { copy.section = heading ?? section }
            let string = other.string(block)
            if !document.text.isEmpty { document.text.append(contentsOf: [0x0A, 0x0A]) }
            let start = document.text.count
            document.text.append(contentsOf: string.utf8)
            copy.bytes = start..<document.text.count
            document.blocks.append(copy)
            breakNext = false
        }
        document.cards += other.cards.map { card in
            var card = card
            card.block += cardBase
            return card
        }
        document.calendar += other.calendar
        if heading != nil { section = nil }
    }

    private mutating func append(_ bytes: [UInt8], kind: TextBlock.Kind, start: Double? = nil, end: Double? = nil) {
        if !document.text.isEmpty { document.text.append(contentsOf: [0x0A, 0x0A]) }
        let from = document.text.count
        document.text.append(contentsOf: bytes)
        document.blocks.append(TextBlock(kind: kind, bytes: from..<document.text.count, page: page, startSeconds: start, endSeconds: end, section: section, breakBefore: breakNext))
        breakNext = false
    }

    func build() -> ExtractedDocument { document }

    // MARK: White space (on UTF-8 bytes: fast for megabytes of text)

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0B || byte == 0x0C }
    private static func isLineEnd(_ byte: UInt8) -> Bool { byte == 0x0A || byte == 0x0D }

    /// One line: runs of white space (line ends included) become one space; trimmed.
    static func singleLine(_ raw: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(raw.utf8.count)
        var pendingSpace = false
        for byte in raw.utf8 {
            if isSpace(byte) || isLineEnd(byte) {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(0x20) }
                pendingSpace = false
                out.append(byte)
            }
        }
        return out
    }

    /// Lines kept, `\r\n` and `\r` made `\n`, trailing spaces and blank lines removed (a blank
    /// line separates blocks, so none may be inside one), leading spaces of the first line removed.
    static func normalizedParagraph(_ raw: some Sequence<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(raw.underestimatedCount)
        var lineStart = 0
        var lastVisible = -1
        func endLine() {
            if lastVisible >= lineStart {
                out.removeSubrange((lastVisible + 1)..<out.count)
                out.append(0x0A)
            } else {
                out.removeSubrange(lineStart..<out.count)
            }
            lineStart = out.count
            lastVisible = -1
        }
        for byte in raw {
            if isLineEnd(byte) {
                endLine()
            } else if isSpace(byte) {
                if !out.isEmpty { out.append(byte) }
            } else {
                out.append(byte)
                lastVisible = out.count - 1
            }
        }
        endLine()
        if out.last == 0x0A { out.removeLast() }
        return out
    }
}
