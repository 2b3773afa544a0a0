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
    public let createSubject = Method<SubjectCreate, Subject>("store", "subjects.create", "Create a subject.")
    public let getSubject = Method<RecordID, Subject>("store", "subjects.get", "Fetch one subject.")
    public let updateSubject = Method<SubjectUpdate, Subject>("store", "subjects.update", "Change a subject's name or colour.")
    public let deleteSubject = Method<RecordID, Empty>("store", "subjects.delete", "Delete a subject; its materials, sets, cards, sessions and tasks stay, without subject.")
    public let listSubjects = Method<SubjectList, RecordPage<Subject>>("store", "subjects.list", "The user's subjects by name, paged.")

    // MARK: Materials
    public let createMaterial = Method<MaterialCreate, Material>("store", "materials.create", "Create a material without a file (status pending unless given).")
    public let getMaterial = Method<RecordID, Material>("store", "materials.get", "Fetch one material.")
    public let updateMaterial = Method<MaterialUpdate, Material>("store", "materials.update", "Change a material's title, subject, summary, keywords, archived or priority flag.")
    public let deleteMaterial = Method<RecordID, Empty>("store", "materials.delete", "Delete a material with its original, documents, chunks and cards (flashcard.deleted for each card).")
    public let listMaterials = Method<MaterialList, RecordPage<Material>>("store", "materials.list", "The user's materials newest first, by subject, status, archived; paged.")
    public let uploadMaterial = Method<MaterialUpload, MaterialUploadResult>(
        "store", "materials.upload", "Create a material from the file in the attachment frame, content-addressed by SHA-256 (same file twice: the existing material).")
    public let startProcessing = Method<RecordID, Material>(
        "store", "materials.startProcessing", "Mark a pending, failed or stuck material processing (a worker takes it); a ready one is FAILED_PRECONDITION.")
    public let putMaterial = Method<MaterialPut, MaterialPutResult>(
        "store", "materials.put", "Store a material's source document, chunks and generated cards and mark it ready, in one transaction; idempotent under idem.")
    public let failMaterial = Method<MaterialFail, Material>("store", "materials.fail", "Mark a pending or processing material failed with a reason; publishes ingest.failed.")
    public let materialOriginal = Method<RecordID, MaterialOriginal>("store", "materials.original", "The material's original file, in the reply's attachment frame.")
    public let stuckMaterials = Method<StuckMaterialsRequest, StuckMaterials>(
        "store", "materials.stuck", "Materials in processing longer than a time (lost workers); every user's when the header has no user.")

    // MARK: Source documents and chunks
    public let createSourceDocument = Method<SourceDocumentCreate, SourceDocument>("store", "sourceDocuments.create", "Add a source document to a material.")
    public let getSourceDocument = Method<RecordID, SourceDocument>("store", "sourceDocuments.get", "Fetch one source document.")
    public let updateSourceDocument = Method<SourceDocumentUpdate, SourceDocument>("store", "sourceDocuments.update", "Change a source document's title, page count, duration or language.")
    public let deleteSourceDocument = Method<RecordID, Empty>("store", "sourceDocuments.delete", "Delete a source document and its chunks.")
    public let listSourceDocuments = Method<SourceDocumentList, RecordPage<SourceDocument>>("store", "sourceDocuments.list", "Source documents oldest first, by material; paged.")
    public let createChunk = Method<ChunkCreate, NoteChunk>("store", "chunks.create", "Add a chunk to a source document.")
    public let getChunk = Method<RecordID, NoteChunk>("store", "chunks.get", "Fetch one chunk.")
    public let updateChunk = Method<ChunkUpdate, NoteChunk>("store", "chunks.update", "Change a chunk's text, page or times.")
    public let deleteChunk = Method<RecordID, Empty>("store", "chunks.delete", "Delete a chunk (cards made from it keep their text, without the link).")
    public let listChunks = Method<ChunkList, RecordPage<NoteChunk>>("store", "chunks.list", "A document's or material's chunks in reading order; paged.")

    // MARK: Flashcards and sets
    public let createFlashcard = Method<FlashcardCreate, Flashcard>("store", "flashcards.create", "Create a flashcard.")
    public let getFlashcard = Method<RecordID, Flashcard>("store", "flashcards.get", "Fetch one flashcard.")
    public let updateFlashcard = Method<FlashcardUpdate, Flashcard>("store", "flashcards.update", "Change a card's sides, kind, tags, set or subject.")
    public let deleteFlashcard = Method<RecordID, Empty>("store", "flashcards.delete", "Delete a flashcard.")
    public let listFlashcards = Method<FlashcardList, RecordPage<Flashcard>>("store", "flashcards.list", "Flashcards in creation order, by set, material, subject or tag; paged.")
    public let createSet = Method<FlashcardSetCreate, FlashcardSet>("store", "sets.create", "Create a flashcard set.")
    public let getSet = Method<RecordID, FlashcardSet>("store", "sets.get", "Fetch one set with its card count.")
    public let updateSet = Method<FlashcardSetUpdate, FlashcardSet>("store", "sets.update", "Change a set's name, topic or subject.")
    public let deleteSet = Method<RecordID, Empty>("store", "sets.delete", "Delete a set and its cards (flashcard.deleted for each card).")
    public let listSets = Method<FlashcardSetList, RecordPage<FlashcardSet>>("store", "sets.list", "Sets newest first, by subject or material; paged.")

    // MARK: Notes Q&A
    public let createQuestion = Method<QuestionCreate, Question>("store", "questions.create", "Create a question.")
    public let getQuestion = Method<RecordID, Question>("store", "questions.get", "Fetch one question.")
    public let updateQuestion = Method<QuestionUpdate, Question>("store", "questions.update", "Change a question.")
    public let deleteQuestion = Method<RecordID, Empty>("store", "questions.delete", "Delete a question and its note.")
    public let listQuestions = Method<QuestionList, RecordPage<Question>>("store", "questions.list", "Questions by display order, by category; paged.")
    public let createNote = Method<NoteCreate, Note>("store", "notes.create", "Answer a question (one note per question).")
    public let getNote = Method<RecordID, Note>("store", "notes.get", "Fetch one note.")
    public let updateNote = Method<NoteUpdate, Note>("store", "notes.update", "Change a note's answer or metadata.")
    public let deleteNote = Method<RecordID, Empty>("store", "notes.delete", "Delete a note.")
    public let listNotes = Method<NoteList, RecordPage<Note>>("store", "notes.list", "Notes oldest first, by question; paged.")
    public let notesCompletion = Method<NotesCompletionRequest, NotesCompletion>("store", "notes.completion", "Answered questions, overall, required and per category, as percentages.")

    // MARK: Conversations
    public let createConversation = Method<ConversationCreate, Conversation>("store", "conversations.create", "Start a conversation.")
    public let getConversation = Method<RecordID, Conversation>("store", "conversations.get", "Fetch one conversation.")
    public let updateConversation = Method<ConversationUpdate, Conversation>("store", "conversations.update", "Rename a conversation.")
    public let deleteConversation = Method<RecordID, Empty>("store", "conversations.delete", "Delete a conversation and its messages.")
    public let listConversations = Method<ConversationList, RecordPage<Conversation>>("store", "conversations.list", "Conversations, most recently active first; paged.")
    public let createMessage = Method<MessageCreate, ConversationMessage>("store", "messages.create", "Append a message to a conversation.")
    public let getMessage = Method<RecordID, ConversationMessage>("store", "messages.get", "Fetch one message.")
    public let updateMessage = Method<MessageUpdate, ConversationMessage>("store", "messages.update", "Change a message's text.")
    public let deleteMessage = Method<RecordID, Empty>("store", "messages.delete", "Delete a message.")
    public let listMessages = Method<MessageList, RecordPage<ConversationMessage>>("store", "messages.list", "A conversation's messages, oldest or newest first; paged.")

    // MARK: Study sessions and tasks
    public let createSession = Method<StudySessionCreate, StudySession>("store", "sessions.create", "Record a study session (endedAt absent while it goes on).")
    public let getSession = Method<RecordID, StudySession>("store", "sessions.get", "Fetch one study session.")
    public let updateSession = Method<StudySessionUpdate, StudySession>("store", "sessions.update", "Change a session, e.g. end it.")
    public let deleteSession = Method<RecordID, Empty>("store", "sessions.delete", "Delete a study session.")
    public let listSessions = Method<StudySessionList, RecordPage<StudySession>>("store", "sessions.list", "Sessions, latest start first, by subject and time range; paged.")
    public let createTask = Method<StudyTaskCreate, StudyTask>("store", "tasks.create", "Create a task.")
    public let getTask = Method<RecordID, StudyTask>("store", "tasks.get", "Fetch one task.")
    public let updateTask = Method<StudyTaskUpdate, StudyTask>("store", "tasks.update", "Change a task, e.g. mark it done.")
    public let deleteTask = Method<RecordID, Empty>("store", "tasks.delete", "Delete a task.")
    public let listTasks = Method<StudyTaskList, RecordPage<StudyTask>>("store", "tasks.list", "Tasks by due date (none last), by done, subject, due before; paged.")
    public let progressToday = Method<ProgressTodayRequest, ProgressToday>("store", "progress.today", "The dashboard's numbers for a day: study minutes, cards reviewed, tasks, materials added.")

    // MARK: Search, export, sync
    public let search = Method<SearchRequest, SearchResponse>("store", "search", "Full-text search over chunks, flashcards and notes: bm25 ranking, highlighted snippets; by kind and subject.")
    public let export = Method<ExportRequest, ExportResult>("store", "export", "Flashcards as JSON, CSV or Anki text; study sessions as JSON or CSV. Large files in the attachment frame.")
    public let syncPush = Method<SyncPushRequest, SyncPushResponse>("store", "sync.push", "Apply a device's changes last-write-wins (ties: delete, then greater deviceId), with tombstones.")
    public let syncPull = Method<SyncPullRequest, SyncPullResponse>("store", "sync.pull", "Changes since a cursor, records in their latest state and tombstones.")

    // MARK: Events (durable: outbox, `_events.replay`)
    public let subjectCreated = Topic<Subject>("subject.created", "A subject was created.")
    public let subjectUpdated = Topic<Subject>("subject.updated", "A subject changed.")
    public let subjectDeleted = Topic<RecordDeleted>("subject.deleted", "A subject was deleted.")
    public let materialCreated = Topic<Material>("material.created", "A material was created (create, upload or put).")
    public let materialUpdated = Topic<Material>("material.updated", "A material changed (fields or status).")
    public let materialDeleted = Topic<RecordDeleted>("material.deleted", "A material was deleted, with its documents, chunks and cards.")
    public let materialIngested = Topic<MaterialIngested>("material.ingested", "materials.put stored a material's processing result; it is ready.")
    public let ingestFailed = Topic<IngestFailed>("ingest.failed", "materials.fail marked a material failed, with the reason.")
    public let flashcardCreated = Topic<Flashcard>("flashcard.created", "A flashcard was created (the record: id, userId, setId, materialId, subjectId, …).")
    public let flashcardUpdated = Topic<Flashcard>("flashcard.updated", "A flashcard changed.")
    public let flashcardDeleted = Topic<FlashcardDeleted>("flashcard.deleted", "A flashcard was removed, also by deleting its set or material.")
    public let setCreated = Topic<FlashcardSet>("set.created", "A flashcard set was created.")
    public let setUpdated = Topic<FlashcardSet>("set.updated", "A flashcard set changed.")
    public let setDeleted = Topic<RecordDeleted>("set.deleted", "A flashcard set was deleted (its cards each get flashcard.deleted).")
    public let questionCreated = Topic<Question>("question.created", "A question was created.")
    public let questionUpdated = Topic<Question>("question.updated", "A question changed.")
    public let questionDeleted = Topic<RecordDeleted>("question.deleted", "A question was deleted.")
    public let noteCreated = Topic<Note>("note.created", "A question was answered.")
    public let noteUpdated = Topic<Note>("note.updated", "A note changed.")
    public let noteDeleted = Topic<RecordDeleted>("note.deleted", "A note was deleted.")
    public let conversationCreated = Topic<Conversation>("conversation.created", "A conversation was started.")
    public let conversationUpdated = Topic<Conversation>("conversation.updated", "A conversation changed.")
    public let conversationDeleted = Topic<RecordDeleted>("conversation.deleted", "A conversation was deleted.")
    public let messageCreated = Topic<ConversationMessage>("message.created", "A message was added to a conversation.")
    public let messageUpdated = Topic<ConversationMessage>("message.updated", "A message changed.")
    public let messageDeleted = Topic<RecordDeleted>("message.deleted", "A message was deleted.")
    public let sessionCreated = Topic<StudySession>("session.created", "A study session was recorded.")
    public let sessionUpdated = Topic<StudySession>("session.updated", "A study session changed (e.g. ended).")
    public let sessionDeleted = Topic<RecordDeleted>("session.deleted", "A study session was deleted.")
    public let taskCreated = Topic<StudyTask>("task.created", "A task was created.")
    public let taskUpdated = Topic<StudyTask>("task.updated", "A task changed (e.g. done).")
    public let taskDeleted = Topic<RecordDeleted>("task.deleted", "A task was deleted.")
}
