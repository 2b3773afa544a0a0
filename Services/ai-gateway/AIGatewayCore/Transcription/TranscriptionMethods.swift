import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `transcribe`: the audio in the request's attachment frame to text, through the
/// Whisper-compatible providers of the `transcribe` route.
struct TranscriptionMethods: Sendable {
    let dispatcher: Dispatcher

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
        let (transcript, generation) = try await dispatcher.transcribe(audio, request: request, scope: scope)
        let timed = transcript.segments.filter { $0.confidence != nil && $0.end > $0.start }
        let weight = timed.reduce(0) { $0 + ($1.end - $1.start) }
        let confidence = weight > 0 ? timed.reduce(0) { $0 + $1.confidence! * ($1.end - $1.start) } / weight : nil
        return TranscribeResponse(
            text: transcript.text, language: transcript.language ?? request.language, confidence: confidence.map { ($0 * 1000).rounded() / 1000 },
            alternatives: [], segments: transcript.segments, duration: transcript.duration, generation: generation)
    }
}
