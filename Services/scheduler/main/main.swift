import SchedulerCore
import ServiceKit

await ServiceRunner.run("scheduler") { context in
    let database = try SchedulerDatabase.open(in: try context.environment.dataDirectory(service: context.name), logger: context.logger)
    let scheduler = try SchedulerService(
        bus: context.bus, database: database, credit: try context.environment.int("SCHEDULER_CREDIT", default: 64, in: 1...1024),
        logger: context.logger)
    return scheduler.services
}
