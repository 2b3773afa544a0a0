import Bus
import CEspeakNG
import Contracts
import Foundation
import Wire

/// Mono 16-bit samples and their rate: what a synthesizer produces and `speak` encodes.
struct SpeechAudio: Sendable, Equatable {
    var samples: [Int16]
    var sampleRate: Int
    /// The voice that spoke.
    var voice: String

    var duration: Double { Double(samples.count) / Double(sampleRate) }
}

/// espeak-ng, linked (libespeak-ng): formant synthesis, no network, about 100 languages, tens of
/// times faster than real time on one core.
///
/// espeak-ng's state is global to the process and its API is not thread-safe, so there is one
/// synthesizer per process (``shared``), and every call into the library happens on its own
/// thread (``EngineThread``), one synthesis after another.
final class EspeakSynthesizer: Sendable {
    static let shared = EspeakSynthesizer()

    /// Normal speed, words per minute (espeakRATE_NORMAL); `rate` multiplies it.
    static let normalWordsPerMinute = 175.0
    /// Normal pitch on espeak's 0...100 scale; `pitch` multiplies it.
    static let normalPitch = 50.0

    /// What lives on the engine's thread.
    struct Engine {
        var sampleRate: Int
        var voices: [SpeechVoice]
        var variants: [String]
        /// Each voice's espeak-ng identifier (`en-gb` → `gmw/en`): what `espeak_SetVoiceByName`
        /// finds reliably, with a `+variant`, where a language name may not be found.
        var identifiers: [String: String]
    }

    private let thread = EngineThread<Engine>(name: "ai-espeak")

    /// The installed voices and variants (loads the library on first use).
    func voices() async throws(BusError) -> (voices: [SpeechVoice], variants: [String]) {
        let result = await thread.run { engine -> Result<([SpeechVoice], [String]), BusError> in
            do throws(BusError) {
                let loaded = try Self.load(&engine)
                return .success((loaded.voices, loaded.variants))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Speaks `text` with `voice` (an espeak-ng voice name, optionally `+variant`) at `rate`
    /// and `pitch` (multiples of normal). Stops at `maximumSeconds` of audio or at `deadline`.
    /// - Throws: `INVALID_ARGUMENT` for a voice or variant that is not installed,
    ///   `DEADLINE_EXCEEDED` when the deadline passes during synthesis, `FAILED_PRECONDITION`
    ///   when espeak-ng cannot start (its data is missing).
    func synthesize(
        _ text: String, voice: String, rate: Double, pitch: Double, maximumSeconds: Double, deadline: ContinuousClock.Instant
    ) async throws(BusError) -> SpeechAudio {
        let result = await thread.run { engine -> Result<SpeechAudio, BusError> in
            do throws(BusError) {
                let loaded = try Self.load(&engine)
                return .success(try Self.speak(text, voice: voice, rate: rate, pitch: pitch, engine: loaded,
                                               maximumSamples: Int(maximumSeconds * Double(loaded.sampleRate)), deadline: deadline))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The voice for a BCP 47 `language`: the voice named so (`en-US` → `en-us`), else the
    /// first that lists the language (`en` → `en-gb`, which also speaks `en`), else the same for
    /// the primary language (`en-AU` → `en-gb`); nil when espeak-ng speaks none of them.
    func voice(forLanguage language: String) async throws(BusError) -> String? {
        let voices = try await voices().voices
        let tag = language.lowercased()
        for candidate in [tag, String(tag.prefix { $0 != "-" })] {
            if let voice = voices.first(where: { $0.name == candidate }) ?? voices.first(where: { $0.languages.contains(candidate) }) {
                return voice.name
            }
        }
        return nil
    }

    // MARK: On the engine's thread

    private static func load(_ engine: inout Engine?) throws(BusError) -> Engine {
        if let engine { return engine }
        // DONT_EXIT: without it espeak-ng calls exit() when its data is missing.
        let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, espeakINITIALIZE_DONT_EXIT)
        guard rate > 0 else {
            throw .failedPrecondition("espeak-ng could not start (its voice data is missing): install the Debian package espeak-ng-data")
        }
        espeak_SetSynthCallback { samples, count, events in
            guard let events, let userData = events.pointee.user_data else { return 1 }
            let sink = Unmanaged<SynthesisSink>.fromOpaque(userData).takeUnretainedValue()
            return sink.take(samples, Int(count)) ? 0 : 1
        }
        let voices = listVoices()
        let loaded = Engine(sampleRate: Int(rate), voices: voices.map(\.voice), variants: listVariants(),
                            identifiers: Dictionary(voices.map { ($0.voice.name, $0.identifier) }) { first, _ in first })
        engine = loaded
        return loaded
    }

    private static func speak(
        _ text: String, voice: String, rate: Double, pitch: Double, engine: Engine, maximumSamples: Int, deadline: ContinuousClock.Instant
    ) throws(BusError) -> SpeechAudio {
        let parts = voice.split(separator: "+", maxSplits: 1).map(String.init)
        guard let base = parts.first, let identifier = engine.identifiers[base] else {
            throw Field.invalid("voice", "'\(voice)' is not an installed espeak-ng voice; 'voices' lists them")
        }
        if parts.count == 2, !engine.variants.contains(parts[1]) {
            throw Field.invalid("voice", "variant '\(parts[1])' of '\(voice)' is not installed; 'voices' lists the variants")
        }
        guard espeak_SetVoiceByName(parts.count == 2 ? identifier + "+" + parts[1] : identifier) == EE_OK else {
            throw Field.invalid("voice", "espeak-ng cannot load '\(voice)'")
        }
        let wordsPerMinute = Int32((normalWordsPerMinute * rate).rounded())
        espeak_SetParameter(espeakRATE, min(max(wordsPerMinute, 40), 800), 0)
        espeak_SetParameter(espeakPITCH, Int32(min(max(normalPitch * pitch, 0), 100).rounded()), 0)
        let sink = SynthesisSink(maximumSamples: maximumSamples, deadline: deadline)
        let userData = Unmanaged.passRetained(sink).toOpaque()
        defer { Unmanaged<SynthesisSink>.fromOpaque(userData).release() }
        // ENDPAUSE: the pause after the last sentence, as the espeak-ng program makes it; without
        // it the last word is cut short (and pocketsphinx's word error rate on it rises from 0.46 to 0.60).
        let status = text.withCString { pointer in
            espeak_Synth(pointer, text.utf8.count + 1, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8) | UInt32(espeakENDPAUSE), nil, userData)
        }
        if sink.timedOut { throw .deadlineExceeded("the deadline passed while espeak-ng was speaking") }
        // Stopped at the most audio a reply may carry: the caller says the text is too long.
        guard status == EE_OK || sink.samples.count >= maximumSamples else { throw .internal("espeak-ng failed to speak (status \(status.rawValue))") }
        return SpeechAudio(samples: sink.samples, sampleRate: engine.sampleRate, voice: voice)
    }

    /// espeak-ng's voices, each named by its first language, with its identifier.
    private static func listVoices() -> [(voice: SpeechVoice, identifier: String)] {
        guard let list = espeak_ListVoices(nil) else { return [] }
        var voices: [(voice: SpeechVoice, identifier: String)] = [], seen: Set<String> = []
        var index = 0
        while let voice = list[index]?.pointee {
            index += 1
            let languages = Self.languages(voice.languages)
            guard let name = languages.first, let identifier = voice.identifier.map({ String(cString: $0) }), seen.insert(name).inserted else { continue }
            voices.append((SpeechVoice(provider: "local", name: name, languages: languages, gender: gender(voice.gender)), identifier))
        }
        return voices.sorted { $0.voice.name < $1.voice.name }
    }

    /// The variants (`!v/f2` → `f2`), applicable to any voice as `voice+variant`.
    private static func listVariants() -> [String] {
        var variants: [String] = []
        "variant".withCString { language in
            var spec = espeak_VOICE()
            spec.languages = language
            guard let list = espeak_ListVoices(&spec) else { return }
            var index = 0
            while let voice = list[index]?.pointee {
                index += 1
                guard let identifier = voice.identifier.map({ String(cString: $0) }), identifier.hasPrefix("!v/") else { continue }
                variants.append(String(identifier.dropFirst(3)))
            }
        }
        return variants.sorted()
    }

    /// espeak's `languages` field: entries of a priority byte and a NUL-terminated name, ended
    /// by a zero priority.
    private static func languages(_ field: UnsafePointer<CChar>?) -> [String] {
        guard var pointer = field else { return [] }
        var languages: [String] = []
        while pointer.pointee != 0, languages.count < 32 {
            let name = String(cString: pointer + 1)
            languages.append(name)
            pointer += 2 + name.utf8.count
        }
        return languages
    }

    private static func gender(_ value: UInt8) -> String? {
        switch value {
        case 1: "male"
        case 2: "female"
        default: nil
        }
    }
}

/// Collects the samples espeak-ng's callback hands over during one synthesis. Lives on the
/// engine's thread only (the callback runs inside `espeak_Synth`, on that thread).
private final class SynthesisSink {
    private(set) var samples: [Int16] = []
    private let maximumSamples: Int
    private let deadline: ContinuousClock.Instant
    private(set) var timedOut = false

    init(maximumSamples: Int, deadline: ContinuousClock.Instant) {
        self.maximumSamples = maximumSamples
        self.deadline = deadline
    }

    /// Appends a buffer; false stops the synthesis (enough audio, or out of time).
    func take(_ buffer: UnsafeMutablePointer<Int16>?, _ count: Int) -> Bool {
        if let buffer, count > 0 {
            samples.append(contentsOf: UnsafeBufferPointer(start: buffer, count: max(0, min(count, maximumSamples - samples.count))))
        }
        if ContinuousClock.now > deadline {
            timedOut = true
            return false
        }
        return samples.count < maximumSamples
    }
}
