import Foundation
import Wire

// Payloads of the voice-command methods (`intents.*`).

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

/// `intent.parse` request: the command as text, or spoken in the request's attachment frame
/// (audio of any format ffmpeg reads, ≤ 5 MiB, recognized as `transcribe` in `command` mode).
public struct IntentParseRequest: Codable, Sendable, Equatable {
    /// What the user said, 1...500 characters; case and punctuation do not matter. Absent when
    /// the attachment holds the spoken command.
    public var text: String?
    /// For a spoken command: the phrases its `*` slots may hold (subject names, screens,
    /// topics), separated by commas or new lines, ≤ 4,000 characters. Offline a slot hears only
    /// these; without them the patterns with a slot cannot be heard.
    public var prompt: String?
    /// For a spoken command: use only this transcription provider (`local`, `openai`).
    public var provider: String?

    public init(text: String? = nil, prompt: String? = nil, provider: String? = nil) {
        self.text = text
        self.prompt = prompt
        self.provider = provider
    }
}

/// How a spoken command was heard (`intent.parse` with audio).
public struct HeardCommand: Codable, Sendable, Equatable {
    /// The words heard; offline, always words of a command pattern (a `*` slot's free words
    /// among them), or empty when nothing was heard.
    public var text: String
    /// 0...1, the posterior probability of the reading; nil when the provider gives none.
    public var confidence: Double?
    /// Seconds of audio.
    public var duration: Double
    public var generation: GenerationInfo

    public init(text: String, confidence: Double?, duration: Double, generation: GenerationInfo) {
        self.text = text
        self.confidence = confidence
        self.duration = duration
        self.generation = generation
    }
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
    /// For a spoken command: what was heard.
    public var heard: HeardCommand?

    public init(normalized: String, match: IntentMatch?, candidates: [IntentMatch], cached: Bool, heard: HeardCommand? = nil) {
        self.normalized = normalized
        self.match = match
        self.candidates = candidates
        self.cached = cached
        self.heard = heard
    }
}
