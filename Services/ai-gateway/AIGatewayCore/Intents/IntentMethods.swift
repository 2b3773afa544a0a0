import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `intent.parse`, `intent.register`, `intent.list` and `intent.remove`: voice commands, matched
/// against the built-in patterns and the caller's own, as text or spoken (heard as `transcribe`
/// hears in `command` mode).
struct IntentMethods: Sendable {
    let engine: IntentEngine
    let clock: any WallClock

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.parseIntent) { service, request, context in
            if context.attachment == nil { return try service.intents.parse(request, user: try context.requireUser()) }
            return try await service.intents.parseSpoken(request, context, transcription: service.transcription)
        }
        handlers.handle(AIGateway.registerIntents) { service, request, context in
            try service.intents.register(request, user: try context.requireUser())
        }
        handlers.handle(AIGateway.listIntents) { service, _, context in
            IntentListResponse(commands: try service.intents.engine.list(user: try context.requireUser()))
        }
        handlers.handle(AIGateway.removeIntents) { service, request, context in try service.intents.remove(request, user: try context.requireUser()) }
    }

    func parse(_ request: IntentParseRequest, user: String) throws(BusError) -> IntentParseResponse {
        guard let text = request.text, !text.isEmpty else {
            throw Field.invalid("text", "must not be empty: send the command as text, or spoken in the attachment frame")
        }
        try Field.length(text, "text", maximum: AIGatewayLimits.commandCharacters)
        return try engine.parse(text, user: user)
    }

    /// The command spoken in the attachment frame.
    func parseSpoken(_ request: IntentParseRequest, _ context: RequestContext, transcription: TranscriptionMethods) async throws -> IntentParseResponse {
        guard request.text == nil else { throw Field.invalid("text", "must be absent when the attachment holds the spoken command") }
        let transcript = try await transcription.transcribe(
            TranscribeRequest(language: "en", prompt: request.prompt, provider: request.provider, mode: .command), context)
        var response = transcript.command ?? IntentParseResponse(normalized: "", match: nil, candidates: [], cached: false)
        response.heard = HeardCommand(text: transcript.text, confidence: transcript.confidence, duration: transcript.duration, generation: transcript.generation)
        return response
    }

    func register(_ request: IntentRegisterRequest, user: String) throws(BusError) -> IntentListResponse {
        try Field.count(request.commands, "commands", in: 1...100)
        return IntentListResponse(commands: try engine.register(request.commands, user: user, now: clock.now()))
    }

    func remove(_ request: IntentRemoveRequest, user: String) throws(BusError) -> IntentListResponse {
        try Field.count(request.ids, "ids", in: 1...100)
        return IntentListResponse(commands: try engine.remove(ids: request.ids, user: user))
    }
}
