import Foundation
import Wire

// The records the store owns (docs/services/store.md). Every record carries `id`, `userId`,
// `createdAt` and `updatedAt`; references to other records are ids of the same user's records.

// MARK: - Enums

/// Where a material's processing stands.
public enum MaterialStatus: String, WireEnum {
    /// Created; no worker has started on it.
    case pending
    /// A worker is turning it into text, chunks and cards (`processingStartedAt` says since when).
    case processing
    /// Processed: its source document, chunks and generated cards are stored.
    case ready
    /// Processing failed; `failureReason` says why.
    case failed
}

/// What kind of source a material was made from.
public enum MaterialSourceKind: String, WireEnum {
    case pdf, docx, txt, md, image, audio, video, text
}

/// The kind of a flashcard.
public enum FlashcardKind: String, WireEnum {
    /// A question on the front, its answer on the back.
    case qa
    /// A sentence with a gap on the front, the missing words on the back.
    case cloze
    /// A term on the front, its definition on the back.
    case definition
}

/// Who wrote a conversation message.
public enum ConversationRole: String, WireEnum {
    case user, assistant, system
}

// MARK: - Records

/// A subject (Math, Physics, …) that materials, sets, sessions and tasks can belong to.
public struct Subject: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var name: String
    /// A display colour such as `#4A90E2`, if the app chose one.
    public var color: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, userId: String, name: String, color: String? = nil, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.name = name
        self.color = color
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A study material: an uploaded file or typed text, and what processing made of it.
public struct Material: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var title: String
    public var subjectId: String?
    public var sourceKind: MaterialSourceKind
    public var fileName: String?
    public var mimeType: String?
    /// Size of the original file in bytes (0 when there is none).
    public var sizeBytes: Int
    /// Lowercase hex SHA-256 of the original file, when one is stored (`materials.original`).
    public var sha256: String?
    public var status: MaterialStatus
    /// Why processing failed (status `failed`).
    public var failureReason: String?
    /// When the current processing attempt started (status `processing`).
    public var processingStartedAt: Date?
    public var summary: String?
    public var keywords: [String]
    public var isArchived: Bool
    public var isPriority: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, title: String, subjectId: String? = nil, sourceKind: MaterialSourceKind,
        fileName: String? = nil, mimeType: String? = nil, sizeBytes: Int = 0, sha256: String? = nil,
        status: MaterialStatus, failureReason: String? = nil, processingStartedAt: Date? = nil, summary: String? = nil,
        keywords: [String] = [], isArchived: Bool = false, isPriority: Bool = false, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.title = title
        self.subjectId = subjectId
        self.sourceKind = sourceKind
        self.fileName = fileName
        self.mimeType = mimeType
        self.sizeBytes = sizeBytes
        self.sha256 = sha256
        self.status = status
        self.failureReason = failureReason
        self.processingStartedAt = processingStartedAt
        self.summary = summary
        self.keywords = keywords
        self.isArchived = isArchived
        self.isPriority = isPriority
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// The text-bearing document processing extracted from a material (CardGenie's SourceDocument).
public struct SourceDocument: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var materialId: String
    public var kind: MaterialSourceKind
    public var title: String?
    /// Characters (Unicode scalars) of extracted text over all its chunks.
    public var characterCount: Int
    public var pageCount: Int?
    public var durationSeconds: Double?
    /// BCP 47 language tag of the text, if detected (`en`, `it`, …).
    public var language: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, materialId: String, kind: MaterialSourceKind, title: String? = nil, characterCount: Int = 0,
        pageCount: Int? = nil, durationSeconds: Double? = nil, language: String? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.materialId = materialId
        self.kind = kind
        self.title = title
        self.characterCount = characterCount
        self.pageCount = pageCount
        self.durationSeconds = durationSeconds
        self.language = language
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One segment of a source document's text, where it came from, in reading order.
public struct NoteChunk: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var materialId: String
    public var sourceDocumentId: String
    /// Position in the document, from 0.
    public var ordinal: Int
    public var text: String
    /// Page the text is on (PDFs, scans), from 1.
    public var pageNumber: Int?
    /// Where the text starts and ends in a recording, in seconds.
    public var startSeconds: Double?
    public var endSeconds: Double?
    /// Offsets of the text in the document's full text, in characters (Unicode scalars; end
    /// exclusive).
    public var startOffset: Int
    public var endOffset: Int
    /// The title of the section the text is in (a heading of the document), if any.
    public var section: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, materialId: String, sourceDocumentId: String, ordinal: Int, text: String,
        pageNumber: Int? = nil, startSeconds: Double? = nil, endSeconds: Double? = nil, startOffset: Int, endOffset: Int,
        section: String? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.section = section
        self.id = id
        self.userId = userId
        self.materialId = materialId
        self.sourceDocumentId = sourceDocumentId
        self.ordinal = ordinal
        self.text = text
        self.pageNumber = pageNumber
        self.startSeconds = startSeconds
        self.endSeconds = endSeconds
        self.startOffset = startOffset
        self.endOffset = endOffset
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A flashcard; it may belong to a set and link back to the material and chunk it came from.
public struct Flashcard: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var front: String
    public var back: String
    public var kind: FlashcardKind
    public var tags: [String]
    public var setId: String?
    public var materialId: String?
    public var chunkId: String?
    /// The card's subject: given, or taken from its set or material when it was created.
    public var subjectId: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, front: String, back: String, kind: FlashcardKind = .qa, tags: [String] = [],
        setId: String? = nil, materialId: String? = nil, chunkId: String? = nil, subjectId: String? = nil,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.front = front
        self.back = back
        self.kind = kind
        self.tags = tags
        self.setId = setId
        self.materialId = materialId
        self.chunkId = chunkId
        self.subjectId = subjectId
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A named group of flashcards (a deck). Deleting it deletes its cards.
public struct FlashcardSet: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var name: String
    public var topic: String?
    public var subjectId: String?
    /// The material whose generated cards it holds, if it was made by `materials.put`.
    public var materialId: String?
    /// How many cards are in it now (maintained by the store).
    public var cardCount: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, name: String, topic: String? = nil, subjectId: String? = nil, materialId: String? = nil,
        cardCount: Int = 0, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.name = name
        self.topic = topic
        self.subjectId = subjectId
        self.materialId = materialId
        self.cardCount = cardCount
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A question of the notes Q&A (C11S House), answered by at most one note.
public struct Question: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var text: String
    public var category: String
    /// Where it is shown, ascending; ties by creation.
    public var displayOrder: Int
    public var isRequired: Bool
    public var hint: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, text: String, category: String, displayOrder: Int = 0, isRequired: Bool = false,
        hint: String? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.text = text
        self.category = category
        self.displayOrder = displayOrder
        self.isRequired = isRequired
        self.hint = hint
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A note answering a question. A question counts as answered when its note's answer is not blank.
public struct Note: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var questionId: String
    public var answer: String
    public var metadata: [String: String]
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, userId: String, questionId: String, answer: String, metadata: [String: String] = [:], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.questionId = questionId
        self.answer = answer
        self.metadata = metadata
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A tutor conversation, optionally about a material or a set.
public struct Conversation: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var title: String
    public var materialId: String?
    public var setId: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, userId: String, title: String, materialId: String? = nil, setId: String? = nil, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.title = title
        self.materialId = materialId
        self.setId = setId
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One message of a conversation.
public struct ConversationMessage: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var conversationId: String
    public var role: ConversationRole
    public var text: String
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, userId: String, conversationId: String, role: ConversationRole, text: String, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.conversationId = conversationId
        self.role = role
        self.text = text
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A study session: when the user studied, what, and how many cards they reviewed.
public struct StudySession: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var subjectId: String?
    public var setId: String?
    public var startedAt: Date
    /// When it ended; `nil` while it is going on.
    public var endedAt: Date?
    public var cardsReviewed: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, subjectId: String? = nil, setId: String? = nil, startedAt: Date, endedAt: Date? = nil,
        cardsReviewed: Int = 0, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.subjectId = subjectId
        self.setId = setId
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.cardsReviewed = cardsReviewed
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A to-do for the "today" view.
public struct StudyTask: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var title: String
    public var dueAt: Date?
    public var isDone: Bool
    /// When it was marked done.
    public var doneAt: Date?
    public var subjectId: String?
    public var materialId: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, title: String, dueAt: Date? = nil, isDone: Bool = false, doneAt: Date? = nil,
        subjectId: String? = nil, materialId: String? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.title = title
        self.dueAt = dueAt
        self.isDone = isDone
        self.doneAt = doneAt
        self.subjectId = subjectId
        self.materialId = materialId
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

// MARK: - Common

/// A request naming one record by id.
public struct RecordID: Codable, Sendable, Equatable {
    public var id: String
    public init(id: String) { self.id = id }
}

/// One page of a list, in the list's stable order. Pass `nextCursor` back as `cursor` for the
/// next page; it is absent on the last page. Cursors are opaque.
public struct RecordPage<Item: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    public var items: [Item]
    public var nextCursor: String?
    public init(items: [Item], nextCursor: String? = nil) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// The store's limits, enforced with `INVALID_ARGUMENT` and a message naming the limit.
public enum StoreLimits {
    /// Longest id a client may choose (letters, digits, `-`, `_`, `.`, `:`).
    public static let idLength = 64
    /// Titles and names (materials, subjects, sets, tasks, conversations).
    public static let titleLength = 200
    /// Short labels: tags, keywords, categories, colours. Characters are Unicode scalars
    /// throughout.
    public static let labelLength = 100
    public static let fileNameLength = 255
    public static let mimeTypeLength = 127
    /// Card front and back, question hint, summary.
    public static let cardSideLength = 10_000
    public static let summaryLength = 20_000
    public static let questionLength = 1_000
    /// Note answers, chunk texts and message texts.
    public static let textLength = 100_000
    public static let tagsPerCard = 20
    public static let keywordsPerMaterial = 50
    public static let metadataEntries = 20
    /// Size of a material's original file.
    public static let materialBytes = 50 * 1024 * 1024
    public static let imageBytes = 10 * 1024 * 1024
    /// A recording: 50 MB holds a three-hour lecture at 32 kbps (ingest splits it for transcription).
    public static let audioBytes = 50 * 1024 * 1024
    /// Per `materials.put`.
    public static let chunksPerPut = 20_000
    public static let flashcardsPerPut = 5_000
    /// Tasks and sessions together, per `materials.put`.
    public static let calendarEntriesPerPut = 500
    /// Failure reasons are cut to this length rather than refused.
    public static let failureReasonLength = 2_000
    /// Page sizes: lists default to 50 and take at most 500.
    public static let defaultPageSize = 50
    public static let maximumPageSize = 500
    /// Changes per `sync.push`.
    public static let changesPerPush = 500
    /// Exports larger than this go in the reply's attachment frame instead of `content`.
    public static let inlineExportBytes = 64 * 1024
    /// Chunk offsets, in characters into their document: 0…10^12.
    public static let maximumOffset = 1_000_000_000_000
    /// Media times in seconds (a chunk's start and end, a document's duration): 0…10^9.
    public static let maximumMediaSeconds: Double = 1_000_000_000
    /// `materials.stuck`'s `olderThanSeconds`: 1…315,360,000 (ten years).
    public static let maximumStuckAgeSeconds: Double = 315_360_000
    /// Page cursors are opaque and at most this many characters.
    public static let cursorLength = 4096
    /// `search`: the query's characters and its words and phrases.
    public static let searchQueryLength = 500
    public static let searchTerms = 32
    /// `search`: each highlight marker, in bytes of UTF-8.
    public static let highlightMarkerBytes = 32
    /// `search`: a snippet's characters (markers not counted) and highlighted matches; a hit's
    /// title is cut at ``titleLength``.
    public static let snippetLength = 300
    public static let snippetHighlights = 16
    /// `search`: the most bytes one hit takes in the reply (with the longest markers and
    /// fields, every character escaped); a reply is at most `limit` of these and 1 KiB.
    public static let searchHitBytes = 10 * 1024
}
