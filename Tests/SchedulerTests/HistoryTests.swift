import Bus
import Contracts
import Foundation
import SchedulerCore
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("Habit editing and history: systems, descriptions, calendar, series, tests")
struct HistoryTests {
    @Test("habits.systems.update replaces name, identity and category; bad fields INVALID_ARGUMENT; another user's NOT_FOUND")
    func updateSystem() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Running", identity: "a runner", category: "Athletics"))
            let updated = try await world.call(Scheduler.updateSystem, HabitSystemUpdate(
                systemId: system.id, name: " Hybrid athlete ", identity: "someone who trains daily", category: "Fitness"))
            #expect(updated.name == "Hybrid athlete" && updated.identity == "someone who trains daily" && updated.category == "Fitness")
            #expect(updated.createdAt == system.createdAt && updated.id == system.id)
            #expect(try await world.call(Scheduler.listSystems, Empty()).systems == [updated])
            let cleared = try await world.call(Scheduler.updateSystem, HabitSystemUpdate(systemId: system.id, name: "Hybrid athlete"))
            #expect(cleared.identity == nil && cleared.category == nil)
            #expect(await world.failure(Scheduler.updateSystem, HabitSystemUpdate(systemId: system.id, name: " "))?.isInvalid("name") == true)
            let long = HabitSystemUpdate(systemId: system.id, name: "x", category: String(repeating: "c", count: 101))
            #expect(await world.failure(Scheduler.updateSystem, long)?.isInvalid("category") == true)
            #expect(await world.failure(Scheduler.updateSystem, HabitSystemUpdate(systemId: system.id, name: "Mine"), user: "u2")?.code == .notFound)
            #expect(try await world.call(Scheduler.listSystems, Empty()).systems[0].name == "Hybrid athlete")
        }
    }

    @Test("a task's description is stored, listed, replaced by tasks.update and limited to 1000 characters")
    func taskDescription() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Reading"))
            let task = try await world.call(Scheduler.createTask, HabitTaskCreate(
                systemId: system.id, name: "Read", frequency: .daily, description: "  20 pages of a book  "))
            #expect(task.description == "20 pages of a book")
            #expect(try await world.call(Scheduler.listSystems, Empty()).systems[0].tasks[0].description == "20 pages of a book")
            let updated = try await world.call(Scheduler.updateTask, HabitTaskUpdate(taskId: task.id, name: "Read", frequency: .daily, description: "30 pages"))
            #expect(updated.description == "30 pages")
            let long = HabitTaskUpdate(taskId: task.id, name: "Read", frequency: .daily, description: String(repeating: "d", count: 1001))
            #expect(await world.failure(Scheduler.updateTask, long)?.isInvalid("description") == true)
        }
    }

    @Test("habits.checkIns.list reads a range of the user's local dates, by task or system; its default ends on the local today")
    func listCheckIns() async throws {
        // 12:00Z on the 22nd is 01:00 on the 23rd in Auckland (UTC+13 in November).
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-01T00:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "Pacific/Auckland"))
            let run = try await makeTask(world, frequency: .daily)
            let other = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Mind"))
            let read = try await world.call(Scheduler.createTask, HabitTaskCreate(systemId: other.id, name: "Read", frequency: .daily))
            world.clock.set(instant("2026-11-22T12:00:00Z"))
            for date in ["2026-11-02", "2026-11-20", "2026-11-23"] { _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: run.id, date: date)) }
            _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: read.id, date: "2026-11-20", note: "a chapter"))
            let recent = try await world.call(Scheduler.listCheckIns, CheckInListRequest())
            #expect(recent.to == "2026-11-23" && recent.from == "2026-10-25" && recent.timeZone == "Pacific/Auckland")
            #expect(recent.checkIns.map(\.date) == ["2026-11-02", "2026-11-20", "2026-11-20", "2026-11-23"])
            let window = try await world.call(Scheduler.listCheckIns, CheckInListRequest(from: "2026-11-03", to: "2026-11-22"))
            #expect(window.checkIns.map(\.taskId).sorted() == [run.id, read.id].sorted() && window.checkIns.allSatisfy { $0.date == "2026-11-20" })
            let ofTask = try await world.call(Scheduler.listCheckIns, CheckInListRequest(from: "2026-11-01", taskId: read.id))
            #expect(ofTask.checkIns.map(\.note) == ["a chapter"])
            let ofSystem = try await world.call(Scheduler.listCheckIns, CheckInListRequest(from: "2026-11-01", systemId: run.systemId))
            #expect(ofSystem.checkIns.map(\.date) == ["2026-11-02", "2026-11-20", "2026-11-23"] && ofSystem.checkIns.allSatisfy { $0.taskId == run.id })
            #expect(await world.failure(Scheduler.listCheckIns, CheckInListRequest(from: "2025-11-01", to: "2026-11-22"))?.isInvalid("from") == true)
            #expect(await world.failure(Scheduler.listCheckIns, CheckInListRequest(from: "2026-11-10", to: "2026-11-09"))?.isInvalid("from") == true)
            #expect(await world.failure(Scheduler.listCheckIns, CheckInListRequest(to: "2026-13-01"))?.isInvalid("to") == true)
            #expect(await world.failure(Scheduler.listCheckIns, CheckInListRequest(taskId: run.id), user: "u2")?.code == .notFound)
            #expect(try await world.call(Scheduler.listCheckIns, CheckInListRequest(), user: "u2").checkIns.isEmpty)
        }
    }

    @Test("habits.tasks.series gives each local day of a range: scheduled by the weekdays, done, and the completion")
    func series() async throws {
        // 2026-11-02 is a Monday; the task is for Monday and Wednesday.
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-02T08:00:00Z"))) { world in
            let task = try await makeTask(world, frequency: .on([1, 3]))
            for date in ["2026-11-02", "2026-11-04", "2026-11-05"] {
                world.clock.set(instant(date + "T20:00:00Z"))
                _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: date))
            }
            world.clock.set(instant("2026-11-10T08:00:00Z"))  // Tuesday
            let series = try await world.call(Scheduler.taskSeries, TaskSeriesRequest(taskId: task.id, from: "2026-11-01"))
            #expect(series.from == "2026-11-01" && series.to == "2026-11-10" && series.days.count == 10)
            let days = Dictionary(uniqueKeysWithValues: series.days.map { ($0.date, $0) })
            #expect(days["2026-11-01"] == TaskDay(date: "2026-11-01", weekday: "sun", scheduled: false, done: false))  // before the task existed
            #expect(days["2026-11-02"] == TaskDay(date: "2026-11-02", weekday: "mon", scheduled: true, done: true))
            #expect(days["2026-11-05"] == TaskDay(date: "2026-11-05", weekday: "thu", scheduled: false, done: true))
            #expect(days["2026-11-09"] == TaskDay(date: "2026-11-09", weekday: "mon", scheduled: true, done: false))
            #expect(series.days.filter(\.scheduled).map(\.date) == ["2026-11-02", "2026-11-04", "2026-11-09"])
            #expect(series.completion == CompletionRate(scheduled: 3, completed: 2))
            let bad = await world.failure(Scheduler.taskSeries, TaskSeriesRequest(taskId: task.id, from: "2026-11-11", to: "2026-11-10"))
            #expect(bad?.isInvalid("from") == true)
            #expect(await world.failure(Scheduler.taskSeries, TaskSeriesRequest(taskId: task.id), user: "u2")?.code == .notFound)
        }
    }

    @Test("tests.update replaces the definition and keeps the entries; tests.entries.delete removes one entry")
    func updateTestAndDeleteEntry() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-01T08:00:00Z"))) { world in
            let test = try await world.call(Scheduler.createTest, PerformanceTestCreate(name: "5 km", unit: "min", higherIsBetter: false, everyDays: 7))
            _ = try await world.call(Scheduler.recordTest, TestEntryCreate(testId: test.id, value: 31, date: "2026-10-30"))
            let recorded = try await world.call(Scheduler.recordTest, TestEntryCreate(testId: test.id, value: 29, date: "2026-11-01"))
            #expect(recorded.best == 29 && recorded.dueDate == "2026-11-08")
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Running"))
            let updated = try await world.call(Scheduler.updateTest, PerformanceTestUpdate(
                testId: test.id, systemId: system.id, name: "Push-ups", unit: "reps", higherIsBetter: true, everyDays: 3))
            #expect(updated.name == "Push-ups" && updated.unit == "reps" && updated.systemId == system.id && updated.everyDays == 3)
            #expect(updated.best == 31 && updated.dueDate == "2026-11-04" && updated.entries.count == 2)
            let bad = PerformanceTestUpdate(testId: test.id, name: "x", unit: "km", higherIsBetter: true, everyDays: 366)
            #expect(await world.failure(Scheduler.updateTest, bad)?.isInvalid("everyDays") == true)
            let elsewhere = PerformanceTestUpdate(testId: test.id, name: "x", unit: "km", higherIsBetter: true, everyDays: 3)
            #expect(await world.failure(Scheduler.updateTest, elsewhere, user: "u2")?.code == .notFound)
            let last = try #require(updated.entries.last)
            let afterDelete = try await world.call(Scheduler.deleteTestEntry, TestEntryID(entryId: last.id))
            #expect(afterDelete.entries.map(\.value) == [31] && afterDelete.dueDate == "2026-11-02")
            #expect(await world.failure(Scheduler.deleteTestEntry, TestEntryID(entryId: last.id))?.code == .notFound)
            let first = try #require(afterDelete.entries.first)
            #expect(await world.failure(Scheduler.deleteTestEntry, TestEntryID(entryId: first.id), user: "u2")?.code == .notFound)
            #expect(try await world.call(Scheduler.listTests, Empty()).tests[0].entries.count == 1)
        }
    }
}
