import Bus
import Contracts
import Foundation
import GRDB
import Storage
import Wire

/// The requests of list methods: a page size and where the previous page ended.
protocol PagedRequest {
    var limit: Int? { get }
    var cursor: String? { get }
}

extension SubjectList: PagedRequest {}
extension MaterialList: PagedRequest {}
extension SourceDocumentList: PagedRequest {}
extension ChunkList: PagedRequest {}
extension FlashcardList: PagedRequest {}
extension FlashcardSetList: PagedRequest {}
extension QuestionList: PagedRequest {}
extension NoteList: PagedRequest {}
extension ConversationList: PagedRequest {}
extension MessageList: PagedRequest {}
extension StudySessionList: PagedRequest {}
extension StudyTaskList: PagedRequest {}

/// A list of one user's records: filters and a total order. Pages are cut by keyset (the last
/// row's sort keys), so they stay stable while rows are added or removed elsewhere in the list.
struct ListQuery: Sendable {
    /// One sort key: an SQL expression over the table's columns that is never NULL.
    struct Key: Sendable {
        var expression: String
        var descending: Bool
    }

    private(set) var conditions: [String] = []
    private(set) var arguments: [DatabaseValue] = []
    /// The sort keys; the last is always `id`, which makes the order total.
    let keys: [Key]

    /// A list ordered by `keys` then `id` (in the direction of the last key).
    init(orderBy keys: [Key]) {
        self.keys = keys + [Key(expression: "id", descending: keys.last?.descending ?? false)]
    }

    /// Ordered by one column.
    init(orderBy expression: String, descending: Bool = false) {
        self.init(orderBy: [Key(expression: expression, descending: descending)])
    }

    /// Adds a condition (ANDed with the others).
    mutating func filter(_ condition: String, _ values: any DatabaseValueConvertible...) {
        conditions.append(condition)
        arguments.append(contentsOf: values.map(\.databaseValue))
    }

    /// Adds `column = value` when `value` is given.
    mutating func filter(_ column: String, equals value: (any DatabaseValueConvertible)?) {
        if let value { filter("\(column) = ?", value) }
    }

    /// One page of `R` for `user`.
    /// - Throws: `INVALID_ARGUMENT` for a bad limit or a cursor this list did not return.
    func page<R: StoredRecord>(_ type: R.Type, _ db: Database, user: String, request: some PagedRequest) throws -> RecordPage<R> {
        let limit = try Field.int(request.limit, "limit", in: 1...StoreLimits.maximumPageSize, default: StoreLimits.defaultPageSize)
        var conditions = ["user_id = ?"] + self.conditions
        var arguments: [DatabaseValue] = [user.databaseValue] + self.arguments
        if let cursor = request.cursor {
            let after = try PageCursor.decode(cursor, list: R.table, keyCount: keys.count)
            var alternatives: [String] = []
            for index in keys.indices {
                let equal = keys[..<index].map { "\($0.expression) = ?" }
                let key = keys[index]
                alternatives.append("(" + (equal + ["\(key.expression) \(key.descending ? "<" : ">") ?"]).joined(separator: " AND ") + ")")
                arguments.append(contentsOf: after[...index])
            }
            conditions.append("(" + alternatives.joined(separator: " OR ") + ")")
        }
        let selectKeys = keys.enumerated().map { "\($1.expression) AS _key\($0)" }.joined(separator: ", ")
        let order = keys.map { "\($0.expression) \($0.descending ? "DESC" : "ASC")" }.joined(separator: ", ")
        let sql = "SELECT *, \(selectKeys) FROM \(R.table) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(order) LIMIT \(limit + 1)"
        let rows = try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments))
        let items = try rows.prefix(limit).map { try R(row: $0) }
        guard rows.count > limit, let last = rows.prefix(limit).last else { return RecordPage(items: items) }
        let lastKeys = keys.indices.map { last["_key\($0)"] as DatabaseValue }
        return RecordPage(items: items, nextCursor: PageCursor.encode(list: R.table, keys: lastKeys))
    }
}
