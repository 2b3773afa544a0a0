import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// What the offline engines are called in `generation.model` and the usage ledger.
enum OfflineSpeech {
    static let synthesisModel = "espeak-ng"
    static let recognitionModel = "pocketsphinx-en-us"
}

/// `speak` and `voices`: text to speech along the `speak` route (OpenAI's `/audio/speech`
/// when configured, espeak-ng offline), the audio in the reply's attachment frame.
struct SpeechMethods: Sendable {
    let dispatcher: Dispatcher
    let settings: SpeechSettings
    let synthesizer = EspeakSynthesizer.shared

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.speak, withAttachment: { service, request, context in try await service.speech.speak(request, context) })
        handlers.handle(AIGateway.voices) { service, request, context in try await service.speech.voices(request, context) }
    }

    /// The request's fields were range-checked when it was decoded (``SpeakRequest/init(from:)``).
    func speak(_ request: SpeakRequest, _ context: RequestContext) async throws -> (SpeakResponse, Data?) {
        let scope = try CallScope(context)
        let input = SpeechInput(text: request.text, language: request.language ?? "en-US", voice: request.voice, rate: request.rate ?? 1, pitch: request.pitch ?? 1)
        if let voice = input.voice { try await requireKnown(voice) }
        let synthesizer = self.synthesizer, variant = settings.variant
        let (audio, generation) = try await dispatcher.speak(input, pinned: request.provider, scope: scope) { () async throws(BusError) -> SpeechAudio in
            let voice = try await Self.localVoice(for: input, variant: variant, synthesizer: synthesizer)
            return try await synthesizer.synthesize(
                input.text, voice: voice, rate: input.rate, pitch: input.pitch, maximumSeconds: AIGatewayLimits.speechSeconds + 1, deadline: scope.deadline)
        }
        let wav = WAV.encode(audio.samples, sampleRate: audio.sampleRate)
        let format = request.format ?? .wav
        let body = format == .wav ? wav : try await settings.converter.opus(fromWAV: wav, deadline: scope.deadline)
        let response = SpeakResponse(
            format: format, sampleRate: audio.sampleRate, duration: (audio.duration * 1000).rounded() / 1000,
            bytes: body.count, voice: audio.voice, generation: generation)
        return (response, body)
    }

    func voices(_ request: VoicesRequest, _ context: RequestContext) async throws -> VoicesResponse {
        _ = try context.requireUser()
        let providers = ["local"] + dispatcher.speakers.keys.sorted()
        if let provider = request.provider { _ = try Field.oneOf(provider, "provider", providers) }
        if let language = request.language, !SpeakRequest.isLanguageTag(language) {
            throw Field.invalid("language", "must be a BCP 47 language tag such as en or en-GB")
        }
        let local = try await synthesizer.voices()
        var voices = local.voices
        for name in providers.dropFirst() {
            voices += dispatcher.speakers[name]!.speechVoices.map { SpeechVoice(provider: name, name: $0, languages: ["*"]) }
        }
        voices = voices.filter { voice in
            (request.provider.map { voice.provider == $0 } ?? true)
                && (request.language.map { language in voice.languages.contains { Self.speaks($0, language) } } ?? true)
        }
        return VoicesResponse(voices: voices, localVariants: local.variants)
    }

    /// Whether a voice for `voiceLanguage` speaks `asked`: the same tag, a more specific one
    /// (`en-gb` for `en`), or any (`*`, OpenAI's).
    static func speaks(_ voiceLanguage: String, _ asked: String) -> Bool {
        let voiceLanguage = voiceLanguage.lowercased(), asked = asked.lowercased()
        return voiceLanguage == "*" || voiceLanguage == asked || voiceLanguage.hasPrefix(asked + "-")
    }

    /// A voice some provider has: espeak-ng's (with an installed variant) or a remote's.
    private func requireKnown(_ voice: String) async throws(BusError) {
        if dispatcher.speakers.values.contains(where: { $0.speechVoices.contains(voice) }) { return }
        let local = try await synthesizer.voices()
        let parts = voice.split(separator: "+", maxSplits: 1).map(String.init)
        if local.voices.contains(where: { $0.name == parts[0] }), parts.count == 1 || local.variants.contains(parts[1]) { return }
        throw Field.invalid("voice", "'\(voice)' is not a voice of any provider; 'voices' lists them")
    }

    /// espeak-ng's voice for the request: the one named if it is espeak-ng's, else the
    /// language's with the configured variant.
    static func localVoice(for input: SpeechInput, variant: String, synthesizer: EspeakSynthesizer) async throws(BusError) -> String {
        let local = try await synthesizer.voices()
        if let voice = input.voice, let base = voice.split(separator: "+").first, local.voices.contains(where: { $0.name == base }) { return voice }
        guard let voice = try await synthesizer.voice(forLanguage: input.language) else {
            throw Field.invalid("language", "'\(input.language)' has no offline (espeak-ng) voice; 'voices' lists the languages")
        }
        return variant.isEmpty ? voice : voice + "+" + variant
    }
}

/// Speech as the speech cache keeps it: the voice's name (a length byte, then UTF-8), then the WAV.
enum CachedSpeech {
    static func encode(_ audio: SpeechAudio) -> Data? {
        let voice = Data(audio.voice.utf8)
        guard voice.count < 256 else { return nil }
        return Data([UInt8(voice.count)]) + voice + WAV.encode(audio.samples, sampleRate: audio.sampleRate)
    }

    static func decode(_ data: Data) -> SpeechAudio? {
        guard let length = data.first.map(Int.init), data.count > 1 + length,
              let wav = WAV.decode(Data(data.dropFirst(1 + length))) else { return nil }
        return SpeechAudio(samples: wav.samples, sampleRate: wav.sampleRate, voice: String(decoding: data.dropFirst().prefix(length), as: UTF8.self))
    }
}
