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
        Self.self, "summarize", "Summarize a text (≤ 2 MiB) in at most maxSentences (1...20, default 3) sentences.", audience: .app)
    /// `keywords`: the key terms of a text.
    public let keywords = Method<KeywordsRequest, KeywordsResponse>(
        Self.self, "keywords", "The key terms of a text (≤ 2 MiB), best first, at most maxCount (1...50, default 10).", audience: .app)
    /// `flashcards.generate`: cards of kind qa / cloze / definition, each linked to its chunk.
    public let generateFlashcards = Method<FlashcardsRequest, FlashcardsResponse>(
        Self.self, "flashcards.generate",
        "Flashcards (qa, cloze, definition) from text chunks (1...2000, ≤ 2 MiB in all); each card names its chunkId.", audience: .app)
    /// `reflect`: a warm reflection on what the user wrote or studied.
    public let reflect = Method<ReflectRequest, ReflectResponse>(
        Self.self, "reflect", "A warm, identity-based reflection on a note or study text; never guilt.", audience: .app)
    /// `encourage`: encouragement from accuracy, streak or completion numbers.
    public let encourage = Method<EncourageRequest, EncourageResponse>(
        Self.self, "encourage", "Encouragement from accuracy, streak and completion numbers; identity-based, never guilt.", audience: .app)
    /// `thought`: a "house thought" (C11S House) from the user's notes.
    public let thought = Method<ThoughtRequest, HouseThought>(
        Self.self, "thought", "A house thought (thought, emotion, category, confidence, suggestion) from the user's notes.", audience: .app)
    /// `chat`: the tutor; with `stream: true` tokens are published on `ai.stream.<requestId>`;
    /// with `conversationId` / `materialId` / `setId` the history and context come from store and
    /// the turn is stored there.
    public let chat = Method<ChatRequest, ChatResponse>(
        Self.self, "chat",
        "The tutor: the last 5 messages and optional study context (inline, or materialId/setId from store); stream=true publishes tokens on ai.stream.<requestId>; conversationId loads and stores the conversation in store.", audience: .app)
    /// `chat.cancel`: stops a chat that is still answering.
    public let cancelChat = Method<ChatCancelRequest, ChatCancelResponse>(
        Self.self, "chat.cancel", "Stop a chat answer in progress; the chat call returns the text so far with finishReason cancelled.", audience: .app)
    /// `intent.parse`: a voice command to its intent and parameters.
    public let parseIntent = Method<IntentParseRequest, IntentParseResponse>(
        Self.self, "intent.parse",
        "Match a voice command, as text or spoken in the attachment frame (≤ 5 MiB), against the registered patterns; else the best fuzzy candidates.", audience: .app)
    /// `intent.register`: adds (or replaces, by pattern) the user's own command patterns.
    public let registerIntents = Method<IntentRegisterRequest, IntentListResponse>(
        Self.self, "intent.register", "Register command patterns (* wildcards, [optional] words) for the calling user; returns them stored.", audience: .app)
    /// `intent.list`: the built-in and the user's command patterns.
    public let listIntents = Method<Empty, IntentListResponse>(
        Self.self, "intent.list", "The command patterns that apply to the calling user: built-in ones and their own.", audience: .app)
    /// `intent.remove`: removes some of the user's own command patterns.
    public let removeIntents = Method<IntentRemoveRequest, IntentListResponse>(
        Self.self, "intent.remove", "Remove the calling user's own command patterns by id; returns those that remain.", audience: .app)
    /// `transcribe`: audio in the attachment frame (≤ 5 MiB) to text.
    public let transcribe = Method<TranscribeRequest, TranscribeResponse>(
        Self.self, "transcribe",
        "Transcribe the audio in the attachment frame (≤ 5 MiB): a Whisper-compatible provider, or offline (pocketsphinx, English) by default; mode=command hears only the user's command patterns.", audience: .app)
    /// `speak`: text to speech; the audio (WAV, or Ogg/Opus) in the reply's attachment frame.
    public let speak = Method<SpeakRequest, SpeakResponse>(
        Self.self, "speak",
        "Text (≤ 5,000 characters) to speech: WAV 16-bit PCM or Ogg/Opus in the reply's attachment; offline (espeak-ng) unless a provider is configured.", audience: .app)
    /// `voices`: the voices `speak` can use, per provider.
    public let voices = Method<VoicesRequest, VoicesResponse>(
        Self.self, "voices", "The voices speak can use: espeak-ng's installed voices, and OpenAI's when configured.", audience: .app)
    /// `usage`: requests, tokens, cache hits, errors and estimated cost per provider and model.
    public let usage = Method<UsageRequest, UsageResponse>(
        Self.self, "usage", "Requests, tokens, cache hits, errors and estimated cost per provider and model.", audience: .app)
    /// `providers`: the configured providers and the route of each method (never the keys).
    public let providers = Method<Empty, ProvidersResponse>(
        Self.self, "providers", "The configured providers, their limits and each method's fallback chain; keys are never shown.", audience: .operator)

    /// The events of one streamed chat answer. Subscribe with ``chatStream(requestId:)`` (the
    /// exact topic: the request id in lower case) before calling `chat`.
    public let chatStreamEvents = Topic<ChatStreamEvent>(
        Self.self, "ai.stream.<requestId>", "A streamed chat answer: token events in order (index 0, 1, …), then one final or error event.")

    /// The topic of the answer streamed for `requestId`: `ai.stream.<requestId in lower case>`
    /// (topics are lower case, wire protocol §3).
    public func chatStream(requestId: String) -> Topic<ChatStreamEvent> {
        Topic(Self.self, "ai.stream." + requestId.lowercased(), chatStreamEvents.summary)
    }
}

/// Limits of the `ai-gateway` methods, enforced with `INVALID_ARGUMENT` naming the limit.
public enum AIGatewayLimits {
    /// The largest text `summarize`, `keywords`, `reflect` take, and all chunks of
    /// `flashcards.generate` together: 2 MiB of UTF-8.
    public static let textBytes = 2 * 1024 * 1024
    /// The largest audio attachment of `transcribe`: 5 MiB (MirrorBuddy's voice limit).
    public static let audioBytes = 5 * 1024 * 1024
    /// The longest text `speak` takes, in characters (Unicode scalars).
    public static let speechCharacters = 5000
    /// The longest speech `speak` returns, in seconds (about 26 MB of WAV, within the bus's
    /// 64 MiB messages); a text that would take longer at its rate is INVALID_ARGUMENT.
    public static let speechSeconds = 600.0
    /// The longest audio the offline recognizer transcribes, in seconds (decoding is about
    /// real time on one core).
    public static let offlineAudioSeconds = 300.0
    /// The longest `prompt` of `transcribe` and `intent.parse`, in characters.
    public static let promptCharacters = 4000
    /// The longest voice command `intent.parse` matches, in characters.
    public static let commandCharacters = 500
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

// MARK: - Values several methods share

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
