import Foundation
import Wire

// Payloads of the tutor: `chat`, its streamed events and `chat.cancel`.

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
