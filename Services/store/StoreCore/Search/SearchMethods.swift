import Bus
import Contracts
import Foundation
import GRDB
import Storage
import Wire

/// `search`: SQLite FTS5 over chunks, flashcards and notes (table `search_index`, kept by
/// ``SearchIndexer``), ranked by bm25 with titles weighing twice, with highlighted snippets.
enum SearchMethods {
    static func register(_ handlers: Handlers<StoreService>) {
        handlers.handle(Store.search) { store, request, context in
            let user = try context.requireUser()
            if try await store.database.pool.read({ db in try SearchIndexer.hasPending(db, user: user) }) {
                try await store.indexer.drain(user: user)
            }
            return try await store.read(context) { db, user in try run(request, db, user: user) }
        }
    }

    /// How many of the newest matches are ranked when a query matches more: bm25 costs time for
    /// every match it ranks, and a word in most of a user's entries ranks them nearly alike.
    static let rankedMatches = 1000

    static func run(_ request: SearchRequest, _ db: Database, user: String) throws -> SearchResponse {
        let terms = try matchExpression(request.query)
        let limit = try Field.int(request.limit, "limit", in: 1...100, default: 20)
        let offset = try request.cursor.map { cursor throws(BusError) -> Int64 in
            // Only the ranked matches are ever returned, so no cursor points past them.
            guard let offset = Int64.fromDatabaseValue(try PageCursor.decode(cursor, list: "search", keyCount: 1)[0]),
                  (0...Int64(rankedMatches)).contains(offset)
            else { throw PageCursor.invalid }
            return offset
        } ?? 0
        if let id = request.subjectId { try Field.id(id, "subjectId") }
        if let id = request.materialId { try Field.id(id, "materialId") }
        if let kinds = request.kinds { try Field.count(kinds, "kinds", in: 0...SearchKind.allCases.count) }
        let markers = SnippetMarkers(
            open: try highlightMarker(request.highlightOpen, "highlightOpen", default: "<mark>"),
            close: try highlightMarker(request.highlightClose, "highlightClose", default: "</mark>"))
        guard let number = try SearchIndexer.existingUserNumber(db, user) else { return SearchResponse(hits: []) }

        // The user's entries are the rowid range of their number; filters are tokens of `scope`.
        // (The words are not limited to title and body: a column filter costs time on every
        // match, and no word of a query looks like a scope token.)
        var match = terms
        if let id = request.subjectId { match += " AND scope : \"\(SearchIndexer.token("s", id))\"" }
        if let id = request.materialId { match += " AND scope : \"\(SearchIndexer.token("m", id))\"" }
        var kinds = ""
        if let wanted = request.kinds.map(Set.init), !wanted.isEmpty, wanted.count < SearchKind.allCases.count {
            kinds = " AND (rowid & 3) IN (\(wanted.map { String(code($0)) }.sorted().joined(separator: ", ")))"
        }
        let low = number << 40, high = (number + 1) << 40 - 1
        let threshold = try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid BETWEEN ? AND ?\(kinds)
            ORDER BY rowid DESC LIMIT 1 OFFSET \(rankedMatches - 1)
            """), arguments: [match, low, high]) ?? low
        // ORDER BY rank lets FTS5 sort by bm25 itself; snippets are made for returned rows only.
        let rows = try Row.fetchAll(SearchSnippet.statement(db, sql: """
            SELECT rowid, record_id, user_id, subject_id, material_id, title, rank, \(SearchSnippet.functionName)(search_index) AS snippet
            FROM search_index WHERE search_index MATCH ? AND rowid BETWEEN ? AND ?\(kinds)
            ORDER BY rank LIMIT \(limit + 1) OFFSET \(offset)
            """), arguments: [match, threshold, high])
        let hits = try rows.prefix(limit)
            .filter { row in
                // Exact checks behind the hashed tokens.
                row["user_id"] == user && (request.subjectId == nil || row["subject_id"] == request.subjectId)
                    && (request.materialId == nil || row["material_id"] == request.materialId)
            }
            .map { row in try hit(row, markers, db, user: user) }
        let next = rows.count > limit ? PageCursor.encode(list: "search", keys: [(offset + Int64(limit)).databaseValue]) : nil
        return SearchResponse(hits: hits, nextCursor: next)
    }

    /// The low two bits of an entry's rowid.
    static func code(_ kind: SearchKind) -> Int64 {
        switch kind {
        case .chunk: 1
        case .flashcard: 2
        case .note: 3
        }
    }

    /// Builds the FTS5 expression: each word and each `"quoted phrase"` as a quoted string (so
    /// no user input is read as FTS5 syntax), all required; `word*` as a prefix.
    static func matchExpression(_ query: String) throws(BusError) -> String {
        try Field.length(query, "query", maximum: StoreLimits.searchQueryLength)
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
        guard !terms.isEmpty else { throw Field.invalid("query", "must contain at least one word") }
        // Each term is a lookup in the index (a prefix, in every word it starts).
        guard terms.count <= StoreLimits.searchTerms else {
            throw Field.invalid("query", "must have at most \(StoreLimits.searchTerms) words and phrases, got \(terms.count)")
        }
        return terms.joined(separator: " ")
    }

    /// A highlight marker of at most ``StoreLimits/highlightMarkerBytes``.
    private static func highlightMarker(_ value: String?, _ name: String, default defaultValue: String) throws(BusError) -> String {
        guard let value else { return defaultValue }
        try Field.bytes(value, name, maximum: StoreLimits.highlightMarkerBytes)
        return value
    }

    /// `"text"` (or `"text"*`), or "" when the text has no letters or digits to search for.
    private static func quoted(_ text: Substring, prefix: Bool) -> String {
        guard text.contains(where: { $0.isLetter || $0.isNumber }) else { return "" }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" + (prefix ? "*" : "")
    }

    private static func hit(_ row: Row, _ markers: SnippetMarkers, _ db: Database, user: String) throws -> SearchHit {
        let rowid: Int64 = row["rowid"]
        let kind = SearchKind.allCases.first { code($0) == rowid & 3 } ?? .chunk
        let id: String = row["record_id"]
        let rank: Double = row["rank"]
        var hit = SearchHit(
            kind: kind, id: id, score: -rank, snippet: markers.render(row["snippet"]), title: (row["title"] as String?).map(SnippetMarkers.cut),
            materialId: row["material_id"], subjectId: row["subject_id"])
        switch kind {
        case .chunk:
            if let details = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT c.page_number, c.start_seconds, m.title FROM chunk c
                JOIN material m ON m.user_id = c.user_id AND m.id = c.material_id WHERE c.user_id = ? AND c.id = ?
                """), arguments: [user, id]) {
                hit.pageNumber = details["page_number"]
                hit.startSeconds = details["start_seconds"]
                hit.title = (details["title"] as String?).map(SnippetMarkers.cut)
            }
        case .flashcard:
            hit.setId = try String.fetchOne(db.cachedStatement(sql: "SELECT set_id FROM flashcard WHERE user_id = ? AND id = ?"), arguments: [user, id])
        case .note:
            hit.questionId = try String.fetchOne(db.cachedStatement(sql: "SELECT question_id FROM note WHERE user_id = ? AND id = ?"), arguments: [user, id])
        }
        return hit
    }
}
