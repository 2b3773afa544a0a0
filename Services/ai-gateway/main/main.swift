import AIGatewayCore
import ServiceKit

// ai-gateway: one interface to language models, with a local provider that needs no network.
// Configuration from the environment (docs/services/ai-gateway.md).
await ServiceRunner.run("ai-gateway") { context in
    [try AIGatewayService.fromEnvironment(context)]
}
