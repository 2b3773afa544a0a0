import Bus
import Contracts
import Foundation
import GRDB

/// `search`: SQLite FTS5 over chunks, flashcards and notes (table `search_index`, kept by
/// triggers), ranked by bm25 with titles weighing twice, with highlighted snippets.
enum Search {
    static let maximumQueryLength = 500

    static func run(_ request: SearchRequest, _ db: Database, user: String) throws -> SearchResponse {
        let match = try matchExpression(request.query)
        let limit = try Validate.limit(request.limit, default: 20, maximum: 100)
        let offset = try request.cursor.map { cursor throws(BusError) in
            Int64.fromDatabaseValue(try PageCursor.decode(cursor, list: "search", keyCount: 1)[0]) ?? 0
        } ?? 0
        var conditions = ["search_index MATCH ?", "user_id = ?"]
        var arguments: [any DatabaseValueConvertible] = [
            request.highlightOpen ?? "<mark>", request.highlightClose ?? "</mark>", match, user,
        ]
        if let kinds = request.kinds, !kinds.isEmpty {
            conditions.append("kind IN (\(kinds.map { _ in "?" }.joined(separator: ", ")))")
            arguments.append(contentsOf: kinds.map(\.rawValue))
        }
        if let subjectId = request.subjectId {
            try Validate.id(subjectId, field: "subjectId")
            conditions.append("subject_id = ?")
            arguments.append(subjectId)
        }
        if let materialId = request.materialId {
            try Validate.id(materialId, field: "materialId")
            conditions.append("material_id = ?")
            arguments.append(materialId)
        }
        // ORDER BY rank alone lets FTS5 sort by bm25 itself; snippets are made only for the
        // rows returned.
        let sql = """
            SELECT kind, record_id, subject_id, material_id, title, rank,
                   snippet(search_index, -1, ?, ?, '…', 16) AS snippet
            FROM search_index WHERE \(conditions.joined(separator: " AND "))
            ORDER BY rank LIMIT \(limit + 1) OFFSET \(offset)
            """
        let rows = try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments))
        let hits = try rows.prefix(limit).map { row in try hit(row, db, user: user) }
        let next = rows.count > limit ? PageCursor.encode(list: "search", keys: [(offset + Int64(limit)).databaseValue]) : nil
        return SearchResponse(hits: hits, nextCursor: next)
    }

    /// Builds the FTS5 expression: each word and each `"quoted phrase"` as a quoted string (so
    /// no user input is read as FTS5 syntax), all required; `word*` as a prefix.
    static func matchExpression(_ query: String) throws(BusError) -> String {
        guard query.count <= maximumQueryLength else {
            throw .invalidArgument("field 'query' is longer than \(maximumQueryLength) characters")
        }
        var terms: [String] = []
        var remaining = Substring(query)
        while let first = remaining.first {
            if first.isWhitespace {
                remaining = remaining.dropFirst()
            } else if first == "\"" {
                let rest = remaining.dropFirst()
                let end = rest.firstIndex(of: "\"") ?? rest.endIndex
                terms.append(quoted(rest[..<end], prefix: false))
                remaining = end < rest.endIndex ? rest[rest.index(after: end)...] : rest[end...]
            } else {
                let end = remaining.firstIndex(where: \.isWhitespace) ?? remaining.endIndex
                let word = remaining[..<end]
                terms.append(quoted(word.hasSuffix("*") ? word.dropLast() : word, prefix: word.hasSuffix("*")))
                remaining = remaining[end...]
            }
        }
        terms.removeAll { $0.isEmpty }
        guard !terms.isEmpty else { throw .invalidArgument("field 'query' must contain at least one word") }
        return terms.joined(separator: " ")
    }

    /// `"text"` (or `"text"*`), or "" when the text has no letters or digits to search for.
    private static func quoted(_ text: Substring, prefix: Bool) -> String {
        guard text.contains(where: { $0.isLetter || $0.isNumber }) else { return "" }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" + (prefix ? "*" : "")
    }

    private static func hit(_ row: Row, _ db: Database, user: String) throws -> SearchHit {
        let kind = SearchKind(rawValue: row["kind"]) ?? .chunk
        let id: String = row["record_id"]
        let rank: Double = row["rank"]
        var hit = SearchHit(
            kind: kind, id: id, score: -rank, snippet: row["snippet"], title: row["title"],
            materialId: row["material_id"], subjectId: row["subject_id"])
        switch kind {
        case .chunk:
            if let details = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT c.page_number, c.start_seconds, m.title FROM chunk c
                JOIN material m ON m.user_id = c.user_id AND m.id = c.material_id WHERE c.user_id = ? AND c.id = ?
                """), arguments: [user, id]) {
                hit.pageNumber = details["page_number"]
                hit.startSeconds = details["start_seconds"]
                hit.title = details["title"]
            }
        case .flashcard:
            hit.setId = try String.fetchOne(db.cachedStatement(sql: "SELECT set_id FROM flashcard WHERE user_id = ? AND id = ?"), arguments: [user, id])
        case .note:
            hit.questionId = try String.fetchOne(db.cachedStatement(sql: "SELECT question_id FROM note WHERE user_id = ? AND id = ?"), arguments: [user, id])
        }
        return hit
    }
}
