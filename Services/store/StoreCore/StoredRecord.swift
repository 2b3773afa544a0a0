import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// A record type of the contract as a row of one table: snake_case columns, Unix-millisecond
/// times, arrays and dictionaries as JSON text; plus what the write path needs to know about it
/// (its sync kind and the topics of its events). Public only because GRDB's record protocols
/// are: their requirements (the column and date strategies below) must be public.
public protocol StoredRecord: Codable, Sendable, Equatable, FetchableRecord, EncodableRecord {
    /// The table holding it.
    static var table: String { get }
    /// What error messages call it: `material`, `source document`.
    static var noun: String { get }
    /// Its kind in sync and in `RecordDeleted`; `nil` when sync does not carry it.
    static var syncKind: SyncKind? { get }
    static var createdTopic: Topic<Self>? { get }
    static var updatedTopic: Topic<Self>? { get }
    /// `nil` for flashcards, whose deletion has its own payload.
    static var deletedTopic: Topic<RecordDeleted>? { get }

    var id: String { get }
    var userId: String { get }
    var createdAt: Date { get set }
    var updatedAt: Date { get set }
}

extension StoredRecord {
    // GRDB's own snake-case conversion is general and slow; our keys are plain ASCII camelCase.
    public static var databaseColumnDecodingStrategy: DatabaseColumnDecodingStrategy { .custom { ColumnName(camelCase: $0) } }
    public static var databaseColumnEncodingStrategy: DatabaseColumnEncodingStrategy { .custom { ColumnName.snakeCase($0.stringValue) } }
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .millisecondsSince1970 }
    // Rounded, not floored like GRDB's own: a date parsed from "…10.123Z" is 10.12299999… s.
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .custom { $0.unixMilliseconds } }

    public static var createdTopic: Topic<Self>? { nil }
    public static var updatedTopic: Topic<Self>? { nil }
    public static var deletedTopic: Topic<RecordDeleted>? { nil }
}

/// Column names from coding keys and back: `userId` is `user_id`.
struct ColumnName: CodingKey, Sendable {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }

    /// The key of a snake_case column.
    init(camelCase column: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(column.utf8.count)
        var upper = false
        for byte in column.utf8 {
            if byte == UInt8(ascii: "_") {
                upper = true
            } else {
                bytes.append(upper && byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") ? byte - 32 : byte)
                upper = false
            }
        }
        stringValue = String(decoding: bytes, as: UTF8.self)
    }

    /// The snake_case column of a camelCase key.
    static func snakeCase(_ key: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(key.utf8.count + 4)
        for byte in key.utf8 {
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") {
                bytes.append(UInt8(ascii: "_"))
                bytes.append(byte + 32)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Date {
    /// The same instant at the millisecond precision the store keeps, so that a record returned
    /// by a write equals the record read back later.
    var atStorePrecision: Date { Date(unixMilliseconds: unixMilliseconds) }
}

// Enums are stored as their raw strings.
extension MaterialStatus: DatabaseValueConvertible {}
extension MaterialSourceKind: DatabaseValueConvertible {}
extension FlashcardKind: DatabaseValueConvertible {}
extension ConversationRole: DatabaseValueConvertible {}
extension SyncKind: DatabaseValueConvertible {}
extension SearchKind: DatabaseValueConvertible {}

extension Subject: StoredRecord {
    public static let table = "subject"
    public static let noun = "subject"
    public static let syncKind: SyncKind? = .subject
    public static var createdTopic: Topic<Subject>? { Store.subjectCreated }
    public static var updatedTopic: Topic<Subject>? { Store.subjectUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.subjectDeleted }
}

extension Material: StoredRecord {
    public static let table = "material"
    public static let noun = "material"
    public static let syncKind: SyncKind? = .material
    public static var createdTopic: Topic<Material>? { Store.materialCreated }
    public static var updatedTopic: Topic<Material>? { Store.materialUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.materialDeleted }
}

extension SourceDocument: StoredRecord {
    public static let table = "source_document"
    public static let noun = "source document"
    public static let syncKind: SyncKind? = nil
}

extension NoteChunk: StoredRecord {
    public static let table = "chunk"
    public static let noun = "chunk"
    public static let syncKind: SyncKind? = nil
}

extension Flashcard: StoredRecord {
    public static let table = "flashcard"
    public static let noun = "flashcard"
    public static let syncKind: SyncKind? = .flashcard
    public static var createdTopic: Topic<Flashcard>? { Store.flashcardCreated }
    public static var updatedTopic: Topic<Flashcard>? { Store.flashcardUpdated }
}

extension FlashcardSet: StoredRecord {
    public static let table = "flashcard_set"
    public static let noun = "set"
    public static let syncKind: SyncKind? = .set
    public static var createdTopic: Topic<FlashcardSet>? { Store.setCreated }
    public static var updatedTopic: Topic<FlashcardSet>? { Store.setUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.setDeleted }
}

extension Question: StoredRecord {
    public static let table = "question"
    public static let noun = "question"
    public static let syncKind: SyncKind? = .question
    public static var createdTopic: Topic<Question>? { Store.questionCreated }
    public static var updatedTopic: Topic<Question>? { Store.questionUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.questionDeleted }
}

extension Note: StoredRecord {
    public static let table = "note"
    public static let noun = "note"
    public static let syncKind: SyncKind? = .note
    public static var createdTopic: Topic<Note>? { Store.noteCreated }
    public static var updatedTopic: Topic<Note>? { Store.noteUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.noteDeleted }
}

extension Conversation: StoredRecord {
    public static let table = "conversation"
    public static let noun = "conversation"
    public static let syncKind: SyncKind? = .conversation
    public static var createdTopic: Topic<Conversation>? { Store.conversationCreated }
    public static var updatedTopic: Topic<Conversation>? { Store.conversationUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.conversationDeleted }
}

extension ConversationMessage: StoredRecord {
    public static let table = "message"
    public static let noun = "message"
    public static let syncKind: SyncKind? = .message
    public static var createdTopic: Topic<ConversationMessage>? { Store.messageCreated }
    public static var updatedTopic: Topic<ConversationMessage>? { Store.messageUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.messageDeleted }
}

extension StudySession: StoredRecord {
    public static let table = "study_session"
    public static let noun = "study session"
    public static let syncKind: SyncKind? = .session
    public static var createdTopic: Topic<StudySession>? { Store.sessionCreated }
    public static var updatedTopic: Topic<StudySession>? { Store.sessionUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.sessionDeleted }
}

extension StudyTask: StoredRecord {
    public static let table = "task"
    public static let noun = "task"
    public static let syncKind: SyncKind? = .task
    public static var createdTopic: Topic<StudyTask>? { Store.taskCreated }
    public static var updatedTopic: Topic<StudyTask>? { Store.taskUpdated }
    public static var deletedTopic: Topic<RecordDeleted>? { Store.taskDeleted }
}
