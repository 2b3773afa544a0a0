import Bus
import Contracts
import Foundation
import GRDB
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

/// Opaque page cursors: base64url of `{"l": list, "k": [sort keys of the last row]}`.
enum PageCursor {
    static let invalid = Field.invalid("cursor", "is not a cursor this list returned")

    static func encode(list: String, keys: [DatabaseValue]) -> String {
        let values: [JSONValue] = keys.map { value in
            switch value.storage {
            case .int64(let number): .int(number)
            case .double(let number): .double(number)
            case .string(let text): .string(text)
            case .blob, .null: .null
            }
        }
        return Base64URL.encode(Data(JSONValue.object(["l": .string(list), "k": .array(values)]).jsonText.utf8))
    }

    static func decode(_ cursor: String, list: String, keyCount: Int) throws(BusError) -> [DatabaseValue] {
        guard cursor.utf8.count <= StoreLimits.cursorLength, let data = Base64URL.decode(cursor),
              let object = try? JSONValue.parse(data).objectValue,
              object["l"]?.stringValue == list, let keys = object["k"]?.arrayValue, keys.count == keyCount
        else { throw invalid }
        return keys.map { key in
            if let number = key.intValue { return number.databaseValue }
            if let number = key.doubleValue { return number.databaseValue }
            if let text = key.stringValue { return text.databaseValue }
            return .null
        }
    }
}

/// URL-safe base64 without padding, for cursors.
enum Base64URL {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
