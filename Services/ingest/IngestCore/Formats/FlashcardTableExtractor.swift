import Bus
import Contracts
import Foundation
import Wire

/// CSV, TSV and Anki's plain-text export: rows of front, back and tags become flashcards
/// (imported as they are, not generated), and each card's text a block of the document.
///
/// - A header row naming `front`/`question`/`term` and `back`/`answer`/`definition` (and
///   `tags`, `kind`) places the columns — the store's own CSV export reads back; without one
///   the columns are front, back, tags.
/// - Anki's header lines (`#separator:tab`, `#html:true`, `#tags column:3`, `#guid column:1`,
///   `#notetype column:2`, `#deck column:…`) are honoured: the columns they name are left out of
///   the fields, the first two fields left are front and back, and HTML fields lose their markup.
/// - Tags are split at `;` when there is one, else at white space (Anki's way).
enum FlashcardTableExtractor {
    /// Whether a `.txt` file is an Anki export (starts with its `#key:value` header lines).
    static func isAnkiExport(_ text: String) -> Bool {
        let start = text.utf8.prefix(64)
        return ["#separator:", "#html:", "#tags column:", "#notetype", "#deck", "#guid column:"].contains { start.starts(with: $0.utf8) }
    }

    /// - Parameter delimiter: the field separator; nil to take it from an Anki header or guess it.
    static func extract(_ text: String, delimiter: UInt8?, fileName: String) throws(BusError) -> ExtractedDocument {
        let bytes = Array(text.utf8)
        var lines = TextLines.lines(bytes)[...]
        var settings = AnkiHeader()
        var bodyStart = 0
        while let line = lines.first, line.first == 0x23, settings.read(String(decoding: line, as: UTF8.self)) {
            bodyStart = line.endIndex
            lines.removeFirst()
        }
        let body = bytes[min(bodyStart, bytes.count)...]
        let separator = settings.separator ?? delimiter ?? DelimitedText.guessDelimiter(lines.first ?? [])
        var rows = DelimitedText.rows(body, delimiter: separator)
        var columns = Columns(skipping: settings.reservedColumns, tags: settings.tagsColumn)
        if let header = rows.first, let named = Columns(header: header) {
            columns = named
            rows.removeFirst()
        }

        var builder = DocumentBuilder()
        for (index, row) in rows.enumerated() {
            let rowNumber = index + 1
            guard let card = try columns.card(row, html: settings.html, row: rowNumber) else { continue }
            guard let block = builder.paragraph(card.front + "\n" + card.back) else { continue }
            builder.document.cards.append(ImportedCard(front: card.front, back: card.back, kind: card.kind, tags: card.tags, block: block))
        }
        guard !builder.document.cards.isEmpty else {
            throw .invalidArgument("no flashcards found in '\(fileName)': expected rows of front, back and optional tags")
        }
        guard builder.document.cards.count <= StoreLimits.flashcardsPerPut else {
            throw .invalidArgument(
                "'\(fileName)' has \(builder.document.cards.count) flashcards; one material holds at most \(StoreLimits.flashcardsPerPut): split the file")
        }
        return builder.build()
    }

    /// What Anki's header lines say.
    private struct AnkiHeader {
        var separator: UInt8?
        var html = false
        var tagsColumn: Int?
        /// Columns that are not fields (guid, note type, deck), 0-based.
        var reservedColumns: Set<Int> = []

        /// Reads one `#key:value` line; false if it is not one.
        mutating func read(_ line: String) -> Bool {
            guard let colon = line.firstIndex(of: ":") else { return false }
            let key = line[line.index(after: line.startIndex)..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch key {
            case "separator":
                let named: [String: UInt8] = ["tab": 0x09, "comma": 0x2C, "semicolon": 0x3B, "space": 0x20, "pipe": 0x7C, "colon": 0x3A]
                separator = named[value.lowercased()] ?? value.utf8.first
            case "html": html = value.lowercased() == "true"
            // Column numbers count from 1; one outside the 64 columns read is ignored (and
            // Int.min - 1 would trap).
            case "tags column": tagsColumn = Int(value).flatMap { (1...64).contains($0) ? $0 - 1 : nil }
            case "guid column", "notetype column", "deck column": if let column = Int(value), (1...64).contains(column) { reservedColumns.insert(column - 1) }
            default: break
            }
            return true
        }
    }

    /// Which column holds what.
    private struct Columns {
        var front = 0, back = 1
        var tags: Int? = 2
        var kind: Int?

        init(skipping reserved: Set<Int>, tags: Int?) {
            let fields = (0..<64).filter { !reserved.contains($0) && $0 != tags }
            front = fields.first ?? 0
            back = fields.dropFirst().first ?? 1
            self.tags = tags ?? (reserved.isEmpty ? 2 : nil)
        }

        /// From a header row, if it names the front and back columns.
        init?(header: [String]) {
            let names = header.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let front = names.firstIndex(where: { ["front", "question", "term"].contains($0) }),
                  let back = names.firstIndex(where: { ["back", "answer", "definition"].contains($0) }) else { return nil }
            self.front = front
            self.back = back
            tags = names.firstIndex(of: "tags")
            kind = names.firstIndex(of: "kind")
        }

        func card(_ row: [String], html: Bool, row number: Int) throws(BusError) -> (front: String, back: String, kind: FlashcardKind, tags: [String])? {
            func field(_ index: Int?) -> String {
                guard let index, index < row.count else { return "" }
                let value = html ? String(decoding: HTMLExtractor.extract(Data(row[index].utf8)).text, as: UTF8.self) : row[index]
                return value.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let front = field(front), back = field(back)
            guard !front.isEmpty, !back.isEmpty else { return nil }
            for (side, text) in [("front", front), ("back", back)] where text.unicodeScalars.count > StoreLimits.cardSideLength {
                throw .invalidArgument("row \(number): the card's \(side) has \(text.unicodeScalars.count) characters; a side may have at most \(StoreLimits.cardSideLength)")
            }
            let tagField = field(tags)
            let separators: (Character) -> Bool = tagField.contains(";") ? { $0 == ";" } : { $0.isWhitespace }
            var tagList: [String] = []
            for tag in tagField.split(whereSeparator: separators).map({ $0.trimmingCharacters(in: .whitespaces) }) where !tag.isEmpty && !tagList.contains(tag) {
                tagList.append(tag.clipped(toScalars: StoreLimits.labelLength))
            }
            return (front, back, FlashcardKind(rawValue: field(kind)) ?? .qa, Array(tagList.prefix(StoreLimits.tagsPerCard)))
        }
    }
}
