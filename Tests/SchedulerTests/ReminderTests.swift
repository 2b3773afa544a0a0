import Bus
import Contracts
import Foundation
import SchedulerCore
import ServiceKit
import TestSupport
import Testing
import Wire

extension SchedulerWorld {
    /// The reminders the scheduler stored (or, with `habitData`, its `habit.*` change events),
    /// through `_events.replay`.
    func storedEvents(habitData: Bool = false) async throws -> [StoredEvent] {
        let reminders: Set = [Scheduler.reviewDue.name, Scheduler.habitDue.name, Scheduler.testDue.name]
        return try await client.call(Reserved.eventsReplay("scheduler"), ReplayRequest(after: 0, limit: 1000)).events
            .filter { reminders.contains($0.topic) != habitData }
    }

    /// Waits until `count` events are stored, then returns them.
    func waitForEvents(_ count: Int) async throws -> [StoredEvent] {
        try await eventually("\(count) events stored") { try await storedEvents().count >= count }
        return try await storedEvents()
    }

    /// Sets the clock and makes sure the reminder loop has looked at it.
    func move(to date: Date) async throws {
        clock.set(date)
        try await scheduler.reminders.runOnce()
    }
}

func decode<Payload>(_ event: StoredEvent, _ topic: Topic<Payload>) throws -> Payload {
    #expect(event.topic == topic.name)
    return try WireCoding.decode(Payload.self, from: event.payload.jsonData)
}

@Suite("Reminders at local times, through the outbox")
struct ReminderTests {
    @Test("the review digest comes at 08:00 local on both sides of a DST change, once a day, with seq 1, 2")
    func reviewDigestAcrossDST() async throws {
        // America/New_York leaves DST on 2026-11-01: 08:00 is 12:00Z before, 13:00Z after.
        try await withWorld(SchedulerWorld.start(at: instant("2026-10-31T10:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "America/New_York", reviewReminderTime: "08:00"))
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c1"), ReviewCardAdd(cardId: "c2")]))
            try await world.move(to: instant("2026-10-31T11:59:00Z"))
            #expect(try await world.storedEvents().isEmpty)
            world.clock.set(instant("2026-10-31T12:00:00Z"))  // the loop notices by itself
            var events = try await world.waitForEvents(1)
            let first = try decode(events[0], Scheduler.reviewDue)
            #expect(first.dueCount == 2 && first.newCount == 2 && first.overdueCount == 0 && first.userId == "u1")
            #expect(first.timing == ReminderTiming(localDate: "2026-10-31", localTime: "08:00", timeZone: "America/New_York",
                                                   scheduledFor: instant("2026-10-31T12:00:00Z"), late: false))
            #expect(first.reminderId == "review.due:u1:2026-10-31" && events[0].header.user == "u1")
            try await world.move(to: instant("2026-10-31T20:00:00Z"))
            try await world.move(to: instant("2026-11-01T12:30:00Z"))  // 07:30 EST
            #expect(try await world.storedEvents().count == 1)
            try await world.move(to: instant("2026-11-01T13:00:00Z"))  // 08:00 EST
            events = try await world.waitForEvents(2)
            let second = try decode(events[1], Scheduler.reviewDue)
            #expect(second.timing.localDate == "2026-11-01" && second.timing.scheduledFor == instant("2026-11-01T13:00:00Z"))
            #expect(second.overdueCount == 2)
            #expect(events.map(\.header.seq) == [1, 2] && events.allSatisfy { $0.header.source == "scheduler" })
            #expect(events.count == 2)
        }
    }

    @Test("no digest when nothing is due that day")
    func noDigestWithoutCards() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T07:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "UTC"))
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c1")]))
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .easy))  // due tomorrow
            try await world.move(to: instant("2026-11-22T09:00:00Z"))
            try await world.move(to: instant("2026-11-23T07:59:00Z"))
            #expect(try await world.storedEvents().isEmpty)
            try await world.move(to: instant("2026-11-23T08:00:00Z"))
            #expect(try decode(try await world.waitForEvents(1)[0], Scheduler.reviewDue).dueCount == 1)
        }
    }

    @Test("habit.due comes at the task's reminder time on scheduled days only while it is not checked in")
    func habitReminders() async throws {
        // 2026-11-23 is a Monday; Europe/Rome is UTC+1 in November.
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T12:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "Europe/Rome", clearReviewReminder: true, clearTestReminder: true))
            let task = try await makeTask(world, frequency: .on([1, 2]), reminderTime: "07:30", cue: "after coffee")
            try await world.move(to: instant("2026-11-23T06:29:00Z"))
            #expect(try await world.storedEvents().isEmpty)
            try await world.move(to: instant("2026-11-23T06:30:00Z"))
            let event = try decode(try await world.waitForEvents(1)[0], Scheduler.habitDue)
            #expect(event.taskId == task.id && event.taskName == "Run 5 km" && event.systemName == "Running" && event.identity == "a runner")
            #expect(event.cue == "after coffee" && event.timing.localTime == "07:30" && event.timing.localDate == "2026-11-23")
            #expect(!event.body.lowercased().contains("miss") && !event.body.lowercased().contains("fail"))
            // Tuesday: checked in before 07:30, so nothing; Wednesday: not scheduled.
            world.clock.set(instant("2026-11-24T06:00:00Z"))
            _ = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-11-24"))
            try await world.move(to: instant("2026-11-24T07:00:00Z"))
            try await world.move(to: instant("2026-11-25T07:00:00Z"))
            #expect(try await world.storedEvents().count == 1)
        }
    }

    @Test("test.due comes at the test reminder time on the day the test falls due")
    func testReminders() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T06:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "Asia/Tokyo", testReminderTime: "09:00", clearReviewReminder: true))
            world.clock.set(instant("2026-11-21T20:00:00Z"))  // 05:00 in Tokyo on the 22nd
            let test = try await world.call(Scheduler.createTest, PerformanceTestCreate(name: "Push-ups", unit: "reps", higherIsBetter: true, everyDays: 3))
            _ = try await world.call(Scheduler.recordTest, TestEntryCreate(testId: test.id, value: 20))
            try await world.move(to: instant("2026-11-25T00:00:00Z"))  // 09:00 on the 25th in Tokyo: due
            let event = try decode(try await world.waitForEvents(1)[0], Scheduler.testDue)
            #expect(event.testId == test.id && event.dueDate == "2026-11-25" && event.lastValue == 20 && event.best == 20 && event.unit == "reps")
            #expect(event.timing.scheduledFor == instant("2026-11-25T00:00:00Z") && event.timing.timeZone == "Asia/Tokyo")
        }
    }

    @Test("after a restart, a reminder missed earlier that local day is sent once, late; one from an earlier day is skipped")
    func restartWithOverdueReminders() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T06:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "UTC", reviewReminderTime: "08:00"))
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c1")]))
            let task = try await makeTask(world, frequency: .daily, reminderTime: "07:00")
            try await world.move(to: instant("2026-11-22T06:30:00Z"))
            await world.stopScheduler()
            // Down through 07:00 and 08:00 on the 22nd, back at 10:00 the same day.
            world.clock.set(instant("2026-11-22T10:00:00Z"))
            try await world.startScheduler()
            let events = try await world.waitForEvents(2)
            #expect(Set(events.map(\.topic)) == ["review.due", "habit.due"])
            let habit = try decode(events.first { $0.topic == "habit.due" }!, Scheduler.habitDue)
            #expect(habit.timing.late && habit.timing.scheduledFor == instant("2026-11-22T07:00:00Z") && habit.taskId == task.id)
            #expect(events.map(\.header.seq) == [3, 4])  // after the system's and the task's habit.*.created
            // Another restart the same day sends nothing again.
            await world.stopScheduler()
            try await world.startScheduler()
            try await world.scheduler.reminders.runOnce()
            #expect(try await world.storedEvents().count == 2)
            // Down from the 22nd 11:00 until the 24th 07:30: the 23rd's reminders are skipped; the
            // 24th's habit reminder (07:00) is sent late, its 08:00 digest on time.
            await world.stopScheduler()
            world.clock.set(instant("2026-11-24T07:30:00Z"))
            try await world.startScheduler()
            let later = try await world.waitForEvents(3)
            let missed = try decode(later[2], Scheduler.habitDue)
            #expect(missed.timing.localDate == "2026-11-24" && missed.timing.late)
            try await world.move(to: instant("2026-11-24T08:00:00Z"))
            let digest = try decode(try await world.waitForEvents(4)[3], Scheduler.reviewDue)
            #expect(digest.timing.localDate == "2026-11-24" && !digest.timing.late)
            #expect(try await world.storedEvents().allSatisfy { !$0.payload.jsonText.contains("2026-11-23") })
        }
    }

    @Test("a reminder set after its time of day starts the next day; live subscribers receive the events")
    func configuredLate() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T10:00:00Z"))) { world in
            let listener = try Bus(configuration: busConfiguration(world.endpoints, source: "notifier"), logger: testLogger("notifier"))
            let live = EventCollector(try listener.subscribe(["habit."]))
            // ZeroMQ subscriptions take a moment to reach the broker: wait until a probe gets through.
            try await eventually("the subscription is live") {
                try listener.publish(topic: "habit.probe", payload: Data("{}".utf8))
                return live.topics().contains("habit.probe")
            }
            try await world.settings(SettingsUpdate(timeZone: "UTC", clearReviewReminder: true))
            _ = try await makeTask(world, frequency: .daily, reminderTime: "07:00")
            try await world.move(to: instant("2026-11-22T23:00:00Z"))
            #expect(try await world.storedEvents().isEmpty)
            try await world.move(to: instant("2026-11-23T07:00:00Z"))
            _ = try await world.waitForEvents(1)
            try await eventually("the live event arrives") { live.topics().contains("habit.due") }
            let event = try #require(live.all.first { $0.topic == "habit.due" })
            #expect(event.header.seq == 3 && event.header.source == "scheduler")  // after habit.system.created, habit.task.created
            #expect(live.topics().filter { $0 != "habit.probe" }.prefix(2) == ["habit.system.created", "habit.task.created"])
            live.cancel()
            await listener.shutdown()
        }
    }
}
