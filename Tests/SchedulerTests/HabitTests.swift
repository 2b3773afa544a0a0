import Bus
import Contracts
import Foundation
import SchedulerCore
import ServiceKit
import TestSupport
import Testing
import Wire

/// A system with one task, created on the world's current day.
func makeTask(_ world: SchedulerWorld, frequency: HabitFrequency, reminderTime: String? = nil, cue: String? = nil) async throws -> HabitTask {
    let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Running", identity: "a runner", category: "Athletics"))
    return try await world.call(Scheduler.createTask, HabitTaskCreate(
        systemId: system.id, name: "Run 5 km", frequency: frequency, laws: FourLaws(cue: cue), reminderTime: reminderTime))
}

@Suite("Habits, streaks and completion rates")
struct HabitTests {
    @Test("a Monday/Wednesday habit is not broken on the Tuesday between, nor across the week boundary")
    func weekdayStreak() async throws {
        // 2026-11-02 is a Monday.
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-02T08:00:00Z"))) { world in
            let task = try await makeTask(world, frequency: .on([1, 3]))
            for date in ["2026-11-02", "2026-11-04", "2026-11-09", "2026-11-11"] {
                world.clock.set(instant(date + "T20:00:00Z"))
                _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: date))
            }
            world.clock.set(instant("2026-11-12T09:00:00Z"))  // Thursday: nothing scheduled
            var stats = try await world.call(Scheduler.habitStats, HabitStatsRequest()).systems[0].tasks[0]
            #expect(stats.currentStreak == 4 && stats.bestStreak == 4 && !stats.scheduledToday)
            #expect(stats.last7Days == CompletionRate(scheduled: 2, completed: 2))  // Mon 9 and Wed 11
            world.clock.set(instant("2026-11-16T09:00:00Z"))  // Monday, still open: the streak lives
            stats = try await world.call(Scheduler.habitStats, HabitStatsRequest()).systems[0].tasks[0]
            #expect(stats.currentStreak == 4 && stats.scheduledToday && !stats.doneToday)
            #expect(stats.today == CompletionRate(scheduled: 1, completed: 0))
            world.clock.set(instant("2026-11-17T09:00:00Z"))  // Tuesday after an open Monday: a new start
            stats = try await world.call(Scheduler.habitStats, HabitStatsRequest()).systems[0].tasks[0]
            #expect(stats.currentStreak == 0 && stats.bestStreak == 4)
            // Checking in Monday late (from another device) restores it; undo takes it back.
            _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-11-16", note: "late entry"))
            stats = try await world.call(Scheduler.habitStats, HabitStatsRequest()).systems[0].tasks[0]
            #expect(stats.currentStreak == 5)
            stats = try await world.call(Scheduler.undoCheckIn, CheckInUndoRequest(taskId: task.id, date: "2026-11-16"))
            #expect(stats.currentStreak == 0)
        }
    }

    @Test("check-ins count on the user's local day across a DST change, and a repeat updates the note")
    func timeZonesAndRepeats() async throws {
        // Europe/Berlin falls back on 2026-10-25; 23:30 local on the 24th is 21:30Z.
        try await withWorld(SchedulerWorld.start(at: instant("2026-10-24T21:30:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "Europe/Berlin"))
            let task = try await makeTask(world, frequency: .daily)
            _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-10-24"))
            let tooEarly = await world.failure(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-10-25"))
            #expect(tooEarly?.isInvalid("date") == true)
            world.clock.set(instant("2026-10-25T22:30:00Z"))  // 23:30 CET on the 25th, a 25-hour day
            let first = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-10-25", note: "phone"))
            let again = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-10-25", note: "watch"))
            #expect(first.checkIn.id == again.checkIn.id && again.checkIn.note == "watch")
            #expect(again.stats.currentStreak == 2 && again.stats.doneToday)
            #expect(!again.message.lowercased().contains("fail") && !again.message.lowercased().contains("miss"))
        }
    }

    @Test("completion rates for today, 7 and 30 days per task and per system; days before the task existed do not count")
    func rates() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-01T08:00:00Z"))) { world in
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Health"))
            let daily = try await world.call(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Stretch", frequency: .daily))
            let weekend = try await world.call(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Hike", frequency: .on([6, 7])))
            world.clock.set(instant("2026-11-10T08:00:00Z"))  // Tuesday; the tasks exist since Sunday 11-01
            for day in ["2026-11-04", "2026-11-06", "2026-11-07", "2026-11-10"] {
                _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: daily.id, date: day))
            }
            _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: weekend.id, date: "2026-11-08"))
            let stats = try await world.call(Scheduler.habitStats, HabitStatsRequest(systemId: system.id))
            let tasks = Dictionary(uniqueKeysWithValues: stats.systems[0].tasks.map { ($0.name, $0) })
            #expect(tasks["Stretch"]?.today == CompletionRate(scheduled: 1, completed: 1))
            #expect(tasks["Stretch"]?.last7Days == CompletionRate(scheduled: 7, completed: 4))
            #expect(tasks["Stretch"]?.last30Days == CompletionRate(scheduled: 10, completed: 4))
            #expect(tasks["Hike"]?.last7Days == CompletionRate(scheduled: 2, completed: 1))  // Sat 7, Sun 8
            #expect(tasks["Hike"]?.last30Days == CompletionRate(scheduled: 3, completed: 1))  // Sun 1, Sat 7, Sun 8
            #expect(stats.systems[0].last7Days == CompletionRate(scheduled: 9, completed: 5))
            #expect(stats.systems[0].today == CompletionRate(scheduled: 1, completed: 1))
        }
    }

    @Test("bad frequencies, dates and reminder times are INVALID_ARGUMENT naming the field; another user's task is NOT_FOUND")
    func validation() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Focus"))
            let empty = await world.failure(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Read", frequency: .on([])))
            #expect(empty?.isInvalid("frequency.weekdays") == true)
            let eight = await world.failure(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Read", frequency: .on([8])))
            #expect(eight?.isInvalid("frequency.weekdays") == true)
            let badKind = await #expect(throws: BusError.self) {
                _ = try await world.client.callRaw(service: "scheduler", method: "habits.tasks.create",
                                                   payload: Data(#"{"systemId":"\#(system.id)","name":"Read","frequency":{"kind":"hourly"}}"#.utf8),
                                                   options: CallOptions(user: "u1"))
            }
            #expect(badKind?.code == .invalidArgument && badKind?.message.contains("frequency") == true)
            let time = await world.failure(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Read", frequency: .daily, reminderTime: "25:00"))
            #expect(time?.isInvalid("reminderTime") == true)
            let name = await world.failure(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: String(repeating: "x", count: 201), frequency: .daily))
            #expect(name?.isInvalid("name") == true && name?.message.contains("at most 200 characters") == true)
            let blank = await world.failure(Scheduler.createSystem, HabitSystemCreate(name: "  "))
            #expect(blank?.isInvalid("name") == true)
            let task = try await world.call(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Read", frequency: .daily))
            let date = await world.failure(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-02-30"))
            #expect(date?.isInvalid("date") == true)
            let other = await world.failure(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-11-22"), user: "u2")
            #expect(other?.code == .notFound)
            _ = try await world.call(Scheduler.deleteSystem, HabitSystemID(systemId: system.id))
            #expect(try await world.call(Scheduler.listSystems, Empty()).systems.isEmpty)
        }
    }

    @Test("performance tests fall due every N days after their last entry")
    func performanceTests() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-01T08:00:00Z"))) { world in
            let test = try await world.call(Scheduler.createTest, PerformanceTestCreate(name: "5 km time", unit: "min", higherIsBetter: false, everyDays: 7))
            #expect(try await world.call(Scheduler.dueTests, Empty()).tests.map(\.id) == [test.id])
            _ = try await world.call(Scheduler.recordTest, TestEntryCreate(testId: test.id, value: 31.5))
            let recorded = try await world.call(Scheduler.recordTest, TestEntryCreate(testId: test.id, value: 29, date: "2026-11-01"))
            #expect(recorded.best == 29 && recorded.dueDate == "2026-11-08" && recorded.entries.count == 2)
            world.clock.set(instant("2026-11-07T08:00:00Z"))
            #expect(try await world.call(Scheduler.dueTests, Empty()).tests.isEmpty)
            world.clock.set(instant("2026-11-08T08:00:00Z"))
            #expect(try await world.call(Scheduler.dueTests, Empty()).tests.count == 1)
            let bad = await world.failure(Scheduler.createTest, PerformanceTestCreate(name: "x", unit: "km", higherIsBetter: true, everyDays: 0))
            #expect(bad?.isInvalid("everyDays") == true)
        }
    }
}
