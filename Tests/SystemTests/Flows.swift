import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

/// The cross-service flows of docs/flows.md, each driven through the bus of a running system and
/// asserted on what the services answer. Each flow uses its own user, so flows can share one
/// system and run in any order.
enum Flows {
    // MARK: 1. Material to review queue

    /// A study text submitted to ingest ends ready in store with chunks, a summary, keywords and
    /// cards; the cards become review cards due now in scheduler (`flashcard.created`); notifier
    /// says the material is ready; at the user's review time `review.due` lands in the inbox.
    /// Waits for the next minute, as reminder times have minute resolution (up to 70 s).
    static func materialToReview(_ system: DevSystem, user: String = "flow1") async throws {
        let fire = nextReminderMinute()
        _ = try await system.call(Scheduler.updateSettings, SettingsUpdate(timeZone: "UTC", reviewReminderTime: utc("HH:mm", fire)), user: user)
        let result = try await submit(system, StudyText.photosynthesis, fileName: "photosynthesis.md", user: user)
        #expect(result.material.status == .ready && !result.duplicate)
        let outcome = try #require(result.outcome)
        #expect(outcome.chunkCount > 0 && outcome.flashcardIds.count >= 3)
        let material = try await system.call(Store.getMaterial, RecordID(id: result.materialId), user: user)
        #expect(material.summary?.contains("chlorophyll") == true || material.summary?.contains("Photosynthesis") == true)
        #expect(material.keywords.contains { $0.lowercased().contains("photosynthesis") || $0.lowercased().contains("chlorophyll") })
        let chunks = try await system.call(Store.listChunks, ChunkList(limit: 100, materialId: material.id), user: user)
        #expect(chunks.items.count == outcome.chunkCount)

        try await eventually("scheduler has every card, due now") {
            let due = try await system.call(Scheduler.dueCards, DueRequest(limit: 1000), user: user)
            return Set(due.cards.map(\.cardId)) == Set(outcome.flashcardIds)
        }
        try await eventually("notifier says the material is ready") {
            try await inbox(system, user: user).contains { $0.kind == .material && $0.body.contains(material.title) }
        }
        try await eventually("the review reminder arrives", timeout: .seconds(fire.timeIntervalSinceNow + 30)) {
            try await reminders(system, user: user).contains { $0.contains("review") }
        }
        // The same file again is the same material.
        let again = try await submit(system, StudyText.photosynthesis, fileName: "again.md", user: user)
        #expect(again.duplicate && again.materialId == material.id)
    }

    /// Submits `text` to ingest as a Markdown file and waits for the material.
    static func submit(_ system: DevSystem, _ text: String, fileName: String, user: String) async throws -> IngestResult {
        try await system.call(Ingest.submit, IngestSubmit(fileName: fileName, wait: true), user: user, attachment: Data(text.utf8), timeout: .seconds(60))
    }

    static func inbox(_ system: DevSystem, user: String) async throws -> [NotificationRecord] {
        try await system.call(Notifier.inboxList, InboxListRequest(limit: 100), user: user).items
    }

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
        let fire = nextReminderMinute()
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

    /// The next whole minute at least 10 s away: reminder times have minute resolution, and the
    /// setting must reach the scheduler before the minute begins.
    static func nextReminderMinute() -> Date {
        let now = Date().timeIntervalSince1970
        let minute = (now / 60).rounded(.down) * 60
        return Date(timeIntervalSince1970: minute + (now - minute < 50 ? 60 : 120))
    }

    static func reminders(_ system: DevSystem, user: String) async throws -> [String] {
        try await system.call(Notifier.inboxList, InboxListRequest(limit: 50), user: user).items.filter { $0.kind == .reminder }.map { "\($0.title) \($0.body)" }
    }

    // MARK: 4. Tutor

    /// `chat` with a material as context streams its answer on `ai.stream.<requestId>`; the
    /// answer draws on the material, and the conversation in store holds question and answer.
    static func tutor(_ system: DevSystem, user: String = "flow4") async throws {
        let material = try await submit(system, StudyText.photosynthesis, fileName: "photosynthesis.md", user: user).material
        let conversation = try await system.call(Store.createConversation, ConversationCreate(title: "Questions", materialId: material.id), user: user)
        let requestId = "flow4-\(UUID().uuidString.prefix(8).lowercased())"
        let stream = try await EventCollector.active(
            system.client, AIGateway.chatStream(requestId: requestId), probe: ChatStreamEvent(requestId: requestId, index: -1, kind: .token, delta: "probe"))
        let question = "Why do plants look green?"
        let reply = try await system.call(AIGateway.chat, ChatRequest(
            requestId: requestId, messages: [ChatMessage(role: .user, content: question)], stream: true,
            conversationId: conversation.id, materialId: material.id), user: user, timeout: .seconds(60))
        #expect(reply.text.contains("reflects green light"), "the answer draws on the material: \(reply.text)")

        let events = { stream.all.compactMap { try? $0.decode(AIGateway.chatStream(requestId: requestId)) }.filter { $0.index >= 0 } }
        try await eventually("the stream's final event") { events().last?.kind == .final }
        #expect(events().filter { $0.kind == .token }.compactMap(\.delta).joined() == reply.text)
        #expect(events().map(\.index) == Array(0..<events().count))
        stream.cancel()

        let stored = try await system.call(Store.listMessages, MessageList(conversationId: conversation.id), user: user).items
        #expect(stored.map(\.role) == [.user, .assistant])
        #expect(stored.map(\.text) == [question, reply.text])
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
        try await deleteMaterial(system, keptCard: keptCard, user: user)
    }

    /// Deleting a material made by ingest removes its chunks and cards in store and their review
    /// state in scheduler; its set stays (emptied), and the user's other cards are untouched.
    static func deleteMaterial(_ system: DevSystem, keptCard: String, user: String) async throws {
        let result = try await submit(system, StudyText.photosynthesis, fileName: "to-delete.md", user: user)
        let cards = try #require(result.outcome?.flashcardIds)
        #expect(!cards.isEmpty)
        try await eventually("scheduler has the material's cards") {
            let due = Set(try await system.call(Scheduler.dueCards, DueRequest(limit: 100), user: user).cards.map(\.cardId))
            return due == Set(cards + [keptCard])
        }
        _ = try await system.call(Store.deleteMaterial, RecordID(id: result.materialId), user: user)
        try await eventually("scheduler dropped the material's cards") {
            try await system.call(Scheduler.dueCards, DueRequest(limit: 100), user: user).cards.map(\.cardId) == [keptCard]
        }
        #expect(try await system.call(Store.listChunks, ChunkList(limit: 100, materialId: result.materialId), user: user).items.isEmpty)
        #expect(try await system.call(Store.listFlashcards, FlashcardList(), user: user).items.map(\.id) == [keptCard])
        if let setId = result.outcome?.setId {
            let set = try await system.call(Store.getSet, RecordID(id: setId), user: user)
            #expect(set.materialId == nil, "the set is kept, no longer linked to the deleted material")
        }
    }
}

/// The study text the flows submit: short, with definitions ("X is Y") for the local card maker.
enum StudyText {
    static let photosynthesis = """
        # Photosynthesis

        Photosynthesis is the process by which green plants turn light energy into chemical energy.
        It takes place in the chloroplasts, mostly in the cells of the leaves. Chlorophyll is the
        green pigment that absorbs red and blue light and reflects green light, which is why most
        plants look green.

        ## The light reactions

        The light-dependent reactions happen in the thylakoid membranes. Water is split, oxygen is
        released, and the energy carriers ATP and NADPH are made.

        ## The Calvin cycle

        The Calvin cycle is the set of light-independent reactions in the stroma. It uses ATP and
        NADPH to fix carbon dioxide into glucose. RuBisCO is the enzyme that captures carbon dioxide.
        """
}
