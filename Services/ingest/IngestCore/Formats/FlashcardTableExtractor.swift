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
    static func extract(_ text: String, delimiter: UInt8?, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
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
        var rows = try DelimitedText.rows(body, delimiter: separator, budget: budget)
        guard var columns = Columns(skipping: settings.reservedColumns, tags: settings.tagsColumn) else {
            throw .invalidArgument("the Anki header of '\(fileName)' leaves no columns for the front and back of the cards")
        }
        if let header = rows.first, let named = Columns(header: header) {
            columns = named
            rows.removeFirst()
        }

        var builder = DocumentBuilder()
        for (index, row) in rows.enumerated() {
            try budget.checkpoint()
            let rowNumber = index + 1
            guard let card = try columns.card(row, html: settings.html, row: rowNumber, budget: budget) else { continue }
            guard builder.document.cards.count < StoreLimits.flashcardsPerPut else {
                throw .invalidArgument(
                    "'\(fileName)' has more than \(StoreLimits.flashcardsPerPut) flashcards; one material holds at most \(StoreLimits.flashcardsPerPut): split the file")
            }
            guard let block = builder.paragraph(card.front + "\n" + card.back) else { continue }
            builder.document.cards.append(ImportedCard(front: card.front, back: card.back, kind: card.kind, tags: card.tags, block: block))
        }
        guard !builder.document.cards.isEmpty else {
            throw .invalidArgument("no flashcards found in '\(fileName)': expected rows of front, back and optional tags")
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
            case "tags column": tagsColumn = Self.column(value)
            case "guid column", "notetype column", "deck column": if let column = Self.column(value) { reservedColumns.insert(column) }
            default: break
            }
            return true
        }

        /// A column number of the header (1…``Columns/count``), 0-based; nil for any other.
        private static func column(_ value: String) -> Int? {
            guard let number = Int(value), (1...Columns.count).contains(number) else { return nil }
            return number - 1
        }
    }

    /// Which column holds what.
    private struct Columns {
        var front = 0, back = 1
        var tags: Int? = 2
        var kind: Int?

        /// The columns an Anki header may name.
        static let count = 64

        /// The first two columns neither reserved nor tags; nil if there are not two.
        init?(skipping reserved: Set<Int>, tags: Int?) {
            let fields = (0..<Self.count).filter { !reserved.contains($0) && $0 != tags }
            guard fields.count >= 2 else { return nil }
            front = fields[0]
            back = fields[1]
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

        func card(
            _ row: [String], html: Bool, row number: Int, budget: ExtractionBudget
        ) throws(BusError) -> (front: String, back: String, kind: FlashcardKind, tags: [String])? {
            func field(_ index: Int?) throws(BusError) -> String {
                guard let index, index < row.count else { return "" }
                let value = html ? String(decoding: try HTMLExtractor.extract(Data(row[index].utf8), budget: budget).text, as: UTF8.self) : row[index]
                return value.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let front = try field(front), back = try field(back)
            guard !front.isEmpty, !back.isEmpty else { return nil }
            for (side, text) in [("front", front), ("back", back)] where text.unicodeScalars.count > StoreLimits.cardSideLength {
                throw .invalidArgument("row \(number): the card's \(side) has \(text.unicodeScalars.count) characters; a side may have at most \(StoreLimits.cardSideLength)")
            }
            let tagField = try field(tags)
            let separators: (Character) -> Bool = tagField.contains(";") ? { $0 == ";" } : { $0.isWhitespace }
            // The first distinct tags, up to the store's number per card (a set: a row of a
            // hundred thousand tags must not compare each with all before it).
            var tagList: [String] = [], seen: Set<String> = []
            for piece in tagField.split(whereSeparator: separators) where tagList.count < StoreLimits.tagsPerCard {
                let tag = piece.trimmingCharacters(in: .whitespaces).clipped(toScalars: StoreLimits.labelLength)
                if !tag.isEmpty, seen.insert(tag).inserted { tagList.append(tag) }
            }
            return (front, back, FlashcardKind(rawValue: try field(kind)) ?? .qa, tagList)
        }
    }
}
