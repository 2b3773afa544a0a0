import Bus
import Contracts
import Foundation
import TestSupport
import Testing

/// The cross-service flows of docs/flows.md, each driven through the bus of a running system and
/// asserted on what the services answer. Each flow uses its own user, so flows can share one
/// system and run in any order.
enum Flows {
    // MARK: 2. Timer alarm

    /// `timers.create` -> `timer.completed` -> repeating alarms in the inbox -> `notify.ack`
    /// stops them; a timer deleted while running never rings; one deleted while ringing stops.
    static func timerAlarm(_ system: DevSystem, user: String = "flow2") async throws {
        let acked = try await system.call(TimerTicker.createTimer, CreateTimerRequest(label: "Tea", seconds: 2), user: user)
        let deletedEarly = try await system.call(TimerTicker.createTimer, CreateTimerRequest(label: "Never", seconds: 2), user: user)
        let deletedRinging = try await system.call(TimerTicker.createTimer, CreateTimerRequest(label: "Pasta", seconds: 2), user: user)
        _ = try await system.call(TimerTicker.deleteTimer, TimerRef(id: deletedEarly.id), user: user)

        try await eventually("the first alarms ring", timeout: .seconds(20)) {
            let rung = try await alarms(system, user: user)
            return rung[acked.id, default: 0] >= 2 && rung[deletedRinging.id, default: 0] >= 1
        }
        _ = try await system.call(Notifier.ack, AckRequest(timerId: acked.id), user: user)
        _ = try await system.call(TimerTicker.deleteTimer, TimerRef(id: deletedRinging.id), user: user)
        let atStop = try await alarms(system, user: user)
        // 12 repeats at 400 ms would take 4.4 s: wait past that and check nothing more rang.
        try await Task.sleep(for: .seconds(5))
        let later = try await alarms(system, user: user)
        #expect(later[acked.id] == atStop[acked.id], "acknowledged alarm kept ringing")
        #expect(later[deletedRinging.id] == atStop[deletedRinging.id], "deleted timer kept ringing")
        #expect(later[acked.id, default: 0] < 12 && later[deletedRinging.id, default: 0] < 12)
        #expect(later[deletedEarly.id] == nil, "a timer deleted before its end rang")
    }

    /// Alarm notifications in the user's inbox, counted per timer.
    static func alarms(_ system: DevSystem, user: String) async throws -> [String: Int] {
        let page = try await system.call(Notifier.inboxList, InboxListRequest(limit: 100), user: user)
        return page.items.filter { $0.kind == .alarm }.reduce(into: [:]) { counts, item in counts[item.timerId ?? "", default: 0] += 1 }
    }

    // MARK: 3. Habit reminder

    /// A habit task with a reminder time -> `habit.due` -> a reminder in the inbox; a task
    /// checked in before its time gets none. Reminder times have minute resolution, so this waits
    /// for the next minute (up to 70 s).
    static func habitReminder(_ system: DevSystem, user: String = "flow3") async throws {
        let now = Date()
        let seconds = Int(now.timeIntervalSince1970) % 60
        let fire = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60 + (seconds < 50 ? 60 : 120))
        let time = utc("HH:mm", fire)
        let reading = try await system.call(Scheduler.createSystem, HabitSystemCreate(name: "Reading", identity: "a Consistent Reader"), user: user)
        let due = try await system.call(Scheduler.createTask, HabitTaskCreate(systemId: reading.id, name: "Read 10 pages", frequency: .daily, reminderTime: time), user: user)
        let done = try await system.call(Scheduler.createTask, HabitTaskCreate(systemId: reading.id, name: "Stretch 5 minutes", frequency: .daily, reminderTime: time), user: user)
        _ = try await system.call(Scheduler.checkIn, CheckInRequest(taskId: done.id, date: utc("yyyy-MM-dd", now)), user: user)

        try await eventually("the habit reminder arrives", timeout: .seconds(fire.timeIntervalSinceNow + 20)) {
            try await reminders(system, user: user).contains { $0.contains(due.name) }
        }
        try await Task.sleep(for: .seconds(1))  // both reminders would be published in one transaction
        let texts = try await reminders(system, user: user)
        #expect(texts.count == 1, "expected one reminder, got \(texts)")
        #expect(!texts.contains { $0.contains(done.name) }, "a checked-in task was reminded")
    }

    static func reminders(_ system: DevSystem, user: String) async throws -> [String] {
        try await system.call(Notifier.inboxList, InboxListRequest(limit: 50), user: user).items.filter { $0.kind == .reminder }.map { "\($0.title) \($0.body)" }
    }

    static func utc(_ format: String, _ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = format
        return formatter.string(from: date)
    }

    // MARK: 5. Deleting content

    /// Deleting a set removes its cards in store and their review state in scheduler
    /// (`flashcard.deleted`), and leaves other sets' cards and state alone.
    static func deleteSet(_ system: DevSystem, user: String = "flow5") async throws {
        let doomed = try await system.call(Store.createSet, FlashcardSetCreate(name: "Old deck"), user: user)
        let kept = try await system.call(Store.createSet, FlashcardSetCreate(name: "Keep"), user: user)
        var doomedCards: [String] = []
        for n in 1...3 {
            doomedCards.append(try await system.call(Store.createFlashcard, FlashcardCreate(front: "Q\(n)", back: "A\(n)", setId: doomed.id), user: user).id)
        }
        let keptCard = try await system.call(Store.createFlashcard, FlashcardCreate(front: "Keep?", back: "Yes", setId: kept.id), user: user).id
        try await eventually("scheduler has every card") {
            try await system.call(Scheduler.dueCards, DueRequest(limit: 100), user: user).cards.count == 4
        }
        _ = try await system.call(Store.deleteSet, RecordID(id: doomed.id), user: user)
        try await eventually("scheduler dropped the deleted cards") {
            try await system.call(Scheduler.dueCards, DueRequest(limit: 100), user: user).cards.map(\.cardId) == [keptCard]
        }
        for card in doomedCards {
            await #expect(throws: BusError.self) { try await system.call(Scheduler.cardState, ReviewCardID(cardId: card), user: user) }
        }
        let left = try await system.call(Store.listFlashcards, FlashcardList(), user: user)
        #expect(left.items.map(\.id) == [keptCard])
    }
}
