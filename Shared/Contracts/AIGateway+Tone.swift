import Foundation
import Wire

// Payloads of ai-gateway's tone methods: `reflect`, `encourage`, `thought`.

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
    /// What prompted the thought, when one note did: that note's question (or the start of its
    /// answer, at most 120 characters) — C11S House's `HouseThought.context`.
    public var context: String?
    public var generation: GenerationInfo

    public init(
        thought: String, emotion: HouseEmotion, category: ThoughtCategory, confidence: Double, suggestion: String?, context: String? = nil,
        generation: GenerationInfo
    ) {
        self.thought = thought
        self.emotion = emotion
        self.category = category
        self.confidence = confidence
        self.suggestion = suggestion
        self.context = context
        self.generation = generation
    }
}
