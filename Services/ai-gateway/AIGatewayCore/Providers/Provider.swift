import Bus
import Contracts
import Foundation
import HTTPClient
import Wire

/// What a remote model is asked: a system instruction and a conversation.
struct Prompt: Codable, Sendable, Equatable {
    var system: String?
    /// User and assistant turns, oldest first, ending with the user's.
    var messages: [ChatMessage]
    var maxTokens: Int?
    var temperature: Double?
    /// Ask for a JSON answer (Gemini's `responseMimeType`; the instruction says so for OpenAI).
    var json = false
}

/// A whole answer.
struct Completion: Sendable, Equatable {
    var text: String
    var finishReason: FinishReason
    var usage: TokenUsage
}

/// One piece of a streamed answer.
enum StreamPiece: Sendable, Equatable {
    case delta(String)
    /// The provider said the answer is complete.
    case finished(FinishReason, TokenUsage?)
}

/// A provider of chat completions (OpenAI-compatible, Gemini).
protocol ChatProvider: Sendable {
    var name: String { get }
    var model: String { get }
    /// The whole answer to `prompt`.
    func complete(_ prompt: Prompt, timeout: Duration) async throws(ProviderError) -> Completion
    /// The answer as it is generated; the stream throws ``ProviderError``s.
    func stream(_ prompt: Prompt, timeout: Duration) -> AsyncThrowingStream<StreamPiece, any Error>
}

/// A transcript as a provider returns it.
struct Transcript: Sendable, Equatable {
    var text: String
    var language: String?
    var duration: Double
    var segments: [TranscriptSegment]
    /// Other readings, when the provider gives any.
    var alternatives: [String] = []
    /// 0...1 for the whole transcript when the provider says (offline commands); else the
    /// segments' tell.
    var confidence: Double?
}

/// A provider of speech-to-text (Whisper-compatible).
protocol TranscriptionProvider: Sendable {
    var name: String { get }
    var transcriptionModel: String { get }
    func transcribe(_ audio: Data, request: TranscribeRequest, timeout: Duration) async throws(ProviderError) -> Transcript
}

/// What a speech provider is asked: the request's checked fields with defaults applied.
struct SpeechInput: Codable, Sendable, Equatable {
    var text: String
    var language: String
    /// The voice asked for, when the caller named one.
    var voice: String?
    var rate: Double
    var pitch: Double
}

/// A provider of text-to-speech (OpenAI-compatible `/audio/speech`).
protocol SpeechProvider: Sendable {
    var name: String { get }
    var speechModel: String { get }
    /// The voices it has, for `voices` and to tell whether a requested voice is its own.
    var speechVoices: [String] { get }
    func speak(_ input: SpeechInput, timeout: Duration) async throws(ProviderError) -> SpeechAudio
}

/// Why one provider failed to answer.
enum ProviderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An HTTP error status, with the provider's message and any `Retry-After` it asked for.
    case http(status: Int, message: String, retryAfter: Duration?)
    /// No HTTP response (timeout, connection refused, TLS).
    case transport(HTTPClientError)
    /// The answer was not in the format promised.
    case malformed(String)
    /// A stream ended before the provider said it was complete.
    case brokenStream(String)
    /// The provider's rate limit leaves no request within the deadline.
    case rateLimited(String)
    /// The answer was well-formed but not usable (blocked, empty, or guilt language).
    case unusable(String)
    /// The request's deadline passed.
    case deadline(String)

    /// Worth another try: 429, 500, 502, 503, 504, timeouts, lost connections, broken streams.
    var isRetryable: Bool {
        switch self {
        case .http(let status, _, _): [429, 500, 502, 503, 504].contains(status)
        case .transport(let error): error != .cancelled
        case .brokenStream: true
        case .malformed, .rateLimited, .unusable, .deadline: false
        }
    }

    /// How long the provider asked us to wait, if it did.
    var retryAfter: Duration? {
        if case .http(_, _, let retryAfter) = self { return retryAfter }
        return nil
    }

    /// The status the failure is reported with.
    var code: StatusCode {
        switch self {
        case .http(let status, _, _):
            switch status {
            case 429: .resourceExhausted
            case 400, 413, 422: .invalidArgument
            case 401: .unauthenticated
            case 403: .permissionDenied
            case 404: .notFound
            case 408, 504: .deadlineExceeded
            default: .unavailable
            }
        case .transport(let error): error.busError.code
        case .malformed: .internal
        case .brokenStream: .unavailable
        case .rateLimited: .resourceExhausted
        case .unusable: .failedPrecondition
        case .deadline: .deadlineExceeded
        }
    }

    /// The same error with `secret` (an API key a provider echoed back) blanked out.
    func redacting(_ secret: APIKey?) -> ProviderError {
        guard let secret, !secret.value.isEmpty else { return self }
        func clean(_ text: String) -> String { text.replacingOccurrences(of: secret.value, with: "[redacted]") }
        switch self {
        case .http(let status, let message, let retryAfter): return .http(status: status, message: clean(message), retryAfter: retryAfter)
        case .malformed(let detail): return .malformed(clean(detail))
        case .brokenStream(let detail): return .brokenStream(clean(detail))
        case .unusable(let detail): return .unusable(clean(detail))
        case .transport, .rateLimited, .deadline: return self
        }
    }

    var description: String {
        switch self {
        case .http(let status, let message, _): "HTTP \(status): \(message)"
        case .transport(let error): error.description
        case .malformed(let detail): "malformed answer: \(detail)"
        case .brokenStream(let detail): "the stream broke: \(detail)"
        case .rateLimited(let detail), .unusable(let detail), .deadline(let detail): detail
        }
    }
}
