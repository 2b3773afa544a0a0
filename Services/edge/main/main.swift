import EdgeCore
import ServiceKit

// edge: the HTTP front door for apps (docs/services/edge.md).
await ServiceRunner.run(EdgeService.self)
