import Foundation
import ServiceKit
import TimerTickerCore

// timer-ticker: labelled countdown timers that fire `timer.completed` on time, once per run.
await ServiceRunner.run("timer-ticker") { context in
    let directory = try context.environment.dataDirectory(service: context.name)
    let server = try TimerTickerServer(
        bus: context.bus, databaseURL: directory.appending(path: "timer-ticker.sqlite"),
        configuration: .fromEnvironment(context.environment), logger: context.logger)
    return server.services
}
