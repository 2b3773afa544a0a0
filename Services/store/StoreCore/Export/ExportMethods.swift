import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// `export`: flashcards as JSON, CSV, Anki text, an Anki package or PDF; study sessions as JSON
/// or CSV; the study report as PDF (``PDFExport``). `flashcards.importApkg`: an Anki package's
/// notes and review history.
enum ExportMethods {
    static func register(_ handlers: Handlers<StoreService>) {
        handlers.handle(Store.export, withAttachment: { store, request, context in
            if request.format == .pdf { return try await PDFExport.run(request, store, context) }
            // A package holds the scheduler's review state, asked for outside the read.
            if request.format == .apkg { return try await ApkgExport.run(request, store, context) }
            return try await store.read(context) { db, user in try run(request, db, user: user) }
        })
        handlers.handle(Store.importApkg) { store, request, context in try await ApkgImport.run(request, store, context) }
    }

    static func run(_ request: ExportRequest, _ db: Database, user: String) throws -> (ExportResult, Data?) {
        let changes = Changes(db: db, user: user, now: Date())
        let (text, count): (String, Int)
        switch request.content {
        case .flashcards:
            let cards = try flashcards(request, changes)
            count = cards.count
            switch request.format {
            case .json: text = try json(cards)
            case .csv: text = csv(cards)
            case .anki: text = anki(cards, deck: try deckName(request, changes))
            case .pdf, .apkg: throw madeElsewhere
            }
        case .studySessions:
            let (condition, arguments) = try subjectFilter(request, user: user)
            let sessions = try StudySession.fetchAll(
                db, sql: "SELECT * FROM \(StudySession.table) WHERE \(condition) ORDER BY started_at, id", arguments: StatementArguments(arguments))
            count = sessions.count
            switch request.format {
            case .json: text = try json(sessions)
            case .csv: text = csv(sessions)
            case .anki: throw BusError.invalidArgument("field 'format': anki exports flashcards only; study sessions export as json or csv")
            case .pdf, .apkg: throw madeElsewhere
            }
        case .report:
            throw BusError.invalidArgument("field 'format': the study report is a pdf")
        }
        let data = Data(text.utf8)
        let (contentType, suffix) = switch request.format {
        case .json: ("application/json; charset=utf-8", "json")
        case .csv: ("text/csv; charset=utf-8", "csv")
        case .anki: ("text/plain; charset=utf-8", "txt")
        case .pdf, .apkg: throw madeElsewhere
        }
        let inline = data.count <= StoreLimits.inlineExportBytes
        let result = ExportResult(
            format: request.format, contentType: contentType, fileName: "\(request.content.rawValue).\(suffix)", itemCount: count,
            byteCount: data.count, content: inline ? text : nil, inAttachment: !inline)
        return (result, inline ? nil : data)
    }

    /// `register` hands PDF exports to ``PDFExport``, which draws them off the cooperative pool,
    /// and Anki packages to ``ApkgExport``, which asks the scheduler for review state.
    private static let madeElsewhere = BusError.internal("PDF and apkg exports are made by PDFExport and ApkgExport")

    static func flashcards(_ request: ExportRequest, _ changes: Changes) throws -> [Flashcard] {
        let (condition, arguments) = try flashcardFilter(request)
        return try changes.all(Flashcard.self, where: condition, arguments)
    }

    /// The SQL condition for the user's rows, of the request's subject if it names one (sessions, sets).
    static func subjectFilter(_ request: ExportRequest, user: String) throws -> (String, [any DatabaseValueConvertible]) {
        guard let subjectId = request.subjectId else { return ("user_id = ?", [user]) }
        try Field.id(subjectId, "subjectId")
        return ("user_id = ? AND subject_id = ?", [user, subjectId])
    }

    /// The SQL condition on the flashcard table for the request's set, material and subject.
    static func flashcardFilter(_ request: ExportRequest) throws -> (String, [any DatabaseValueConvertible]) {
        var conditions = ["1"]
        var arguments: [any DatabaseValueConvertible] = []
        for (field, column, value) in [("setId", "set_id", request.setId), ("materialId", "material_id", request.materialId), ("subjectId", "subject_id", request.subjectId)] {
            guard let value else { continue }
            try Field.id(value, field)
            conditions.append("\(column) = ?")
            arguments.append(value)
        }
        return (conditions.joined(separator: " AND "), arguments)
    }

    static func deckName(_ request: ExportRequest, _ changes: Changes) throws -> String {
        var name = request.deckName
        if name == nil, let setId = request.setId { name = try changes.find(FlashcardSet.self, setId)?.name }
        let deck = (name ?? "StudyBus").components(separatedBy: .newlines).joined(separator: " ")
        try Field.text(deck, "deckName", maximum: StoreLimits.titleLength)
        return deck
    }

    private static func json<T: Encodable>(_ records: [T]) throws -> String {
        let encoder = WireCoding.encoder()
        encoder.outputFormatting.insert(.sortedKeys)
        return String(decoding: try encoder.encode(records), as: UTF8.self)
    }

    private static func csv(_ cards: [Flashcard]) -> String {
        csvTable(["id", "front", "back", "kind", "tags", "setId", "materialId", "subjectId", "createdAt", "updatedAt"], cards.map { card in
            [card.id, card.front, card.back, card.kind.rawValue, card.tags.joined(separator: ";"), card.setId ?? "", card.materialId ?? "",
             card.subjectId ?? "", ISO8601.format(card.createdAt), ISO8601.format(card.updatedAt)]
        })
    }

    private static func csv(_ sessions: [StudySession]) -> String {
        csvTable(["id", "subjectId", "setId", "startedAt", "endedAt", "minutes", "cardsReviewed", "createdAt", "updatedAt"], sessions.map { session in
            let minutes = session.endedAt.map { String(format: "%.2f", $0.timeIntervalSince(session.startedAt) / 60) } ?? ""
            return [session.id, session.subjectId ?? "", session.setId ?? "", ISO8601.format(session.startedAt),
                    session.endedAt.map(ISO8601.format) ?? "", minutes, String(session.cardsReviewed),
                    ISO8601.format(session.createdAt), ISO8601.format(session.updatedAt)]
        })
    }

    /// RFC 4180: CRLF line ends; a field with a comma, quote or line break is quoted. A field
    /// that a spreadsheet would run as a formula (it begins with `=`, `+`, `-`, `@`, a tab or a
    /// carriage return) gets a leading `'` and is quoted, as OWASP's "CSV Injection" advises: the
    /// spreadsheet shows it as text, and a program reading the file drops the `'`.
    static func csvTable(_ header: [String], _ rows: [[String]]) -> String {
        func field(_ value: String) -> String {
            if let first = value.unicodeScalars.first, formulaStarts.contains(first) {
                return "\"'" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            }
            guard value.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return value }
            return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return ([header] + rows).map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    /// First characters that make a spreadsheet read a cell as a formula.
    static let formulaStarts: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r"]

    /// Anki's text import with its header lines. Anki reads a line that starts with `#` as a
    /// header or comment and skips it, so a front starting with `#` is quoted like a field with a
    /// tab or a quote: the line then starts with `"`.
    static func anki(_ cards: [Flashcard], deck: String) -> String {
        func field(_ value: String) -> String {
            guard value.hasPrefix("#") || value.contains(where: { $0 == "\t" || $0 == "\"" || $0.isNewline }) else { return value }
            return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        var text = "#separator:tab\n#html:false\n#deck:\(deck)\n#tags column:3\n"
        for card in cards {
            let tags = card.tags.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: "_") }.joined(separator: " ")
            text += field(card.front) + "\t" + field(card.back) + "\t" + tags + "\n"
        }
        return text
    }
}
