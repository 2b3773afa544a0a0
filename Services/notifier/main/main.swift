import NotifierCore
import ServiceKit

// The notifier: events in, notifications out (docs/services/notifier.md).
await ServiceRunner.run(NotifierService.self)
