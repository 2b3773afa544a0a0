import SchedulerCore
import ServiceKit

// scheduler: spaced repetition, habits, study plans and reminders at local times.
await ServiceRunner.run(SchedulerService.self)
