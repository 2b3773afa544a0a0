import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `transcribe`: the audio in the request's attachment frame to text, through the
/// Whisper-compatible providers of the `transcribe` route, or offline (`local`): ffmpeg decodes
/// the upload to 16 kHz mono, pocketsphinx recognizes English — in `command` mode only the
/// commands of the user's grammar (``CommandGrammar``).
struct TranscriptionMethods: Sendable {
    let dispatcher: Dispatcher
    let settings: SpeechSettings
    let intents: IntentEngine

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.transcribe) { service, request, context in try await service.transcription.transcribe(request, context) }
    }

    func transcribe(_ request: TranscribeRequest, _ context: RequestContext) async throws -> TranscribeResponse {
        let scope = try CallScope(context)
        guard let audio = context.attachment, !audio.isEmpty else {
            throw Field.invalid("attachment", "must hold the audio: send it as the request's attachment frame")
        }
        guard audio.count <= AIGatewayLimits.audioBytes else {
            throw Field.invalid("attachment", "must be at most \(AIGatewayLimits.audioBytes) bytes, got \(audio.count)")
        }
        if let prompt = request.prompt { try Field.length(prompt, "prompt", maximum: AIGatewayLimits.promptCharacters) }
        let command = request.mode == .command
        let grammar = command ? try intents.grammar(user: scope.user, prompt: request.prompt) : nil
        let converter = settings.converter
        let recognizer = PocketSphinxRecognizer.shared(modelDirectory: settings.pocketsphinxModel, profile: settings.recognition)
        let (transcript, generation) = try await dispatcher.transcribe(audio, request: request, scope: scope) { () async throws(BusError) -> Transcript in
            if let language = request.language, language.lowercased().prefix(while: { $0 != "-" }) != "en" {
                throw .failedPrecondition(
                    "the offline recognizer knows English only, not '\(language)': configure a Whisper-compatible provider (OPENAI_API_KEY or AI_OPENAI_BASE_URL) — see docs/services/ai-gateway.md")
            }
            let samples = try await converter.samples(
                of: audio, sampleRate: PocketSphinxRecognizer.sampleRate, maximumSeconds: AIGatewayLimits.offlineAudioSeconds, deadline: scope.deadline)
            let recognition = try await recognizer.recognize(samples, grammar: grammar, deadline: scope.deadline)
            return Transcript(text: recognition.text, language: "en", duration: recognition.duration, segments: recognition.segments,
                              alternatives: recognition.alternatives, confidence: recognition.confidence)
        }
        let timed = transcript.segments.filter { $0.confidence != nil && $0.end > $0.start }
        let weight = timed.reduce(0) { $0 + ($1.end - $1.start) }
        let confidence = transcript.confidence ?? (weight > 0 ? timed.reduce(0) { $0 + $1.confidence! * ($1.end - $1.start) } / weight : nil)
        return TranscribeResponse(
            text: transcript.text, language: transcript.language ?? request.language, confidence: confidence.map { ($0 * 1000).rounded() / 1000 },
            alternatives: transcript.alternatives, segments: transcript.segments, duration: transcript.duration, generation: generation,
            command: command ? try intents.parse(String(transcript.text.prefix(AIGatewayLimits.commandCharacters)), user: scope.user) : nil)
    }
}
