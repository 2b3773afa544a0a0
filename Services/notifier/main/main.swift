import NotifierCore
import ServiceKit

// The notifier: events in, notifications out (docs/services/notifier.md).
await ServiceRunner.run("notifier") { context in
    try NotifierService(context: context).services
}
