import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `providers` and `usage`: the providers configured with each method's route (never a key),
/// and what was used of them. `providers` is for operators (its audience); `usage` is a user's
/// own, and every user's (`allUsers`) only for an operator.
struct ProviderMethods: Sendable {
    let configuration: AIGatewayConfiguration
    let ledger: UsageLedger

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.providers) { service, _, context in
            _ = try context.requireUser()
            return service.providers.providers()
        }
        handlers.handle(AIGateway.usage) { service, request, context in
            let user = try context.requireUser()
            if request.allUsers == true { try context.require(.operator, for: "ai-gateway/usage with allUsers") }
            return UsageResponse(entries: try service.providers.ledger.report(user: request.allUsers == true ? nil : user, since: request.since))
        }
    }

    func providers() -> ProvidersResponse {
        var providers = [ProviderInfo(name: "local", kind: .local, baseURL: nil, chatModel: "local", transcriptionModel: nil, requestsPerMinute: nil, hasKey: false)]
        for remote in configuration.remotes {
            providers.append(ProviderInfo(
                name: remote.name, kind: remote.kind, baseURL: remote.baseURL, chatModel: remote.chatModel, transcriptionModel: remote.transcriptionModel,
                requestsPerMinute: remote.requestsPerMinute, hasKey: remote.apiKey != nil))
        }
        let routes = Dictionary(uniqueKeysWithValues: configuration.routes.map { ($0.key.method, $0.value) })
        return ProvidersResponse(providers: providers, routes: routes)
    }
}
