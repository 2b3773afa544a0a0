import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `reflect`, `encourage` and `thought`: warm words about what the user wrote, did or noted,
/// identity-based and never guilt.
struct EncouragementMethods: Sendable {
    let dispatcher: Dispatcher

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.reflect) { service, request, context in try await service.encouragement.reflect(request, context) }
        handlers.handle(AIGateway.encourage) { service, request, context in try await service.encouragement.encourage(request, context) }
        handlers.handle(AIGateway.thought) { service, request, context in try await service.encouragement.thought(request, context) }
    }

    func reflect(_ request: ReflectRequest, _ context: RequestContext) async throws -> ReflectResponse {
        let scope = try CallScope(context)
        try TextMethods.studyText(request.text, "text")
        var keyed = request
        keyed.provider = nil
        let (text, identity) = (request.text, request.identity)
        let (reflection, generation) = try await dispatcher.run(
            .reflect, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.reflect, keyed),
            local: { Encouragement.reflection(text, identity: identity) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.reflect(text, identity: identity), timeout: timeout)
                return (try Prompts.warmText(completion.text), completion.usage)
            })
        return ReflectResponse(reflection: reflection, generation: generation)
    }

    func encourage(_ request: EncourageRequest, _ context: RequestContext) async throws -> EncourageResponse {
        let scope = try CallScope(context)
        if let accuracy = request.accuracy { try Field.number(accuracy, "accuracy", in: 0...1) }
        if let completionRate = request.completionRate { try Field.number(completionRate, "completionRate", in: 0...1) }
        _ = try Field.int(request.streak, "streak", in: 0...100_000, default: 0)
        _ = try Field.int(request.count, "count", in: 0...100_000, default: 0)
        guard request.accuracy != nil || request.streak != nil || request.completionRate != nil || request.count != nil else {
            throw Field.invalid("accuracy", "or one of 'streak', 'completionRate' and 'count' is required")
        }
        var keyed = request
        keyed.provider = nil
        let (message, generation) = try await dispatcher.run(
            .encourage, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.encourage, keyed),
            local: { Encouragement.message(request) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.encourage(request), timeout: timeout)
                return (try Prompts.warmText(completion.text), completion.usage)
            })
        return EncourageResponse(message: message, generation: generation)
    }

    func thought(_ request: ThoughtRequest, _ context: RequestContext) async throws -> HouseThought {
        let scope = try CallScope(context)
        try Field.count(request.notes, "notes", in: 1...200)
        try TextMethods.studyText(request.notes.map { ($0.question ?? "") + " " + $0.answer }.joined(separator: "\n"), "notes")
        var keyed = request
        keyed.provider = nil
        let notes = request.notes
        let (output, generation) = try await dispatcher.run(
            .thought, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.thought, keyed),
            local: {
                let thought = HouseThoughts.thought(notes)
                return HouseThoughtOutput(thought: thought.thought, emotion: thought.emotion, category: thought.category,
                                          confidence: thought.confidence, suggestion: thought.suggestion, context: thought.context)
            },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.thought(notes), timeout: timeout)
                return (try Prompts.houseThought(completion.text), completion.usage)
            })
        return HouseThought(thought: output.thought, emotion: output.emotion, category: output.category, confidence: output.confidence,
                            suggestion: output.suggestion, context: output.context, generation: generation)
    }
}
