import Foundation
import Wire

// Requests of the store's CRUD methods. Conventions (docs/services/store.md):
// - `…Create`: the fields of a new record. `id` is optional: the store makes one, or takes the
//   client's (offline-first apps); an id already used by the same user is ALREADY_EXISTS.
// - `…Update`: `id` plus the fields to change; an absent field is left as it is. A nullable
//   reference or text (`subjectId`, `hint`, `color`…) is cleared by sending an empty string;
//   `tasks.update` clears a due date with `clearDueAt`.
// - `…List`: `limit` (1…500, default 50), `cursor` from the previous page, and filters.

// MARK: - Subjects

/// `subjects.create`.
public struct SubjectCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var name: String
    public var color: String?
    public init(id: String? = nil, name: String, color: String? = nil) {
        self.id = id
        self.name = name
        self.color = color
    }
}

/// `subjects.update`.
public struct SubjectUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var name: String?
    public var color: String?
    public init(id: String, name: String? = nil, color: String? = nil) {
        self.id = id
        self.name = name
        self.color = color
    }
}

/// `subjects.delete`.
public struct SubjectDelete: Codable, Sendable, Equatable {
    public var id: String
    /// `true`: the subject's materials are deleted too, each as `materials.delete` deletes it
    /// (documents, chunks, flashcards); absent or `false`: they stay, without subject. Sets,
    /// cards, sessions and tasks stay in either case, without subject.
    public var cascade: Bool?
    public init(id: String, cascade: Bool? = nil) {
        self.id = id
        self.cascade = cascade
    }
}

/// `subjects.list`: by name.
public struct SubjectList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public init(limit: Int? = nil, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }
}

// MARK: - Materials

/// `materials.create`: a material without an original file (typed text, a link), status
/// `pending` unless said otherwise. Files go through `materials.upload`.
public struct MaterialCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var title: String
    public var subjectId: String?
    public var sourceKind: MaterialSourceKind
    public var fileName: String?
    public var mimeType: String?
    public var status: MaterialStatus?
    public var summary: String?
    public var keywords: [String]?
    public var isArchived: Bool?
    public var isPriority: Bool?
    public init(
        id: String? = nil, title: String, subjectId: String? = nil, sourceKind: MaterialSourceKind, fileName: String? = nil,
        mimeType: String? = nil, status: MaterialStatus? = nil, summary: String? = nil, keywords: [String]? = nil,
        isArchived: Bool? = nil, isPriority: Bool? = nil
    ) {
        self.id = id
        self.title = title
        self.subjectId = subjectId
        self.sourceKind = sourceKind
        self.fileName = fileName
        self.mimeType = mimeType
        self.status = status
        self.summary = summary
        self.keywords = keywords
        self.isArchived = isArchived
        self.isPriority = isPriority
    }
}

/// `materials.update`: what the user edits. Status changes go through `materials.startProcessing`,
/// `materials.put` and `materials.fail`.
public struct MaterialUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var title: String?
    public var subjectId: String?
    public var summary: String?
    public var keywords: [String]?
    public var isArchived: Bool?
    public var isPriority: Bool?
    public init(
        id: String, title: String? = nil, subjectId: String? = nil, summary: String? = nil, keywords: [String]? = nil,
        isArchived: Bool? = nil, isPriority: Bool? = nil
    ) {
        self.id = id
        self.title = title
        self.subjectId = subjectId
        self.summary = summary
        self.keywords = keywords
        self.isArchived = isArchived
        self.isPriority = isPriority
    }
}

/// `materials.list`: newest first.
public struct MaterialList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var subjectId: String?
    public var status: MaterialStatus?
    /// `true`: only archived; `false`: only not archived; absent: both.
    public var isArchived: Bool?
    public init(limit: Int? = nil, cursor: String? = nil, subjectId: String? = nil, status: MaterialStatus? = nil, isArchived: Bool? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.subjectId = subjectId
        self.status = status
        self.isArchived = isArchived
    }
}

/// `materials.upload`: a material with its original file in the request's **attachment frame**
/// (required). The file is stored content-addressed by SHA-256: uploading the same bytes again
/// (same user) returns the existing material with `duplicate: true` and changes nothing.
/// Limits: 50 MB, images 10 MB.
public struct MaterialUpload: Codable, Sendable, Equatable {
    public var id: String?
    public var title: String
    public var subjectId: String?
    public var sourceKind: MaterialSourceKind
    public var fileName: String?
    public var mimeType: String?
    /// `processing` (the default: the caller is the worker that will process it, and
    /// `processingStartedAt` is set) or `pending`.
    public var status: MaterialStatus?
    public var isPriority: Bool?
    public init(
        id: String? = nil, title: String, subjectId: String? = nil, sourceKind: MaterialSourceKind, fileName: String? = nil,
        mimeType: String? = nil, status: MaterialStatus? = nil, isPriority: Bool? = nil
    ) {
        self.id = id
        self.title = title
        self.subjectId = subjectId
        self.sourceKind = sourceKind
        self.fileName = fileName
        self.mimeType = mimeType
        self.status = status
        self.isPriority = isPriority
    }
}

/// `materials.upload` response.
public struct MaterialUploadResult: Codable, Sendable, Equatable {
    public var material: Material
    /// The user already had this exact file: `material` is the existing one, unchanged.
    public var duplicate: Bool
    public init(material: Material, duplicate: Bool) {
        self.material = material
        self.duplicate = duplicate
    }
}

/// `materials.fail`: marks a `pending` or `processing` material `failed` and publishes
/// `ingest.failed` in the same transaction.
public struct MaterialFail: Codable, Sendable, Equatable {
    public var id: String
    /// Why; longer than 2,000 characters is cut.
    public var reason: String
    public init(id: String, reason: String) {
        self.id = id
        self.reason = reason
    }
}

/// `materials.original` response; the bytes are in the reply's attachment frame.
/// `materials.text`: a material's whole text, as an app's `content` field holds it.
public struct MaterialText: Codable, Sendable, Equatable {
    public var id: String
    /// Each source document's text, rebuilt from its chunks in order without the part a chunk
    /// repeats of the one before; documents separated by a blank line. Empty before processing.
    public var text: String
    /// Unicode scalars in `text`.
    public var characterCount: Int
    public var documentCount: Int
    public init(id: String, text: String, characterCount: Int, documentCount: Int) {
        self.id = id
        self.text = text
        self.characterCount = characterCount
        self.documentCount = documentCount
    }
}

public struct MaterialOriginal: Codable, Sendable, Equatable {
    public var id: String
    public var sha256: String
    public var sizeBytes: Int
    public var fileName: String?
    public var mimeType: String?
    public var sourceKind: MaterialSourceKind
    public init(id: String, sha256: String, sizeBytes: Int, fileName: String?, mimeType: String?, sourceKind: MaterialSourceKind) {
        self.id = id
        self.sha256 = sha256
        self.sizeBytes = sizeBytes
        self.fileName = fileName
        self.mimeType = mimeType
        self.sourceKind = sourceKind
    }
}

/// `materials.renew`: the job of the attempt that started at `attemptStartedAt` (the material's
/// `processingStartedAt`) still runs. A job that may take longer than the sweep's age (a long
/// lecture) renews its material, so that no worker takes it for lost.
public struct MaterialRenew: Codable, Sendable, Equatable {
    public var id: String
    public var attemptStartedAt: Date
    public init(id: String, attemptStartedAt: Date) {
        self.id = id
        self.attemptStartedAt = attemptStartedAt
    }
}

/// `materials.stuck`: materials in `processing` whose attempt started, or was last renewed
/// (`materials.renew`), more than `olderThanSeconds` ago (a worker was lost). With a `user` header only that user's; without
/// one, every user's (the ingest sweep); only ids and owners are returned.
public struct StuckMaterialsRequest: Codable, Sendable, Equatable {
    /// 1…315,360,000 (ten years); default 600.
    public var olderThanSeconds: Double?
    /// 1…1000, default 100.
    public var limit: Int?
    public init(olderThanSeconds: Double? = nil, limit: Int? = nil) {
        self.olderThanSeconds = olderThanSeconds
        self.limit = limit
    }
}

/// One material stuck in `processing`.
public struct StuckMaterial: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var processingStartedAt: Date
    public var sha256: String?
    public init(id: String, userId: String, processingStartedAt: Date, sha256: String?) {
        self.id = id
        self.userId = userId
        self.processingStartedAt = processingStartedAt
        self.sha256 = sha256
    }
}

/// `materials.stuck` response, oldest attempt first.
public struct StuckMaterials: Codable, Sendable, Equatable {
    public var materials: [StuckMaterial]
    public init(materials: [StuckMaterial]) { self.materials = materials }
}

// MARK: materials.put

/// `materials.put` (used by ingest): writes a material's processing result — its source
/// document, every chunk and the generated flashcards — and marks it `ready`, in **one
/// transaction** that also appends `material.updated` (or `.created`), `flashcard.created` for
/// each card, `set.created` if a set was made, and `material.ingested`. Idempotent under the
/// request's `idem` key: a repeat returns the first result and writes nothing.
///
/// The material is `materialId`'s (an upload, status pending/processing/failed) or, when absent
/// or unknown, created here (then `title` and `sourceKind` are required). A material that is
/// already `ready` is FAILED_PRECONDITION unless `replace` is true: then its previous source
/// documents, chunks and flashcards are removed (with `flashcard.deleted` events) first.
public struct MaterialPut: Codable, Sendable, Equatable {
    public var materialId: String?
    public var title: String?
    public var subjectId: String?
    public var sourceKind: MaterialSourceKind?
    public var fileName: String?
    public var mimeType: String?
    public var summary: String?
    public var keywords: [String]?
    public var sourceDocument: SourceDocumentInput
    /// In any order; `ordinal`s must be distinct. At most 20,000.
    public var chunks: [ChunkInput]
    /// At most 5,000.
    public var flashcards: [GeneratedFlashcard]
    /// Put the cards in this existing set…
    public var setId: String?
    /// …or in a new set of this name (topic: the material's title).
    public var newSetName: String?
    public var replace: Bool?
    /// Write only while the material is `processing` (else FAILED_PRECONDITION, nothing
    /// written): an ingest job's result, refused once the job was cancelled or failed meanwhile.
    public var onlyIfProcessing: Bool?
    /// With ``onlyIfProcessing``: write only for the attempt that took the material at this
    /// time (the material's `processingStartedAt` then), else FAILED_PRECONDITION: a worker that
    /// missed a cancel cannot write into a retry started since.
    public var attemptStartedAt: Date?
    /// Tasks taken from the material (a calendar's to-dos), written in the same transaction.
    /// `materialId` defaults to this material and `subjectId` to its subject; a task whose `id`
    /// the user already has is left as it is. At most 500 with `sessions`.
    public var tasks: [StudyTaskCreate]?
    /// Study sessions taken from the material (a calendar's events), likewise.
    public var sessions: [StudySessionCreate]?
    public init(
        materialId: String? = nil, title: String? = nil, subjectId: String? = nil, sourceKind: MaterialSourceKind? = nil,
        fileName: String? = nil, mimeType: String? = nil, summary: String? = nil, keywords: [String]? = nil,
        sourceDocument: SourceDocumentInput, chunks: [ChunkInput], flashcards: [GeneratedFlashcard] = [],
        setId: String? = nil, newSetName: String? = nil, replace: Bool? = nil, onlyIfProcessing: Bool? = nil,
        attemptStartedAt: Date? = nil, tasks: [StudyTaskCreate]? = nil, sessions: [StudySessionCreate]? = nil
    ) {
        self.onlyIfProcessing = onlyIfProcessing
        self.attemptStartedAt = attemptStartedAt
        self.tasks = tasks
        self.sessions = sessions
        self.materialId = materialId
        self.title = title
        self.subjectId = subjectId
        self.sourceKind = sourceKind
        self.fileName = fileName
        self.mimeType = mimeType
        self.summary = summary
        self.keywords = keywords
        self.sourceDocument = sourceDocument
        self.chunks = chunks
        self.flashcards = flashcards
        self.setId = setId
        self.newSetName = newSetName
        self.replace = replace
    }
}

/// The source document part of `materials.put`.
public struct SourceDocumentInput: Codable, Sendable, Equatable {
    /// Defaults to the material's source kind.
    public var kind: MaterialSourceKind?
    public var title: String?
    public var pageCount: Int?
    public var durationSeconds: Double?
    public var language: String?
    public init(kind: MaterialSourceKind? = nil, title: String? = nil, pageCount: Int? = nil, durationSeconds: Double? = nil, language: String? = nil) {
        self.kind = kind
        self.title = title
        self.pageCount = pageCount
        self.durationSeconds = durationSeconds
        self.language = language
    }
}

/// A chunk in `materials.put`, or `chunks.create` (then with `sourceDocumentId`).
public struct ChunkInput: Codable, Sendable, Equatable {
    public var ordinal: Int
    public var text: String
    public var pageNumber: Int?
    /// 0…10^9 seconds.
    public var startSeconds: Double?
    /// 0…10^9 seconds, not before `startSeconds`.
    public var endSeconds: Double?
    /// 0…10^12, the end not before the start. Default: right after the previous chunk (by
    /// ordinal) / the text's length.
    public var startOffset: Int?
    public var endOffset: Int?
    /// The title of the section the text is in (a Markdown or HTML heading), if any.
    public var section: String?
    public init(
        ordinal: Int, text: String, pageNumber: Int? = nil, startSeconds: Double? = nil, endSeconds: Double? = nil,
        startOffset: Int? = nil, endOffset: Int? = nil, section: String? = nil
    ) {
        self.section = section
        self.ordinal = ordinal
        self.text = text
        self.pageNumber = pageNumber
        self.startSeconds = startSeconds
        self.endSeconds = endSeconds
        self.startOffset = startOffset
        self.endOffset = endOffset
    }
}

/// A generated card in `materials.put`, linked to its chunk by the chunk's ordinal.
public struct GeneratedFlashcard: Codable, Sendable, Equatable {
    public var front: String
    public var back: String
    public var kind: FlashcardKind?
    public var tags: [String]?
    public var chunkOrdinal: Int?
    public init(front: String, back: String, kind: FlashcardKind? = nil, tags: [String]? = nil, chunkOrdinal: Int? = nil) {
        self.front = front
        self.back = back
        self.kind = kind
        self.tags = tags
        self.chunkOrdinal = chunkOrdinal
    }
}

/// `materials.put` response.
public struct MaterialPutResult: Codable, Sendable, Equatable {
    public var material: Material
    public var sourceDocument: SourceDocument
    /// Chunk ids in ordinal order.
    public var chunkIds: [String]
    /// Card ids in request order.
    public var flashcardIds: [String]
    /// The set the cards went to, if any.
    public var setId: String?
    /// The ids of the request's tasks and sessions, in request order (also those that existed).
    public var taskIds: [String]?
    public var sessionIds: [String]?
    public init(
        material: Material, sourceDocument: SourceDocument, chunkIds: [String], flashcardIds: [String], setId: String?,
        taskIds: [String]? = nil, sessionIds: [String]? = nil
    ) {
        self.taskIds = taskIds
        self.sessionIds = sessionIds
        self.material = material
        self.sourceDocument = sourceDocument
        self.chunkIds = chunkIds
        self.flashcardIds = flashcardIds
        self.setId = setId
    }
}

// MARK: - Source documents and chunks

/// `sourceDocuments.create`: a document of a material, for clients that chunk themselves.
public struct SourceDocumentCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var materialId: String
    public var kind: MaterialSourceKind?
    public var title: String?
    public var pageCount: Int?
    public var durationSeconds: Double?
    public var language: String?
    public init(id: String? = nil, materialId: String, kind: MaterialSourceKind? = nil, title: String? = nil, pageCount: Int? = nil, durationSeconds: Double? = nil, language: String? = nil) {
        self.id = id
        self.materialId = materialId
        self.kind = kind
        self.title = title
        self.pageCount = pageCount
        self.durationSeconds = durationSeconds
        self.language = language
    }
}

/// `sourceDocuments.update`.
public struct SourceDocumentUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var title: String?
    public var pageCount: Int?
    public var durationSeconds: Double?
    public var language: String?
    public init(id: String, title: String? = nil, pageCount: Int? = nil, durationSeconds: Double? = nil, language: String? = nil) {
        self.id = id
        self.title = title
        self.pageCount = pageCount
        self.durationSeconds = durationSeconds
        self.language = language
    }
}

/// `sourceDocuments.list`: oldest first.
public struct SourceDocumentList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var materialId: String?
    public init(limit: Int? = nil, cursor: String? = nil, materialId: String? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.materialId = materialId
    }
}

/// `chunks.create`.
public struct ChunkCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var sourceDocumentId: String
    public var chunk: ChunkInput
    public init(id: String? = nil, sourceDocumentId: String, chunk: ChunkInput) {
        self.id = id
        self.sourceDocumentId = sourceDocumentId
        self.chunk = chunk
    }
}

/// `chunks.update`.
public struct ChunkUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var text: String?
    public var pageNumber: Int?
    public var startSeconds: Double?
    public var endSeconds: Double?
    public init(id: String, text: String? = nil, pageNumber: Int? = nil, startSeconds: Double? = nil, endSeconds: Double? = nil) {
        self.id = id
        self.text = text
        self.pageNumber = pageNumber
        self.startSeconds = startSeconds
        self.endSeconds = endSeconds
    }
}

/// `chunks.list`: by document, then ordinal. One of the filters is required.
public struct ChunkList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var sourceDocumentId: String?
    public var materialId: String?
    public init(limit: Int? = nil, cursor: String? = nil, sourceDocumentId: String? = nil, materialId: String? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.sourceDocumentId = sourceDocumentId
        self.materialId = materialId
    }
}

// MARK: - Flashcards and sets

/// `flashcards.create`. Without `subjectId` the card takes its set's, else its material's.
public struct FlashcardCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var front: String
    public var back: String
    public var kind: FlashcardKind?
    public var tags: [String]?
    public var setId: String?
    public var materialId: String?
    public var chunkId: String?
    public var subjectId: String?
    public init(
        id: String? = nil, front: String, back: String, kind: FlashcardKind? = nil, tags: [String]? = nil, setId: String? = nil,
        materialId: String? = nil, chunkId: String? = nil, subjectId: String? = nil
    ) {
        self.id = id
        self.front = front
        self.back = back
        self.kind = kind
        self.tags = tags
        self.setId = setId
        self.materialId = materialId
        self.chunkId = chunkId
        self.subjectId = subjectId
    }
}

/// `flashcards.update`.
public struct FlashcardUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var front: String?
    public var back: String?
    public var kind: FlashcardKind?
    public var tags: [String]?
    public var setId: String?
    public var subjectId: String?
    public init(id: String, front: String? = nil, back: String? = nil, kind: FlashcardKind? = nil, tags: [String]? = nil, setId: String? = nil, subjectId: String? = nil) {
        self.id = id
        self.front = front
        self.back = back
        self.kind = kind
        self.tags = tags
        self.setId = setId
        self.subjectId = subjectId
    }
}

/// `flashcards.list`: in the order they were stored (creation order).
public struct FlashcardList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var setId: String?
    public var materialId: String?
    public var subjectId: String?
    public var tag: String?
    public init(limit: Int? = nil, cursor: String? = nil, setId: String? = nil, materialId: String? = nil, subjectId: String? = nil, tag: String? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.setId = setId
        self.materialId = materialId
        self.subjectId = subjectId
        self.tag = tag
    }
}

/// `sets.create`.
public struct FlashcardSetCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var name: String
    public var topic: String?
    public var subjectId: String?
    public var materialId: String?
    public init(id: String? = nil, name: String, topic: String? = nil, subjectId: String? = nil, materialId: String? = nil) {
        self.id = id
        self.name = name
        self.topic = topic
        self.subjectId = subjectId
        self.materialId = materialId
    }
}

/// `sets.update`.
public struct FlashcardSetUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var name: String?
    public var topic: String?
    public var subjectId: String?
    public init(id: String, name: String? = nil, topic: String? = nil, subjectId: String? = nil) {
        self.id = id
        self.name = name
        self.topic = topic
        self.subjectId = subjectId
    }
}

/// `sets.list`: newest first.
public struct FlashcardSetList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var subjectId: String?
    public var materialId: String?
    public init(limit: Int? = nil, cursor: String? = nil, subjectId: String? = nil, materialId: String? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.subjectId = subjectId
        self.materialId = materialId
    }
}

// MARK: - Notes Q&A

/// `questions.create`.
public struct QuestionCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var text: String
    public var category: String
    public var displayOrder: Int?
    public var isRequired: Bool?
    public var hint: String?
    public init(id: String? = nil, text: String, category: String, displayOrder: Int? = nil, isRequired: Bool? = nil, hint: String? = nil) {
        self.id = id
        self.text = text
        self.category = category
        self.displayOrder = displayOrder
        self.isRequired = isRequired
        self.hint = hint
    }
}

/// `questions.update`.
public struct QuestionUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var text: String?
    public var category: String?
    public var displayOrder: Int?
    public var isRequired: Bool?
    public var hint: String?
    public init(id: String, text: String? = nil, category: String? = nil, displayOrder: Int? = nil, isRequired: Bool? = nil, hint: String? = nil) {
        self.id = id
        self.text = text
        self.category = category
        self.displayOrder = displayOrder
        self.isRequired = isRequired
        self.hint = hint
    }
}

/// `questions.list`: by display order, then creation.
public struct QuestionList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var category: String?
    public init(limit: Int? = nil, cursor: String? = nil, category: String? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.category = category
    }
}

/// `notes.create`: the answer to a question (one note per question: a second is ALREADY_EXISTS).
public struct NoteCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var questionId: String
    public var answer: String
    public var metadata: [String: String]?
    public init(id: String? = nil, questionId: String, answer: String, metadata: [String: String]? = nil) {
        self.id = id
        self.questionId = questionId
        self.answer = answer
        self.metadata = metadata
    }
}

/// `notes.update`.
public struct NoteUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var answer: String?
    public var metadata: [String: String]?
    public init(id: String, answer: String? = nil, metadata: [String: String]? = nil) {
        self.id = id
        self.answer = answer
        self.metadata = metadata
    }
}

/// `notes.list`: in the order they were stored.
public struct NoteList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var questionId: String?
    public init(limit: Int? = nil, cursor: String? = nil, questionId: String? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.questionId = questionId
    }
}

/// `notes.completion`: how much of the Q&A is answered.
public struct NotesCompletionRequest: Codable, Sendable, Equatable {
    /// Only this category.
    public var category: String?
    public init(category: String? = nil) { self.category = category }
}

/// Answered questions of one category (or of all).
public struct CategoryCompletion: Codable, Sendable, Equatable {
    public var category: String
    public var answered: Int
    public var total: Int
    /// `answered / total * 100`; 0 without questions.
    public var percentage: Double
    public init(category: String, answered: Int, total: Int, percentage: Double) {
        self.category = category
        self.answered = answered
        self.total = total
        self.percentage = percentage
    }
}

/// `notes.completion` response.
public struct NotesCompletion: Codable, Sendable, Equatable {
    public var answered: Int
    public var total: Int
    public var percentage: Double
    /// Required questions that are answered / exist.
    public var requiredAnswered: Int
    public var requiredTotal: Int
    /// Per category, by name.
    public var categories: [CategoryCompletion]
    /// The notes schema's version (``NotesSchema/version``).
    public var version: Int
    public init(
        answered: Int, total: Int, percentage: Double, requiredAnswered: Int, requiredTotal: Int, categories: [CategoryCompletion],
        version: Int = NotesSchema.version
    ) {
        self.version = version
        self.answered = answered
        self.total = total
        self.percentage = percentage
        self.requiredAnswered = requiredAnswered
        self.requiredTotal = requiredTotal
        self.categories = categories
    }
}

/// The notes Q&A's data (questions and notes) as clients keep it: C11S House's
/// `NotesStoreData.version`. A client that stores notes offline migrates them when the number
/// it stored differs; `questions.starter`, `questions.adopt` and `notes.completion` carry it.
public enum NotesSchema {
    /// 1: questions with category, display order, required flag and hint; one note per
    /// question with metadata; the starter set keyed `house-…`.
    public static let version = 1
}

/// One question of the built-in starter set.
public struct StarterQuestion: Codable, Sendable, Equatable {
    /// Stable key, e.g. `heating`; adopted, the question's id is `house-<key>`.
    public var key: String
    public var text: String
    /// `general`, `maintenance`, `comfort`, `energy`, `safety` or `memories` (the categories of
    /// ai-gateway's house thoughts, so answers feed them).
    public var category: String
    public var displayOrder: Int
    public var isRequired: Bool
    public var hint: String?

    public init(key: String, text: String, category: String, displayOrder: Int, isRequired: Bool, hint: String?) {
        self.key = key
        self.text = text
        self.category = category
        self.displayOrder = displayOrder
        self.isRequired = isRequired
        self.hint = hint
    }

    /// The id the question has once adopted.
    public var questionId: String { "house-" + key }
}

/// `questions.starter` response.
public struct StarterQuestions: Codable, Sendable, Equatable {
    /// ``NotesSchema/version``.
    public var version: Int
    public var questions: [StarterQuestion]
    public init(version: Int, questions: [StarterQuestion]) {
        self.version = version
        self.questions = questions
    }
}

/// `questions.adopt`.
public struct QuestionsAdopt: Codable, Sendable, Equatable {
    /// Only these starter questions (1...50 keys); default: all of them.
    public var keys: [String]?
    public init(keys: [String]? = nil) { self.keys = keys }
}

/// `questions.adopt` response.
public struct QuestionsAdopted: Codable, Sendable, Equatable {
    /// ``NotesSchema/version``.
    public var version: Int
    /// The questions added now (`question.created` for each).
    public var adopted: [Question]
    /// Asked-for starter questions the user already had (kept as they are, edits included).
    public var existing: [Question]
    public init(version: Int, adopted: [Question], existing: [Question]) {
        self.version = version
        self.adopted = adopted
        self.existing = existing
    }
}

// MARK: - Conversations

/// `conversations.create`.
public struct ConversationCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var title: String
    public var materialId: String?
    public var setId: String?
    public init(id: String? = nil, title: String, materialId: String? = nil, setId: String? = nil) {
        self.id = id
        self.title = title
        self.materialId = materialId
        self.setId = setId
    }
}

/// `conversations.update`.
public struct ConversationUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var title: String?
    public init(id: String, title: String? = nil) {
        self.id = id
        self.title = title
    }
}

/// `conversations.list`: most recently active first (`updatedAt`; a new message bumps it).
public struct ConversationList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var materialId: String?
    public init(limit: Int? = nil, cursor: String? = nil, materialId: String? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.materialId = materialId
    }
}

/// `messages.create`: appends a message to a conversation.
public struct MessageCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var conversationId: String
    public var role: ConversationRole
    public var text: String
    public init(id: String? = nil, conversationId: String, role: ConversationRole, text: String) {
        self.id = id
        self.conversationId = conversationId
        self.role = role
        self.text = text
    }
}

/// `messages.update`.
public struct MessageUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var text: String?
    public init(id: String, text: String? = nil) {
        self.id = id
        self.text = text
    }
}

/// `messages.list`: a conversation's messages oldest first, or newest first (the last N as
/// context for a tutor: `newestFirst: true, limit: 5`).
public struct MessageList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var conversationId: String
    public var newestFirst: Bool?
    public init(limit: Int? = nil, cursor: String? = nil, conversationId: String, newestFirst: Bool? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.conversationId = conversationId
        self.newestFirst = newestFirst
    }
}

// MARK: - Study sessions and tasks

/// `sessions.create`.
public struct StudySessionCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var subjectId: String?
    public var setId: String?
    public var startedAt: Date
    public var endedAt: Date?
    public var cardsReviewed: Int?
    public init(id: String? = nil, subjectId: String? = nil, setId: String? = nil, startedAt: Date, endedAt: Date? = nil, cardsReviewed: Int? = nil) {
        self.id = id
        self.subjectId = subjectId
        self.setId = setId
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.cardsReviewed = cardsReviewed
    }
}

/// `sessions.update` (e.g. ending a session: `endedAt`, `cardsReviewed`).
public struct StudySessionUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var subjectId: String?
    public var setId: String?
    public var startedAt: Date?
    public var endedAt: Date?
    public var cardsReviewed: Int?
    public init(id: String, subjectId: String? = nil, setId: String? = nil, startedAt: Date? = nil, endedAt: Date? = nil, cardsReviewed: Int? = nil) {
        self.id = id
        self.subjectId = subjectId
        self.setId = setId
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.cardsReviewed = cardsReviewed
    }
}

/// `sessions.list`: most recent start first.
public struct StudySessionList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var subjectId: String?
    /// Only sessions that started at or after `from` and before `to`.
    public var from: Date?
    public var to: Date?
    public init(limit: Int? = nil, cursor: String? = nil, subjectId: String? = nil, from: Date? = nil, to: Date? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.subjectId = subjectId
        self.from = from
        self.to = to
    }
}

/// `tasks.create`.
public struct StudyTaskCreate: Codable, Sendable, Equatable {
    public var id: String?
    public var title: String
    public var dueAt: Date?
    public var isDone: Bool?
    public var subjectId: String?
    public var materialId: String?
    public init(id: String? = nil, title: String, dueAt: Date? = nil, isDone: Bool? = nil, subjectId: String? = nil, materialId: String? = nil) {
        self.id = id
        self.title = title
        self.dueAt = dueAt
        self.isDone = isDone
        self.subjectId = subjectId
        self.materialId = materialId
    }
}

/// `tasks.update`. Marking done sets `doneAt`; marking not done clears it.
public struct StudyTaskUpdate: Codable, Sendable, Equatable {
    public var id: String
    public var title: String?
    public var dueAt: Date?
    /// `true` removes the due date.
    public var clearDueAt: Bool?
    public var isDone: Bool?
    public var subjectId: String?
    public var materialId: String?
    public init(id: String, title: String? = nil, dueAt: Date? = nil, clearDueAt: Bool? = nil, isDone: Bool? = nil, subjectId: String? = nil, materialId: String? = nil) {
        self.id = id
        self.title = title
        self.dueAt = dueAt
        self.clearDueAt = clearDueAt
        self.isDone = isDone
        self.subjectId = subjectId
        self.materialId = materialId
    }
}

/// `tasks.list`: by due date (tasks without one last), then creation.
public struct StudyTaskList: Codable, Sendable, Equatable {
    public var limit: Int?
    public var cursor: String?
    public var isDone: Bool?
    public var subjectId: String?
    /// Only tasks due before this date.
    public var dueBefore: Date?
    public init(limit: Int? = nil, cursor: String? = nil, isDone: Bool? = nil, subjectId: String? = nil, dueBefore: Date? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.isDone = isDone
        self.subjectId = subjectId
        self.dueBefore = dueBefore
    }
}

// MARK: - Progress

/// `progress.today`: the dashboard's numbers for one calendar day in the user's time zone.
public struct ProgressTodayRequest: Codable, Sendable, Equatable {
    /// `YYYY-MM-DD`; default: today in `timeZone`.
    public var date: String?
    /// IANA name such as `Europe/Rome`; default `UTC`.
    public var timeZone: String?
    public init(date: String? = nil, timeZone: String? = nil) {
        self.date = date
        self.timeZone = timeZone
    }
}

/// `progress.today` response, computed from the stored rows.
public struct ProgressToday: Codable, Sendable, Equatable {
    public var date: String
    public var timeZone: String
    /// Minutes of study sessions within the day (sessions crossing midnight count their part;
    /// a session still going counts up to now).
    public var studyMinutes: Double
    /// Sessions that overlap the day.
    public var sessions: Int
    public var cardsReviewed: Int
    /// Tasks marked done during the day.
    public var tasksDone: Int
    /// Tasks not done now.
    public var tasksOpen: Int
    /// Open tasks due during the day, and before it.
    public var tasksDueToday: Int
    public var tasksOverdue: Int
    public var materialsAdded: Int
    public var flashcardsCreated: Int
    /// Reviews the scheduler recorded during the day (`review.count`); absent when the scheduler
    /// did not answer within 2 s (the rest of the numbers are still the store's).
    public var reviewsRecorded: Int?
    public init(
        date: String, timeZone: String, studyMinutes: Double, sessions: Int, cardsReviewed: Int, tasksDone: Int, tasksOpen: Int,
        tasksDueToday: Int, tasksOverdue: Int, materialsAdded: Int, flashcardsCreated: Int, reviewsRecorded: Int? = nil
    ) {
        self.reviewsRecorded = reviewsRecorded
        self.date = date
        self.timeZone = timeZone
        self.studyMinutes = studyMinutes
        self.sessions = sessions
        self.cardsReviewed = cardsReviewed
        self.tasksDone = tasksDone
        self.tasksOpen = tasksOpen
        self.tasksDueToday = tasksDueToday
        self.tasksOverdue = tasksOverdue
        self.materialsAdded = materialsAdded
        self.flashcardsCreated = flashcardsCreated
    }
}
