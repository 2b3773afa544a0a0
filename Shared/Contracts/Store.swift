import Foundation
import Wire

/// The store service: the system of record for study content (docs/services/store.md).
///
/// ```swift
/// let material = try await bus.call(Store.getMaterial, RecordID(id: id), options: .init(user: "u1"))
/// ```
public let Store = StoreContract()

/// The methods and durable events of the `store` service. Every method acts for the request
/// header's `user` (missing: INVALID_ARGUMENT); another user's record is NOT_FOUND.
/// Only `materials.stuck` also works without a user (the ingest sweep).
public struct StoreContract: ServiceContract {
    public static let serviceName = "store"

    public init() {}

    // MARK: Subjects
    public let createSubject = Method<SubjectCreate, Subject>(Self.self, "subjects.create", "Create a subject.", audience: .app)
    public let getSubject = Method<RecordID, Subject>(Self.self, "subjects.get", "Fetch one subject.", audience: .app)
    public let updateSubject = Method<SubjectUpdate, Subject>(Self.self, "subjects.update", "Change a subject's name or colour.", audience: .app)
    public let deleteSubject = Method<SubjectDelete, Empty>(
        Self.self, "subjects.delete", "Delete a subject; its materials, sets, cards, sessions and tasks stay, without subject, unless cascade deletes its materials.",
        audience: .app)
    public let listSubjects = Method<SubjectList, RecordPage<Subject>>(Self.self, "subjects.list", "The user's subjects by name, paged.", audience: .app)

    // MARK: Materials
    public let createMaterial = Method<MaterialCreate, Material>(Self.self, "materials.create", "Create a material without a file (status pending unless given).", audience: .app)
    public let getMaterial = Method<RecordID, Material>(Self.self, "materials.get", "Fetch one material.", audience: .app)
    public let updateMaterial = Method<MaterialUpdate, Material>(Self.self, "materials.update", "Change a material's title, subject, summary, keywords, archived or priority flag.", audience: .app)
    public let deleteMaterial = Method<RecordID, Empty>(Self.self, "materials.delete", "Delete a material with its original, documents, chunks and cards (flashcard.deleted for each card).", audience: .app)
    public let listMaterials = Method<MaterialList, RecordPage<Material>>(Self.self, "materials.list", "The user's materials newest first, by subject, status, archived; paged.", audience: .app)
    public let uploadMaterial = Method<MaterialUpload, MaterialUploadResult>(
        Self.self, "materials.upload", "Create a material from the file in the attachment frame, content-addressed by SHA-256 (same file twice: the existing material).", audience: .app)
    public let startProcessing = Method<RecordID, Material>(
        Self.self, "materials.startProcessing", "Mark a pending, failed or stuck material processing (a worker takes it); a ready one is FAILED_PRECONDITION.", audience: .service)
    public let putMaterial = Method<MaterialPut, MaterialPutResult>(
        Self.self, "materials.put", "Store a material's source document, chunks and generated cards and mark it ready, in one transaction; idempotent under idem.", audience: .service)
    public let failMaterial = Method<MaterialFail, Material>(Self.self, "materials.fail", "Mark a pending or processing material failed with a reason; publishes ingest.failed.", audience: .service)
    public let materialOriginal = Method<RecordID, MaterialOriginal>(Self.self, "materials.original", "The material's original file, in the reply's attachment frame.", audience: .app)
    public let materialText = Method<RecordID, MaterialText>(
        Self.self, "materials.text", "The material's whole extracted text, document after document, from its chunks without their overlaps.", audience: .app)
    public let renewMaterial = Method<MaterialRenew, Empty>(
        Self.self, "materials.renew", "A worker's job on a processing material is alive: its attempt is not stuck for materials.stuck's age from now; a later attempt's material is FAILED_PRECONDITION.", audience: .service)
    public let stuckMaterials = Method<StuckMaterialsRequest, StuckMaterials>(
        Self.self, "materials.stuck", "Materials in processing whose attempt started, or was last renewed, longer ago than a time (lost workers); every user's when the header has no user.", audience: .service)

    // MARK: Source documents and chunks
    public let createSourceDocument = Method<SourceDocumentCreate, SourceDocument>(Self.self, "sourceDocuments.create", "Add a source document to a material.", audience: .app)
    public let getSourceDocument = Method<RecordID, SourceDocument>(Self.self, "sourceDocuments.get", "Fetch one source document.", audience: .app)
    public let updateSourceDocument = Method<SourceDocumentUpdate, SourceDocument>(Self.self, "sourceDocuments.update", "Change a source document's title, page count, duration or language.", audience: .app)
    public let deleteSourceDocument = Method<RecordID, Empty>(Self.self, "sourceDocuments.delete", "Delete a source document and its chunks.", audience: .app)
    public let listSourceDocuments = Method<SourceDocumentList, RecordPage<SourceDocument>>(Self.self, "sourceDocuments.list", "Source documents oldest first, by material; paged.", audience: .app)
    public let createChunk = Method<ChunkCreate, NoteChunk>(Self.self, "chunks.create", "Add a chunk to a source document.", audience: .app)
    public let getChunk = Method<RecordID, NoteChunk>(Self.self, "chunks.get", "Fetch one chunk.", audience: .app)
    public let updateChunk = Method<ChunkUpdate, NoteChunk>(Self.self, "chunks.update", "Change a chunk's text, page or times.", audience: .app)
    public let deleteChunk = Method<RecordID, Empty>(Self.self, "chunks.delete", "Delete a chunk (cards made from it keep their text, without the link).", audience: .app)
    public let listChunks = Method<ChunkList, RecordPage<NoteChunk>>(Self.self, "chunks.list", "A document's or material's chunks in reading order; paged.", audience: .app)

    // MARK: Flashcards and sets
    public let createFlashcard = Method<FlashcardCreate, Flashcard>(Self.self, "flashcards.create", "Create a flashcard.", audience: .app)
    public let getFlashcard = Method<RecordID, Flashcard>(Self.self, "flashcards.get", "Fetch one flashcard.", audience: .app)
    public let updateFlashcard = Method<FlashcardUpdate, Flashcard>(Self.self, "flashcards.update", "Change a card's sides, kind, tags, set or subject.", audience: .app)
    public let deleteFlashcard = Method<RecordID, Empty>(Self.self, "flashcards.delete", "Delete a flashcard.", audience: .app)
    public let listFlashcards = Method<FlashcardList, RecordPage<Flashcard>>(Self.self, "flashcards.list", "Flashcards in creation order, by set, material, subject or tag; paged.", audience: .app)
    public let createSet = Method<FlashcardSetCreate, FlashcardSet>(Self.self, "sets.create", "Create a flashcard set.", audience: .app)
    public let getSet = Method<RecordID, FlashcardSet>(Self.self, "sets.get", "Fetch one set with its card count.", audience: .app)
    public let updateSet = Method<FlashcardSetUpdate, FlashcardSet>(Self.self, "sets.update", "Change a set's name, topic or subject.", audience: .app)
    public let deleteSet = Method<RecordID, Empty>(Self.self, "sets.delete", "Delete a set and its cards (flashcard.deleted for each card).", audience: .app)
    public let listSets = Method<FlashcardSetList, RecordPage<FlashcardSet>>(Self.self, "sets.list", "Sets newest first, by subject or material; paged.", audience: .app)

    // MARK: Notes Q&A
    public let createQuestion = Method<QuestionCreate, Question>(Self.self, "questions.create", "Create a question.", audience: .app)
    public let getQuestion = Method<RecordID, Question>(Self.self, "questions.get", "Fetch one question.", audience: .app)
    public let updateQuestion = Method<QuestionUpdate, Question>(Self.self, "questions.update", "Change a question.", audience: .app)
    public let deleteQuestion = Method<RecordID, Empty>(Self.self, "questions.delete", "Delete a question and its note.", audience: .app)
    public let listQuestions = Method<QuestionList, RecordPage<Question>>(Self.self, "questions.list", "Questions by display order, by category; paged.", audience: .app)
    public let createNote = Method<NoteCreate, Note>(Self.self, "notes.create", "Answer a question (one note per question).", audience: .app)
    public let getNote = Method<RecordID, Note>(Self.self, "notes.get", "Fetch one note.", audience: .app)
    public let updateNote = Method<NoteUpdate, Note>(Self.self, "notes.update", "Change a note's answer or metadata.", audience: .app)
    public let deleteNote = Method<RecordID, Empty>(Self.self, "notes.delete", "Delete a note.", audience: .app)
    public let listNotes = Method<NoteList, RecordPage<Note>>(Self.self, "notes.list", "Notes oldest first, by question; paged.", audience: .app)
    public let notesCompletion = Method<NotesCompletionRequest, NotesCompletion>(Self.self, "notes.completion", "Answered questions, overall, required and per category, as percentages.", audience: .app)
    public let starterQuestions = Method<Empty, StarterQuestions>(Self.self, "questions.starter", "The built-in starter set of house questions (C11S House) and the notes schema version.", audience: .app)
    public let adoptQuestions = Method<QuestionsAdopt, QuestionsAdopted>(Self.self, "questions.adopt", "Add the starter house questions (all, or those keyed) to the caller's questions in one transaction; adopting again changes nothing.", audience: .app)

    // MARK: Conversations
    public let createConversation = Method<ConversationCreate, Conversation>(Self.self, "conversations.create", "Start a conversation.", audience: .app)
    public let getConversation = Method<RecordID, Conversation>(Self.self, "conversations.get", "Fetch one conversation.", audience: .app)
    public let updateConversation = Method<ConversationUpdate, Conversation>(Self.self, "conversations.update", "Rename a conversation.", audience: .app)
    public let deleteConversation = Method<RecordID, Empty>(Self.self, "conversations.delete", "Delete a conversation and its messages.", audience: .app)
    public let listConversations = Method<ConversationList, RecordPage<Conversation>>(Self.self, "conversations.list", "Conversations, most recently active first; paged.", audience: .app)
    public let createMessage = Method<MessageCreate, ConversationMessage>(Self.self, "messages.create", "Append a message to a conversation.", audience: .app)
    public let getMessage = Method<RecordID, ConversationMessage>(Self.self, "messages.get", "Fetch one message.", audience: .app)
    public let updateMessage = Method<MessageUpdate, ConversationMessage>(Self.self, "messages.update", "Change a message's text.", audience: .app)
    public let deleteMessage = Method<RecordID, Empty>(Self.self, "messages.delete", "Delete a message.", audience: .app)
    public let listMessages = Method<MessageList, RecordPage<ConversationMessage>>(Self.self, "messages.list", "A conversation's messages, oldest or newest first; paged.", audience: .app)

    // MARK: Study sessions and tasks
    public let createSession = Method<StudySessionCreate, StudySession>(Self.self, "sessions.create", "Record a study session (endedAt absent while it goes on).", audience: .app)
    public let getSession = Method<RecordID, StudySession>(Self.self, "sessions.get", "Fetch one study session.", audience: .app)
    public let updateSession = Method<StudySessionUpdate, StudySession>(Self.self, "sessions.update", "Change a session, e.g. end it.", audience: .app)
    public let deleteSession = Method<RecordID, Empty>(Self.self, "sessions.delete", "Delete a study session.", audience: .app)
    public let listSessions = Method<StudySessionList, RecordPage<StudySession>>(Self.self, "sessions.list", "Sessions, latest start first, by subject and time range; paged.", audience: .app)
    public let createTask = Method<StudyTaskCreate, StudyTask>(Self.self, "tasks.create", "Create a task.", audience: .app)
    public let getTask = Method<RecordID, StudyTask>(Self.self, "tasks.get", "Fetch one task.", audience: .app)
    public let updateTask = Method<StudyTaskUpdate, StudyTask>(Self.self, "tasks.update", "Change a task, e.g. mark it done.", audience: .app)
    public let deleteTask = Method<RecordID, Empty>(Self.self, "tasks.delete", "Delete a task.", audience: .app)
    public let listTasks = Method<StudyTaskList, RecordPage<StudyTask>>(Self.self, "tasks.list", "Tasks by due date (none last), by done, subject, due before; paged.", audience: .app)
    public let progressToday = Method<ProgressTodayRequest, ProgressToday>(Self.self, "progress.today", "The dashboard's numbers for a day: study minutes, cards reviewed, tasks, materials added.", audience: .app)

    // MARK: Search, export, sync
    public let search = Method<SearchRequest, SearchResponse>(Self.self, "search", "Full-text search over chunks, flashcards and notes: bm25 ranking, highlighted snippets; by kind and subject.", audience: .app)
    public let export = Method<ExportRequest, ExportResult>(Self.self, "export", "Flashcards as JSON, CSV, Anki text, an Anki package with review state or printable PDF; study sessions as JSON or CSV; a PDF study report. Large files in the attachment frame.", audience: .app)
    public let importApkg = Method<ApkgImportRequest, ApkgImportResult>(Self.self, "flashcards.importApkg", "Import an Anki package (the attachment): notes become flashcards, decks sets, review history the scheduler's state. Retry-safe.", audience: .app)
    public let syncPush = Method<SyncPushRequest, SyncPushResponse>(Self.self, "sync.push", "Apply a device's changes last-write-wins (ties: delete, then greater deviceId), with tombstones.", audience: .app)
    public let syncPull = Method<SyncPullRequest, SyncPullResponse>(Self.self, "sync.pull", "Changes since a cursor, records in their latest state and tombstones.", audience: .app)

    // MARK: Events (durable: outbox, `_events.replay`)
    public let subjectCreated = Topic<Subject>(Self.self, "subject.created", "A subject was created.")
    public let subjectUpdated = Topic<Subject>(Self.self, "subject.updated", "A subject changed.")
    public let subjectDeleted = Topic<RecordDeleted>(Self.self, "subject.deleted", "A subject was deleted.")
    public let materialCreated = Topic<Material>(Self.self, "material.created", "A material was created (create, upload or put).")
    public let materialUpdated = Topic<Material>(Self.self, "material.updated", "A material changed (fields or status).")
    public let materialDeleted = Topic<RecordDeleted>(Self.self, "material.deleted", "A material was deleted, with its documents, chunks and cards.")
    public let materialIngested = Topic<MaterialIngested>(Self.self, "material.ingested", "materials.put stored a material's processing result; it is ready.")
    public let ingestFailed = Topic<IngestFailed>(Self.self, "ingest.failed", "materials.fail marked a material failed, with the reason.")
    public let flashcardCreated = Topic<Flashcard>(Self.self, "flashcard.created", "A flashcard was created (the record: id, userId, setId, materialId, subjectId, …).")
    public let flashcardUpdated = Topic<Flashcard>(Self.self, "flashcard.updated", "A flashcard changed.")
    public let flashcardDeleted = Topic<FlashcardDeleted>(Self.self, "flashcard.deleted", "A flashcard was removed, also by deleting its set or material.")
    public let setCreated = Topic<FlashcardSet>(Self.self, "set.created", "A flashcard set was created.")
    public let setUpdated = Topic<FlashcardSet>(Self.self, "set.updated", "A flashcard set changed.")
    public let setDeleted = Topic<RecordDeleted>(Self.self, "set.deleted", "A flashcard set was deleted (its cards each get flashcard.deleted).")
    public let questionCreated = Topic<Question>(Self.self, "question.created", "A question was created.")
    public let questionUpdated = Topic<Question>(Self.self, "question.updated", "A question changed.")
    public let questionDeleted = Topic<RecordDeleted>(Self.self, "question.deleted", "A question was deleted.")
    public let noteCreated = Topic<Note>(Self.self, "note.created", "A question was answered.")
    public let noteUpdated = Topic<Note>(Self.self, "note.updated", "A note changed.")
    public let noteDeleted = Topic<RecordDeleted>(Self.self, "note.deleted", "A note was deleted.")
    public let conversationCreated = Topic<Conversation>(Self.self, "conversation.created", "A conversation was started.")
    public let conversationUpdated = Topic<Conversation>(Self.self, "conversation.updated", "A conversation changed.")
    public let conversationDeleted = Topic<RecordDeleted>(Self.self, "conversation.deleted", "A conversation was deleted.")
    public let messageCreated = Topic<ConversationMessage>(Self.self, "message.created", "A message was added to a conversation.")
    public let messageUpdated = Topic<ConversationMessage>(Self.self, "message.updated", "A message changed.")
    public let messageDeleted = Topic<RecordDeleted>(Self.self, "message.deleted", "A message was deleted.")
    public let sessionCreated = Topic<StudySession>(Self.self, "session.created", "A study session was recorded.")
    public let sessionUpdated = Topic<StudySession>(Self.self, "session.updated", "A study session changed (e.g. ended).")
    public let sessionDeleted = Topic<RecordDeleted>(Self.self, "session.deleted", "A study session was deleted.")
    public let taskCreated = Topic<StudyTask>(Self.self, "task.created", "A task was created.")
    public let taskUpdated = Topic<StudyTask>(Self.self, "task.updated", "A task changed (e.g. done).")
    public let taskDeleted = Topic<RecordDeleted>(Self.self, "task.deleted", "A task was deleted.")
}
