import Foundation
import Wire

/// The `ai-gateway` service: one interface to language models (summaries, keywords, flashcards,
/// the tutor, encouragement, voice-command intents, transcription) with a local provider that
/// needs no network and answers by default.
///
/// ```swift
/// let summary = try await bus.call(AIGateway.summarize, .init(text: text, maxSentences: 3), options: .init(user: "u1"))
/// let cards = try await context.call(AIGateway.generateFlashcards, .init(chunks: chunks))
/// ```
public let AIGateway = AIGatewayContract()

/// The methods and events of `ai-gateway`. Every method needs the header `user`.
public struct AIGatewayContract: ServiceContract {
    public static let serviceName = "ai-gateway"

    /// `summarize`: the most central sentences of a text.
    public let summarize = Method<SummarizeRequest, SummarizeResponse>(
        "ai-gateway", "summarize", "Summarize a text (≤ 2 MiB) in at most maxSentences (1...20, default 3) sentences.")
    /// `keywords`: the key terms of a text.
    public let keywords = Method<KeywordsRequest, KeywordsResponse>(
        "ai-gateway", "keywords", "The key terms of a text (≤ 2 MiB), best first, at most maxCount (1...50, default 10).")
    /// `flashcards.generate`: cards of kind qa / cloze / definition, each linked to its chunk.
    public let generateFlashcards = Method<FlashcardsRequest, FlashcardsResponse>(
        "ai-gateway", "flashcards.generate",
        "Flashcards (qa, cloze, definition) from text chunks (1...2000, ≤ 2 MiB in all); each card names its chunkId.")
    /// `reflect`: a warm reflection on what the user wrote or studied.
    public let reflect = Method<ReflectRequest, ReflectResponse>(
        "ai-gateway", "reflect", "A warm, identity-based reflection on a note or study text; never guilt.")
    /// `encourage`: encouragement from accuracy, streak or completion numbers.
    public let encourage = Method<EncourageRequest, EncourageResponse>(
        "ai-gateway", "encourage", "Encouragement from accuracy, streak and completion numbers; identity-based, never guilt.")
    /// `thought`: a "house thought" (C11S House) from the user's notes.
    public let thought = Method<ThoughtRequest, HouseThought>(
        "ai-gateway", "thought", "A house thought (thought, emotion, category, confidence, suggestion) from the user's notes.")
    /// `chat`: the tutor; with `stream: true` tokens are published on `ai.stream.<requestId>`;
    /// with `conversationId` / `materialId` / `setId` the history and context come from store and
    /// the turn is stored there.
    public let chat = Method<ChatRequest, ChatResponse>(
        "ai-gateway", "chat",
        "The tutor: the last 5 messages and optional study context (inline, or materialId/setId from store); stream=true publishes tokens on ai.stream.<requestId>; conversationId loads and stores the conversation in store.")
    /// `chat.cancel`: stops a chat that is still answering.
    public let cancelChat = Method<ChatCancelRequest, ChatCancelResponse>(
        "ai-gateway", "chat.cancel", "Stop a chat answer in progress; the chat call returns the text so far with finishReason cancelled.")
    /// `intent.parse`: a voice command to its intent and parameters.
    public let parseIntent = Method<IntentParseRequest, IntentParseResponse>(
        "ai-gateway", "intent.parse", "Match a voice command against the registered patterns; else the best fuzzy candidates.")
    /// `intent.register`: adds (or replaces, by pattern) the user's own command patterns.
    public let registerIntents = Method<IntentRegisterRequest, IntentListResponse>(
        "ai-gateway", "intent.register", "Register command patterns (* wildcards, [optional] words) for the calling user; returns them stored.")
    /// `intent.list`: the built-in and the user's command patterns.
    public let listIntents = Method<Empty, IntentListResponse>(
        "ai-gateway", "intent.list", "The command patterns that apply to the calling user: built-in ones and their own.")
    /// `intent.remove`: removes some of the user's own command patterns.
    public let removeIntents = Method<IntentRemoveRequest, IntentListResponse>(
        "ai-gateway", "intent.remove", "Remove the calling user's own command patterns by id; returns those that remain.")
    /// `transcribe`: audio in the attachment frame (≤ 5 MiB) to text.
    public let transcribe = Method<TranscribeRequest, TranscribeResponse>(
        "ai-gateway", "transcribe",
        "Transcribe the audio in the attachment frame (≤ 5 MiB) through a Whisper-compatible provider.")
    /// `usage`: requests, tokens, cache hits, errors and estimated cost per provider and model.
    public let usage = Method<UsageRequest, UsageResponse>(
        "ai-gateway", "usage", "Requests, tokens, cache hits, errors and estimated cost per provider and model.")
    /// `providers`: the configured providers and the route of each method (never the keys).
    public let providers = Method<Empty, ProvidersResponse>(
        "ai-gateway", "providers", "The configured providers, their limits and each method's fallback chain; keys are never shown.")

    /// The events of one streamed chat answer. Subscribe with ``chatStream(requestId:)`` (the
    /// exact topic: the request id in lower case) before calling `chat`.
    public let chatStreamEvents = Topic<ChatStreamEvent>(
        "ai.stream.<requestId>", "A streamed chat answer: token events in order (index 0, 1, …), then one final or error event.")

    /// The topic of the answer streamed for `requestId`: `ai.stream.<requestId in lower case>`
    /// (topics are lower case, wire protocol §3).
    public func chatStream(requestId: String) -> Topic<ChatStreamEvent> {
        Topic("ai.stream." + requestId.lowercased(), chatStreamEvents.summary)
    }
}

/// Limits of the `ai-gateway` methods, enforced with `INVALID_ARGUMENT` naming the limit.
public enum AIGatewayLimits {
    /// The largest text `summarize`, `keywords`, `reflect` take, and all chunks of
    /// `flashcards.generate` together: 2 MiB of UTF-8.
    public static let textBytes = 2 * 1024 * 1024
    /// The largest audio attachment of `transcribe`: 5 MiB (MirrorBuddy's voice limit).
    public static let audioBytes = 5 * 1024 * 1024
    /// How many chunks one `flashcards.generate` call takes.
    public static let chunks = 2000
    /// How many messages a `chat` request may carry (only the last 5 go into the prompt).
    public static let chatMessages = 100
    /// How many messages of the conversation the tutor's prompt includes.
    public static let chatContextMessages = 5
    /// The largest single chat message, and the study context in all: 256 KiB.
    public static let chatBytes = 256 * 1024
    /// Allowed characters of a chat `requestId`: 1...64 of `A-Z a-z 0-9 _ -`.
    public static let requestIdLength = 64
}

// MARK: - Common

/// What produced an answer: which provider and model, whether it came from the cache, its token
/// usage, and the providers that failed before it (the fallback chain).
public struct GenerationInfo: Codable, Sendable, Equatable {
    /// The provider that answered: `local`, `openai` or `gemini`.
    public var provider: String
    /// The model that answered, e.g. `gemini-2.5-flash`; `local` models are named after their method.
    public var model: String
    /// True when the answer came from the response cache.
    public var cached: Bool
    /// Tokens counted by the provider (local: estimated, about 4 characters a token).
    public var usage: TokenUsage
    /// Providers tried before this one that failed, in order.
    public var fallbacks: [ProviderFailure]

    public init(provider: String, model: String, cached: Bool = false, usage: TokenUsage = TokenUsage(), fallbacks: [ProviderFailure] = []) {
        self.provider = provider
        self.model = model
        self.cached = cached
        self.usage = usage
        self.fallbacks = fallbacks
    }
}

/// Token counts of one answer.
public struct TokenUsage: Codable, Sendable, Equatable {
    public var promptTokens: Int
    public var completionTokens: Int
    public var totalTokens: Int
    /// True when the counts are estimates (the local provider, or a provider that reported none).
    public var estimated: Bool

    public init(promptTokens: Int = 0, completionTokens: Int = 0, estimated: Bool = false) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.totalTokens = promptTokens + completionTokens
        self.estimated = estimated
    }
}

/// A provider that failed before the one that answered.
public struct ProviderFailure: Codable, Sendable, Equatable {
    public var provider: String
    /// The status it failed with, e.g. `RESOURCE_EXHAUSTED`, `UNAVAILABLE`.
    public var code: String
    public var message: String

    public init(provider: String, code: String, message: String) {
        self.provider = provider
        self.code = code
        self.message = message
    }
}

/// A piece of study material: what `flashcards.generate` and the tutor's context take.
public struct TextChunk: Codable, Sendable, Equatable {
    /// The chunk's id (store's note-chunk id); cards name it as their `chunkId`.
    public var id: String
    public var text: String
    /// The heading the chunk sits under, if any.
    public var heading: String?

    public init(id: String, text: String, heading: String? = nil) {
        self.id = id
        self.text = text
        self.heading = heading
    }
}

// MARK: - summarize, keywords

/// `summarize` request.
public struct SummarizeRequest: Codable, Sendable, Equatable {
    /// The text, ≤ 2 MiB.
    public var text: String
    /// 1...20; default 3.
    public var maxSentences: Int?
    /// Use only this provider (`local`, `openai`, `gemini`), no fallback; default: the method's route.
    public var provider: String?

    public init(text: String, maxSentences: Int? = nil, provider: String? = nil) {
        self.text = text
        self.maxSentences = maxSentences
        self.provider = provider
    }
}

/// `summarize` response.
public struct SummarizeResponse: Codable, Sendable, Equatable {
    /// The sentences joined by spaces.
    public var summary: String
    /// The chosen sentences in the order of the text.
    public var sentences: [String]
    public var generation: GenerationInfo

    public init(summary: String, sentences: [String], generation: GenerationInfo) {
        self.summary = summary
        self.sentences = sentences
        self.generation = generation
    }
}

/// `keywords` request.
public struct KeywordsRequest: Codable, Sendable, Equatable {
    /// The text, ≤ 2 MiB.
    public var text: String
    /// 1...50; default 10.
    public var maxCount: Int?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(text: String, maxCount: Int? = nil, provider: String? = nil) {
        self.text = text
        self.maxCount = maxCount
        self.provider = provider
    }
}

/// One key term.
public struct Keyword: Codable, Sendable, Equatable {
    /// The term as it appears in the text (lower case unless written as a name or acronym).
    public var term: String
    /// Relevance in (0, 1]; the best term has 1.
    public var score: Double

    public init(term: String, score: Double) {
        self.term = term
        self.score = score
    }
}

/// `keywords` response.
public struct KeywordsResponse: Codable, Sendable, Equatable {
    /// Best first.
    public var keywords: [Keyword]
    public var generation: GenerationInfo

    public init(keywords: [Keyword], generation: GenerationInfo) {
        self.keywords = keywords
        self.generation = generation
    }
}

// MARK: - flashcards.generate

/// `flashcards.generate` request.
public struct FlashcardsRequest: Codable, Sendable, Equatable {
    /// 1...2000 chunks, ≤ 2 MiB of text in all; ids must be unique.
    public var chunks: [TextChunk]
    /// 1...500; default 50.
    public var maxCards: Int?
    /// 1...20; default 5.
    public var maxCardsPerChunk: Int?
    /// Only these kinds; default all.
    public var kinds: [FlashcardKind]?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(chunks: [TextChunk], maxCards: Int? = nil, maxCardsPerChunk: Int? = nil, kinds: [FlashcardKind]? = nil, provider: String? = nil) {
        self.chunks = chunks
        self.maxCards = maxCards
        self.maxCardsPerChunk = maxCardsPerChunk
        self.kinds = kinds
        self.provider = provider
    }
}

/// One generated card; store keeps it, linked to its chunk.
public struct GeneratedCard: Codable, Sendable, Equatable {
    /// The id of the chunk the card was made from.
    public var chunkId: String
    public var kind: FlashcardKind
    public var front: String
    public var back: String

    public init(chunkId: String, kind: FlashcardKind, front: String, back: String) {
        self.chunkId = chunkId
        self.kind = kind
        self.front = front
        self.back = back
    }
}

/// `flashcards.generate` response.
public struct FlashcardsResponse: Codable, Sendable, Equatable {
    /// In the order of the chunks.
    public var cards: [GeneratedCard]
    public var generation: GenerationInfo

    public init(cards: [GeneratedCard], generation: GenerationInfo) {
        self.cards = cards
        self.generation = generation
    }
}

// MARK: - reflect, encourage, thought

/// `reflect` request.
public struct ReflectRequest: Codable, Sendable, Equatable {
    /// What the user wrote or studied, ≤ 2 MiB.
    public var text: String
    /// Who the user is becoming, e.g. "Consistent Reader" (Numu's identity language).
    public var identity: String?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(text: String, identity: String? = nil, provider: String? = nil) {
        self.text = text
        self.identity = identity
        self.provider = provider
    }
}

/// `reflect` response.
public struct ReflectResponse: Codable, Sendable, Equatable {
    public var reflection: String
    public var generation: GenerationInfo

    public init(reflection: String, generation: GenerationInfo) {
        self.reflection = reflection
        self.generation = generation
    }
}

/// `encourage` request: give at least one of the numbers.
public struct EncourageRequest: Codable, Sendable, Equatable {
    /// Share of correct answers in the session, 0...1 (CardGenie).
    public var accuracy: Double?
    /// Consecutive days, 0...100000 (study or habit streak).
    public var streak: Int?
    /// Share of today's tasks done, 0...1 (Numu).
    public var completionRate: Double?
    /// Cards reviewed or tasks done in the session, 0...100000.
    public var count: Int?
    /// Who the user is becoming, e.g. "Consistent Reader".
    public var identity: String?
    /// The user's first name, to address them.
    public var name: String?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(
        accuracy: Double? = nil, streak: Int? = nil, completionRate: Double? = nil, count: Int? = nil,
        identity: String? = nil, name: String? = nil, provider: String? = nil
    ) {
        self.accuracy = accuracy
        self.streak = streak
        self.completionRate = completionRate
        self.count = count
        self.identity = identity
        self.name = name
        self.provider = provider
    }
}

/// `encourage` response.
public struct EncourageResponse: Codable, Sendable, Equatable {
    public var message: String
    public var generation: GenerationInfo

    public init(message: String, generation: GenerationInfo) {
        self.message = message
        self.generation = generation
    }
}

/// One of the user's notes about their house: a question and their answer.
public struct HouseNote: Codable, Sendable, Equatable {
    public var question: String?
    public var answer: String

    public init(question: String? = nil, answer: String) {
        self.question = question
        self.answer = answer
    }
}

/// `thought` request.
public struct ThoughtRequest: Codable, Sendable, Equatable {
    /// 1...200 notes, ≤ 2 MiB in all.
    public var notes: [HouseNote]
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(notes: [HouseNote], provider: String? = nil) {
        self.notes = notes
        self.provider = provider
    }
}

/// How the house feels about what it noticed.
public enum HouseEmotion: String, WireEnum {
    case happy, curious, concerned, calm, proud
}

/// What a house thought is about.
public enum ThoughtCategory: String, WireEnum {
    case maintenance, comfort, energy, safety, memories, general
}

/// `thought` response: a house thought, as C11S House shows it.
public struct HouseThought: Codable, Sendable, Equatable {
    public var thought: String
    public var emotion: HouseEmotion
    public var category: ThoughtCategory
    /// 0...1: how strongly the notes support the thought.
    public var confidence: Double
    public var suggestion: String?
    public var generation: GenerationInfo

    public init(thought: String, emotion: HouseEmotion, category: ThoughtCategory, confidence: Double, suggestion: String?, generation: GenerationInfo) {
        self.thought = thought
        self.emotion = emotion
        self.category = category
        self.confidence = confidence
        self.suggestion = suggestion
        self.generation = generation
    }
}

// MARK: - chat

/// Who said a chat message.
public enum ChatRole: String, WireEnum {
    case user, assistant, system
}

/// One message of a conversation.
public struct ChatMessage: Codable, Sendable, Equatable {
    public var role: ChatRole
    /// ≤ 256 KiB.
    public var content: String

    public init(role: ChatRole, content: String) {
        self.role = role
        self.content = content
    }
}

/// A flashcard the tutor may refer to.
public struct ContextFlashcard: Codable, Sendable, Equatable {
    public var front: String
    public var back: String

    public init(front: String, back: String) {
        self.front = front
        self.back = back
    }
}

/// Study material the tutor answers from (≤ 256 KiB in all).
public struct StudyContext: Codable, Sendable, Equatable {
    /// The material's title, e.g. "Photosynthesis notes".
    public var title: String?
    /// Material chunks.
    public var chunks: [TextChunk]?
    /// A flashcard set's cards.
    public var flashcards: [ContextFlashcard]?

    public init(title: String? = nil, chunks: [TextChunk]? = nil, flashcards: [ContextFlashcard]? = nil) {
        self.title = title
        self.chunks = chunks
        self.flashcards = flashcards
    }
}

/// `chat` request.
///
/// Stateless (as before): `messages` is the conversation so far and `context` the study material.
/// Stored (the tutor flow): `conversationId` names a store conversation of the caller; ai-gateway
/// loads its latest messages from store, answers, and appends the request's messages and the
/// answer to it. `materialId` / `setId` name a store material / flashcard set of the caller that
/// ai-gateway loads as the study context. Every store call acts for the request header's `user`
/// (another user's record is NOT_FOUND) and needs store to be reachable (else UNAVAILABLE).
public struct ChatRequest: Codable, Sendable, Equatable {
    /// Names the answer: its stream topic is `ai.stream.<requestId>` and `chat.cancel` takes it.
    /// Required with `stream: true`; 1...64 of `A-Z a-z 0-9 _ -`.
    public var requestId: String?
    /// The conversation so far, oldest first, ending with the user's question (1...100; the last
    /// 5 go into the prompt). With `conversationId`: only the new turn(s), usually the user's
    /// question; they follow the stored messages in the prompt and are stored after the answer
    /// (`system` messages are instructions for this answer and are not stored).
    public var messages: [ChatMessage]
    /// Inline study material; not together with `materialId` or `setId`.
    public var context: StudyContext?
    /// Publish the answer token by token on `ai.stream.<requestId>`; the call still returns the
    /// whole answer when done.
    public var stream: Bool?
    /// 1...8192; default the provider's.
    public var maxTokens: Int?
    /// 0...2; default 0.7.
    public var temperature: Double?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?
    /// A store conversation of the caller: its latest messages are the history, and the request's
    /// messages and the answer are appended to it (idempotently under the header's `idem`).
    public var conversationId: String?
    /// A store material of the caller: its title, chunks (reading order, up to 256 KiB with the
    /// cards) and cards become the study context. Default: the conversation's material.
    public var materialId: String?
    /// A store flashcard set of the caller: its cards become part of the study context (its name
    /// the title when there is no material). Default: the conversation's set.
    public var setId: String?

    public init(
        requestId: String? = nil, messages: [ChatMessage], context: StudyContext? = nil, stream: Bool? = nil,
        maxTokens: Int? = nil, temperature: Double? = nil, provider: String? = nil,
        conversationId: String? = nil, materialId: String? = nil, setId: String? = nil
    ) {
        self.requestId = requestId
        self.messages = messages
        self.context = context
        self.stream = stream
        self.maxTokens = maxTokens
        self.temperature = temperature
        self.provider = provider
        self.conversationId = conversationId
        self.materialId = materialId
        self.setId = setId
    }
}

/// Why an answer ended.
public enum FinishReason: String, WireEnum {
    /// The answer is complete.
    case stop
    /// The answer hit `maxTokens`.
    case length
    /// `chat.cancel` stopped it; the text is what had arrived.
    case cancelled
}

/// `chat` response.
public struct ChatResponse: Codable, Sendable, Equatable {
    /// The request's `requestId`, or one the gateway made.
    public var requestId: String
    /// The whole answer.
    public var text: String
    public var finishReason: FinishReason
    public var generation: GenerationInfo
    /// With `conversationId`: the store ids of the request's messages as appended to the
    /// conversation, in order (`system` messages are not stored).
    public var messageIds: [String]?
    /// With `conversationId`: the store id of the answer's message; absent when the answer is
    /// empty (cancelled before its first word) and so not stored.
    public var answerMessageId: String?

    public init(
        requestId: String, text: String, finishReason: FinishReason, generation: GenerationInfo,
        messageIds: [String]? = nil, answerMessageId: String? = nil
    ) {
        self.requestId = requestId
        self.text = text
        self.finishReason = finishReason
        self.generation = generation
        self.messageIds = messageIds
        self.answerMessageId = answerMessageId
    }
}

/// What one stream event is.
public enum ChatStreamEventKind: String, WireEnum {
    /// `delta` is the next piece of the answer.
    case token
    /// Discard the text so far: a provider failed mid-answer and the answer starts again (from
    /// a retry or the next provider).
    case reset
    /// The end: `text` is the whole answer, with `finishReason` and `generation`.
    case final
    /// The end: no answer could be made; `error` says why (the call fails with the same).
    case error
}

/// One event on `ai.stream.<requestId>`.
public struct ChatStreamEvent: Codable, Sendable, Equatable {
    public var requestId: String
    /// 0, 1, 2, … in publishing order.
    public var index: Int
    public var kind: ChatStreamEventKind
    /// The next piece of text (`token`).
    public var delta: String?
    /// The whole answer (`final`).
    public var text: String?
    public var finishReason: FinishReason?
    /// Provider, model and usage (`final`).
    public var generation: GenerationInfo?
    /// Why it failed (`error`).
    public var error: String?

    public init(
        requestId: String, index: Int, kind: ChatStreamEventKind, delta: String? = nil, text: String? = nil,
        finishReason: FinishReason? = nil, generation: GenerationInfo? = nil, error: String? = nil
    ) {
        self.requestId = requestId
        self.index = index
        self.kind = kind
        self.delta = delta
        self.text = text
        self.finishReason = finishReason
        self.generation = generation
        self.error = error
    }
}

/// `chat.cancel` request.
public struct ChatCancelRequest: Codable, Sendable, Equatable {
    public var requestId: String

    public init(requestId: String) { self.requestId = requestId }
}

/// `chat.cancel` response.
public struct ChatCancelResponse: Codable, Sendable, Equatable {
    public var requestId: String
    /// True when an answer in progress was stopped.
    public var cancelled: Bool

    public init(requestId: String, cancelled: Bool) {
        self.requestId = requestId
        self.cancelled = cancelled
    }
}

// MARK: - intents

/// MirrorBuddy's intent categories.
public enum IntentCategory: String, WireEnum {
    case navigation, creation, query, action
}

/// A command pattern to register: words, `*` wildcards (one or more words) and `[optional]`
/// words, e.g. `show * materials`, `schedule study [session]`.
public struct IntentRegistration: Codable, Sendable, Equatable {
    /// 1...200 characters; at least one literal word.
    public var pattern: String
    /// The intent's name, e.g. `showSubjectMaterials`.
    public var intent: String
    public var category: IntentCategory
    /// Names for the wildcards, in order (default `*` for the first, `*2`, `*3`, … after it).
    public var parameters: [String]?

    public init(pattern: String, intent: String, category: IntentCategory, parameters: [String]? = nil) {
        self.pattern = pattern
        self.intent = intent
        self.category = category
        self.parameters = parameters
    }
}

/// A command pattern that applies to a user.
public struct IntentCommand: Codable, Sendable, Equatable {
    /// `builtin:<intent>` for built-in patterns.
    public var id: String
    /// Empty for built-in patterns.
    public var userId: String
    public var pattern: String
    public var intent: String
    public var category: IntentCategory
    public var parameters: [String]
    public var builtIn: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, pattern: String, intent: String, category: IntentCategory, parameters: [String],
        builtIn: Bool, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.pattern = pattern
        self.intent = intent
        self.category = category
        self.parameters = parameters
        self.builtIn = builtIn
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `intent.register` request.
public struct IntentRegisterRequest: Codable, Sendable, Equatable {
    /// 1...100 patterns; a pattern the user already has is replaced.
    public var commands: [IntentRegistration]

    public init(commands: [IntentRegistration]) { self.commands = commands }
}

/// `intent.remove` request.
public struct IntentRemoveRequest: Codable, Sendable, Equatable {
    /// Ids of the user's own commands.
    public var ids: [String]

    public init(ids: [String]) { self.ids = ids }
}

/// `intent.register`, `intent.list` and `intent.remove` response.
public struct IntentListResponse: Codable, Sendable, Equatable {
    /// For `intent.register`: the stored commands; otherwise every command that applies.
    public var commands: [IntentCommand]

    public init(commands: [IntentCommand]) { self.commands = commands }
}

/// `intent.parse` request.
public struct IntentParseRequest: Codable, Sendable, Equatable {
    /// What the user said, 1...500 characters; case and punctuation do not matter.
    public var text: String

    public init(text: String) { self.text = text }
}

/// A pattern that matched a command (or nearly did).
public struct IntentMatch: Codable, Sendable, Equatable {
    public var intent: String
    public var category: IntentCategory
    public var pattern: String
    /// The words each wildcard captured, by parameter name.
    public var parameters: [String: String]
    /// 1 for an exact match; for candidates, how close the command came (0...1).
    public var confidence: Double

    public init(intent: String, category: IntentCategory, pattern: String, parameters: [String: String], confidence: Double) {
        self.intent = intent
        self.category = category
        self.pattern = pattern
        self.parameters = parameters
        self.confidence = confidence
    }
}

/// `intent.parse` response.
public struct IntentParseResponse: Codable, Sendable, Equatable {
    /// The command as matched: lower case, punctuation removed.
    public var normalized: String
    /// The matching command, if a pattern matched.
    public var match: IntentMatch?
    /// With no match, the closest patterns (best first, at most 3).
    public var candidates: [IntentMatch]
    /// True when the answer came from the LRU cache of recent commands.
    public var cached: Bool

    public init(normalized: String, match: IntentMatch?, candidates: [IntentMatch], cached: Bool) {
        self.normalized = normalized
        self.match = match
        self.candidates = candidates
        self.cached = cached
    }
}

// MARK: - transcribe

/// `transcribe` request; the audio is the request's attachment frame (≤ 5 MiB).
public struct TranscribeRequest: Codable, Sendable, Equatable {
    /// ISO 639-1 language of the audio, e.g. `en`; default: detected.
    public var language: String?
    /// Words to expect (names, terms), passed to the provider as a hint.
    public var prompt: String?
    /// The file name to report to the provider (its extension tells the format), default `audio.m4a`.
    public var fileName: String?
    /// The audio's media type, default from `fileName`.
    public var contentType: String?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(language: String? = nil, prompt: String? = nil, fileName: String? = nil, contentType: String? = nil, provider: String? = nil) {
        self.language = language
        self.prompt = prompt
        self.fileName = fileName
        self.contentType = contentType
        self.provider = provider
    }
}

/// A timed piece of a transcript.
public struct TranscriptSegment: Codable, Sendable, Equatable {
    /// Seconds from the start of the audio.
    public var start: Double
    public var end: Double
    public var text: String
    /// 0...1, when the provider reports it.
    public var confidence: Double?

    public init(start: Double, end: Double, text: String, confidence: Double?) {
        self.start = start
        self.end = end
        self.text = text
        self.confidence = confidence
    }
}

/// `transcribe` response (C11S House's TranscriptionResult).
public struct TranscribeResponse: Codable, Sendable, Equatable {
    public var text: String
    /// The detected or given language.
    public var language: String?
    /// 0...1, the segments' mean; nil when the provider reports nothing to derive it from.
    public var confidence: Double?
    /// Other readings, when the provider gives any.
    public var alternatives: [String]
    public var segments: [TranscriptSegment]
    /// Seconds of audio.
    public var duration: Double
    public var generation: GenerationInfo

    public init(
        text: String, language: String?, confidence: Double?, alternatives: [String], segments: [TranscriptSegment],
        duration: Double, generation: GenerationInfo
    ) {
        self.text = text
        self.language = language
        self.confidence = confidence
        self.alternatives = alternatives
        self.segments = segments
        self.duration = duration
        self.generation = generation
    }
}

// MARK: - usage, providers

/// `usage` request.
public struct UsageRequest: Codable, Sendable, Equatable {
    /// Only usage from this day on (UTC days); default everything kept.
    public var since: Date?
    /// Sum over every user instead of the caller's own (operators); no user ids are returned.
    public var allUsers: Bool?

    public init(since: Date? = nil, allUsers: Bool? = nil) {
        self.since = since
        self.allUsers = allUsers
    }
}

/// Usage of one provider and model.
public struct UsageEntry: Codable, Sendable, Equatable {
    public var provider: String
    public var model: String
    /// Requests answered or attempted, cache hits included.
    public var requests: Int
    public var cacheHits: Int
    public var errors: Int
    public var promptTokens: Int
    public var completionTokens: Int
    public var totalTokens: Int
    /// Seconds of audio transcribed.
    public var audioSeconds: Double
    /// From the configured prices; 0 for local and cached answers.
    public var estimatedCostUSD: Double

    public init(
        provider: String, model: String, requests: Int, cacheHits: Int, errors: Int, promptTokens: Int,
        completionTokens: Int, audioSeconds: Double, estimatedCostUSD: Double
    ) {
        self.provider = provider
        self.model = model
        self.requests = requests
        self.cacheHits = cacheHits
        self.errors = errors
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.totalTokens = promptTokens + completionTokens
        self.audioSeconds = audioSeconds
        self.estimatedCostUSD = estimatedCostUSD
    }
}

/// `usage` response.
public struct UsageResponse: Codable, Sendable, Equatable {
    /// Sorted by provider, then model.
    public var entries: [UsageEntry]
    public var totalRequests: Int
    public var totalEstimatedCostUSD: Double

    public init(entries: [UsageEntry]) {
        self.entries = entries
        self.totalRequests = entries.reduce(0) { $0 + $1.requests }
        self.totalEstimatedCostUSD = entries.reduce(0) { $0 + $1.estimatedCostUSD }
    }
}

/// The kinds of provider the gateway speaks to.
public enum ProviderKind: String, WireEnum {
    case local, openai, gemini
}

/// One configured provider (never its key).
public struct ProviderInfo: Codable, Sendable, Equatable {
    public var name: String
    public var kind: ProviderKind
    public var baseURL: String?
    public var chatModel: String
    public var transcriptionModel: String?
    /// The token bucket's rate; nil for no limit.
    public var requestsPerMinute: Int?
    /// Whether a key was configured (the key itself is never shown).
    public var hasKey: Bool

    public init(name: String, kind: ProviderKind, baseURL: String?, chatModel: String, transcriptionModel: String?, requestsPerMinute: Int?, hasKey: Bool) {
        self.name = name
        self.kind = kind
        self.baseURL = baseURL
        self.chatModel = chatModel
        self.transcriptionModel = transcriptionModel
        self.requestsPerMinute = requestsPerMinute
        self.hasKey = hasKey
    }
}

/// `providers` response.
public struct ProvidersResponse: Codable, Sendable, Equatable {
    public var providers: [ProviderInfo]
    /// Each method's fallback chain, e.g. `"chat": ["gemini", "openai", "local"]`.
    public var routes: [String: [String]]

    public init(providers: [ProviderInfo], routes: [String: [String]]) {
        self.providers = providers
        self.routes = routes
    }
}
