import ServiceKit
import TimerTickerCore

// timer-ticker: labelled countdown timers that fire `timer.completed` on time, once per run.
await ServiceRunner.run(TimerTickerService.self)
