import ServiceKit
import StoreCore

await ServiceRunner.run("store") { context in
    let store = try StoreService(bus: context.bus, configuration: .fromEnvironment(context.environment), logger: context.logger)
    return store.services
}
