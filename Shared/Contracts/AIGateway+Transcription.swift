import Foundation
import Wire

// Payloads of `transcribe`.

/// What `transcribe` listens for.
public enum TranscriptionMode: String, WireEnum {
    /// Free speech: any English words (the default).
    case dictation
    /// A voice command: offline, only what the user's command patterns and the built-in ones
    /// allow (a grammar of them, `*` a slot of free words); the reply's `command` says which.
    case command
}

/// `transcribe` request; the audio is the request's attachment frame (≤ 5 MiB).
public struct TranscribeRequest: Codable, Sendable, Equatable {
    /// ISO 639-1 language of the audio, e.g. `en`; default: detected.
    public var language: String?
    /// Words to expect (names, terms), ≤ 4,000 characters, passed to the provider as a hint; in
    /// `command` mode offline, the phrases a pattern's `*` slot may hold, separated by commas or
    /// new lines (a slot hears nothing else).
    public var prompt: String?
    /// The file name to report to the provider (its extension tells the format), default `audio.m4a`.
    public var fileName: String?
    /// The audio's media type, default from `fileName`.
    public var contentType: String?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?
    /// `dictation` (default) or `command`.
    public var mode: TranscriptionMode?

    public init(
        language: String? = nil, prompt: String? = nil, fileName: String? = nil, contentType: String? = nil, provider: String? = nil,
        mode: TranscriptionMode? = nil
    ) {
        self.language = language
        self.prompt = prompt
        self.fileName = fileName
        self.contentType = contentType
        self.provider = provider
        self.mode = mode
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
    /// In `command` mode: the command `text` is, matched as `intent.parse` matches text (no
    /// `match` when what was heard is no command).
    public var command: IntentParseResponse?

    public init(
        text: String, language: String?, confidence: Double?, alternatives: [String], segments: [TranscriptSegment],
        duration: Double, generation: GenerationInfo, command: IntentParseResponse? = nil
    ) {
        self.text = text
        self.language = language
        self.confidence = confidence
        self.alternatives = alternatives
        self.segments = segments
        self.duration = duration
        self.generation = generation
        self.command = command
    }
}
