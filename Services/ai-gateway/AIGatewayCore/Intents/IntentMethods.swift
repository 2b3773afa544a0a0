import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `intent.parse`, `intent.register`, `intent.list` and `intent.remove`: voice commands, matched
/// against the built-in patterns and the caller's own.
struct IntentMethods: Sendable {
    let engine: IntentEngine
    let clock: any WallClock

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.parseIntent) { service, request, context in try service.intents.parse(request, user: try context.requireUser()) }
        handlers.handle(AIGateway.registerIntents) { service, request, context in
            try service.intents.register(request, user: try context.requireUser())
        }
        handlers.handle(AIGateway.listIntents) { service, _, context in
            IntentListResponse(commands: try service.intents.engine.list(user: try context.requireUser()))
        }
        handlers.handle(AIGateway.removeIntents) { service, request, context in try service.intents.remove(request, user: try context.requireUser()) }
    }

    func parse(_ request: IntentParseRequest, user: String) throws(BusError) -> IntentParseResponse {
        guard !request.text.isEmpty else { throw Field.invalid("text", "must not be empty") }
        try Field.length(request.text, "text", maximum: 500)
        return try engine.parse(request.text, user: user)
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
