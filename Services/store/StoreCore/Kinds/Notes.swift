import Bus
import Contracts
import Foundation
import GRDB
import Wire

extension QuestionCreate: CreateRequest {}
extension QuestionUpdate: UpdateRequest {}
extension NoteCreate: CreateRequest {}
extension NoteUpdate: UpdateRequest {}

/// Questions of the notes Q&A (C11S House). Deleting one deletes its note.
enum QuestionRecords: RecordKind {
    static func make(_ request: QuestionCreate, _ changes: Changes) throws -> Question {
        Question(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            text: try Field.text(request.text, "text", maximum: StoreLimits.questionLength),
            category: try Field.text(request.category, "category", maximum: StoreLimits.labelLength),
            displayOrder: try Field.int(request.displayOrder, "displayOrder", in: Int(Int32.min)...Int(Int32.max), default: 0),
            isRequired: request.isRequired ?? false,
            hint: try Field.optionalText(request.hint, "hint", maximum: StoreLimits.questionLength),
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: QuestionUpdate, to record: Question, _ changes: Changes) throws -> Question {
        var question = record
        if let text = request.text { question.text = try Field.text(text, "text", maximum: StoreLimits.questionLength) }
        if let category = request.category { question.category = try Field.text(category, "category", maximum: StoreLimits.labelLength) }
        if let order = request.displayOrder { question.displayOrder = try Field.int(order, "displayOrder", in: Int(Int32.min)...Int(Int32.max)) }
        if let isRequired = request.isRequired { question.isRequired = isRequired }
        if let hint = request.hint { question.hint = try Field.optionalText(hint, "hint", maximum: StoreLimits.questionLength) }
        return question
    }

    static func remove(_ question: Question, _ changes: Changes) throws {
        for note in try changes.all(Note.self, where: "question_id = ?", [question.id]) { try changes.delete(note) }
        try changes.delete(question)
    }

    static func query(_ request: QuestionList) throws -> ListQuery {
        var query = ListQuery(orderBy: [.init(expression: "display_order", descending: false), .init(expression: "created_at", descending: false)])
        query.filter("category", equals: request.category)
        return query
    }

    /// `notes.completion`: answered (non-blank note) questions overall, required, per category.
    static func completion(_ request: NotesCompletionRequest, _ db: Database, user: String) throws -> NotesCompletion {
        var sql = """
            SELECT q.category, q.is_required,
                   n.answer IS NOT NULL AND trim(n.answer, ' ' || char(9, 10, 13)) <> '' AS answered
            FROM question q LEFT JOIN note n ON n.user_id = q.user_id AND n.question_id = q.id
            WHERE q.user_id = ?
            """
        var arguments: [any DatabaseValueConvertible] = [user]
        if let category = request.category {
            sql += " AND q.category = ?"
            arguments.append(category)
        }
        var categories: [String: (answered: Int, total: Int)] = [:]
        var required = (answered: 0, total: 0)
        for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)) {
            let answered: Bool = row["answered"], isRequired: Bool = row["is_required"]
            categories[row["category"], default: (0, 0)].total += 1
            if answered { categories[row["category"], default: (0, 0)].answered += 1 }
            if isRequired {
                required.total += 1
                if answered { required.answered += 1 }
            }
        }
        func percentage(_ answered: Int, _ total: Int) -> Double { total == 0 ? 0 : Double(answered) / Double(total) * 100 }
        let answered = categories.values.reduce(0) { $0 + $1.answered }, total = categories.values.reduce(0) { $0 + $1.total }
        return NotesCompletion(
            answered: answered, total: total, percentage: percentage(answered, total),
            requiredAnswered: required.answered, requiredTotal: required.total,
            categories: categories.keys.sorted().map { name in
                let counts = categories[name]!
                return CategoryCompletion(category: name, answered: counts.answered, total: counts.total, percentage: percentage(counts.answered, counts.total))
            })
    }
}

/// Notes: the answer to one question each.
enum NoteRecords: RecordKind {
    static func make(_ request: NoteCreate, _ changes: Changes) throws -> Note {
        try Field.id(request.questionId, "questionId")
        let question = try changes.require(Question.self, request.questionId, field: "questionId")
        let id = try StoreID.givenOrNew(request.id)
        if let other = try changes.all(Note.self, where: "question_id = ?", [question.id]).first, other.id != id {
            throw BusError.alreadyExists("question '\(question.id)' already has note '\(other.id)'; update that one")
        }
        try Field.length(request.answer, "answer", maximum: StoreLimits.textLength)
        return Note(
            id: id, userId: changes.user, questionId: question.id, answer: request.answer,
            metadata: try metadata(request.metadata), createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: NoteUpdate, to record: Note, _ changes: Changes) throws -> Note {
        var note = record
        if let answer = request.answer {
            try Field.length(answer, "answer", maximum: StoreLimits.textLength)
            note.answer = answer
        }
        if request.metadata != nil { note.metadata = try metadata(request.metadata) }
        return note
    }

    static func query(_ request: NoteList) throws -> ListQuery {
        var query = ListQuery(orderBy: "pk")
        if let id = request.questionId { try Field.id(id, "questionId") }
        query.filter("question_id", equals: request.questionId)
        return query
    }

    private static func metadata(_ values: [String: String]?) throws(BusError) -> [String: String] {
        guard let values else { return [:] }
        try Field.count(values, "metadata", in: 0...StoreLimits.metadataEntries)
        for (key, value) in values {
            try Field.text(key, "metadata key", maximum: StoreLimits.labelLength)
            try Field.length(value, "metadata.\(key)", maximum: StoreLimits.questionLength)
        }
        return values
    }
}
