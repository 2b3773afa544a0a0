import ServiceKit
import StoreCore

// store: the system of record for study content (docs/services/store.md).
await ServiceRunner.run(StoreService.self)
