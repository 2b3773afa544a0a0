import Foundation
import Wire

// Payloads of `speak` and `voices` (C11S House: "the house speaks").

/// The encodings `speak` returns.
public enum SpeechFormat: String, WireEnum {
    /// RIFF WAVE, 16-bit signed little-endian PCM, mono (`audio/wav`).
    case wav
    /// Opus in an Ogg container (`audio/ogg`), about a tenth of the WAV's size.
    case ogg

    /// The media type of the attachment.
    public var contentType: String { self == .wav ? "audio/wav" : "audio/ogg" }
    /// The attachment's name: `speech.wav` or `speech.ogg`.
    public var fileName: String { "speech." + rawValue }
}

/// `speak` request; the audio comes back in the reply's attachment frame. Every number is
/// range-checked when the request is decoded (INVALID_ARGUMENT naming the field).
public struct SpeakRequest: Codable, Sendable, Equatable {
    /// What to say: 1...5,000 characters (``AIGatewayLimits/speechCharacters``).
    public var text: String
    /// BCP 47 language of the text, e.g. `en-US` (default) or `it`; picks the voice when
    /// `voice` is not given. Letters, digits and `-`, at most 35.
    public var language: String?
    /// A voice `voices` lists (local: an espeak-ng voice such as `en-us` or `en-us+f2`;
    /// openai: `alloy`, `nova`, …). A provider that does not have it uses its voice for `language`.
    public var voice: String?
    /// Speed as a multiple of the voice's normal rate, 0.25...4 (default 1; OpenAI's `speed`).
    public var rate: Double?
    /// Pitch as a multiple of the voice's normal pitch, 0.5...2 (default 1; as Apple's
    /// `pitchMultiplier`). OpenAI's voices have no pitch setting and ignore it.
    public var pitch: Double?
    /// `wav` (default) or `ogg` (Opus).
    public var format: SpeechFormat?
    /// Use only this provider, no fallback; default: the method's route.
    public var provider: String?

    public init(
        text: String, language: String? = nil, voice: String? = nil, rate: Double? = nil, pitch: Double? = nil, format: SpeechFormat? = nil,
        provider: String? = nil
    ) {
        self.text = text
        self.language = language
        self.voice = voice
        self.rate = rate
        self.pitch = pitch
        self.format = format
        self.provider = provider
    }

    private enum CodingKeys: String, CodingKey {
        case text, language, voice, rate, pitch, format, provider
    }

    /// Decodes and checks every field against its limit, so that no handler or provider sees
    /// a text too long or a number out of range.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func check(_ condition: Bool, _ key: CodingKeys, _ requirement: @autoclosure () -> String) throws {
            guard !condition else { return }
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: requirement())
        }
        text = try container.decode(String.self, forKey: .text)
        try check(text.contains { !$0.isWhitespace }, .text, "must not be empty")
        let length = text.unicodeScalars.count
        try check(length <= AIGatewayLimits.speechCharacters, .text, "must be at most \(AIGatewayLimits.speechCharacters) characters, got \(length)")
        language = try container.decodeIfPresent(String.self, forKey: .language)
        if let language {
            try check(Self.isLanguageTag(language), .language, "must be a BCP 47 language tag such as en-US (letters, digits, '-'; at most 35)")
        }
        voice = try container.decodeIfPresent(String.self, forKey: .voice)
        if let voice {
            try check(Self.isVoiceName(voice), .voice, "must be a voice name from 'voices' (letters, digits, '-', '_', '+', '.', '/'; at most 64)")
        }
        rate = try container.decodeIfPresent(Double.self, forKey: .rate)
        if let rate { try check(SpeechLimits.rate.contains(rate), .rate, "must be in \(SpeechLimits.rate), got \(rate)") }
        pitch = try container.decodeIfPresent(Double.self, forKey: .pitch)
        if let pitch { try check(SpeechLimits.pitch.contains(pitch), .pitch, "must be in \(SpeechLimits.pitch), got \(pitch)") }
        format = try container.decodeIfPresent(SpeechFormat.self, forKey: .format)
        provider = try container.decodeIfPresent(String.self, forKey: .provider)
    }

    /// A BCP 47 language tag as `speak` takes it: letters, digits and `-`, at most 35, starting with a letter.
    public static func isLanguageTag(_ value: String) -> Bool { isTag(value, maximum: 35, extra: "-") }

    /// A voice name as `speak` takes it: letters, digits, `-`, `_`, `+`, `.`, `/`, at most 64, starting with a letter.
    public static func isVoiceName(_ value: String) -> Bool { isTag(value, maximum: 64, extra: "-_+./") }

    /// 1...`maximum` ASCII letters, digits and `extra` characters, starting with a letter.
    static func isTag(_ value: String, maximum: Int, extra: String) -> Bool {
        let allowed = Set(extra.utf8)
        func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        guard let first = value.utf8.first, isLetter(first), value.utf8.count <= maximum else { return false }
        return value.utf8.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || allowed.contains($0) }
    }
}

/// The ranges `speak` accepts.
public enum SpeechLimits {
    /// `rate`: a multiple of the normal speed (OpenAI's `speed` has the same range).
    public static let rate: ClosedRange<Double> = 0.25...4
    /// `pitch`: a multiple of the normal pitch.
    public static let pitch: ClosedRange<Double> = 0.5...2
}

/// `speak` response; the audio is the reply's attachment frame (through the HTTP edge, the
/// response body, named by `fileName` and `contentType`).
public struct SpeakResponse: Codable, Sendable, Equatable {
    public var format: SpeechFormat
    /// `audio/wav` or `audio/ogg`.
    public var contentType: String
    /// `speech.wav` or `speech.ogg`.
    public var fileName: String
    /// Samples per second of the audio (espeak-ng: 22,050; OpenAI: 24,000; Opus is played at 48,000).
    public var sampleRate: Int
    /// Seconds of speech.
    public var duration: Double
    /// Size of the attachment.
    public var bytes: Int
    /// The voice that spoke.
    public var voice: String
    public var generation: GenerationInfo

    public init(format: SpeechFormat, sampleRate: Int, duration: Double, bytes: Int, voice: String, generation: GenerationInfo) {
        self.format = format
        contentType = format.contentType
        fileName = format.fileName
        self.sampleRate = sampleRate
        self.duration = duration
        self.bytes = bytes
        self.voice = voice
        self.generation = generation
    }
}

/// `voices` request.
public struct VoicesRequest: Codable, Sendable, Equatable {
    /// Only voices for this language (BCP 47, e.g. `en` or `en-GB`; a prefix match).
    public var language: String?
    /// Only this provider's voices.
    public var provider: String?

    public init(language: String? = nil, provider: String? = nil) {
        self.language = language
        self.provider = provider
    }
}

/// A voice `speak` can use.
public struct SpeechVoice: Codable, Sendable, Equatable {
    /// `local` (espeak-ng, installed on the gateway) or `openai`.
    public var provider: String
    /// What `speak`'s `voice` takes.
    public var name: String
    /// BCP 47 languages it speaks, best first (OpenAI's voices speak many; listed as `*`).
    public var languages: [String]
    /// `male`, `female`, or nil when not known.
    public var gender: String?

    public init(provider: String, name: String, languages: [String], gender: String? = nil) {
        self.provider = provider
        self.name = name
        self.languages = languages
        self.gender = gender
    }
}

/// `voices` response: every provider's voices, local first.
public struct VoicesResponse: Codable, Sendable, Equatable {
    public var voices: [SpeechVoice]
    /// Variants espeak-ng can apply to any of its voices as `<voice>+<variant>` (e.g. `en-us+f2`).
    public var localVariants: [String]

    public init(voices: [SpeechVoice], localVariants: [String]) {
        self.voices = voices
        self.localVariants = localVariants
    }
}
