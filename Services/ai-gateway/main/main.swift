import AIGatewayCore
import ServiceKit

// ai-gateway: one interface to language models, with a local provider that needs no network.
await ServiceRunner.run(AIGatewayService.self)
