import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import SchedulerCore
import ServiceKit
import ServiceLifecycle
import Storage
import StoreCore
import TestSupport
import Testing
import Wire

/// The real store service on its own bus and SQLite file, beside the scheduler world.
struct RunningStore: TestWorld {
    let store: StoreService
    let tasks: [Task<Void, any Error>]

    static func start(_ world: SchedulerWorld) async throws -> RunningStore {
        let configuration = StoreConfiguration(databaseURL: try temporaryDirectory().appending(path: "store.sqlite"), clock: world.clock)
        let store = try StoreService(context: ServiceContext(
            configuration: configuration, logger: testLogger("store"),
            busConfiguration: busConfiguration(world.endpoints, source: "store")))
        let running = RunningStore(store: store, tasks: store.services.map { service in Task { try await service.run() } })
        try await eventually("store serves", timeout: Wait.startup) {
            (try? await world.client.call(Reserved.health("store"), Empty()))?.status == .serving
        }
        return running
    }

    /// Calls the store for user u1 through the world's client.
    static func call<Request, Response>(_ world: SchedulerWorld, _ method: Method<Request, Response>, _ request: Request) async throws -> Response {
        try await world.client.call(method, request, options: CallOptions(user: "u1"))
    }

    func stop() async {
        for task in tasks.reversed() { task.cancel() }
        for task in tasks { _ = try? await task.value }
        await store.owner.bus.shutdown()
    }
}

@Suite("Review state follows store's flashcards")
struct StoreCardsTests {
    @Test("flashcard.created starts review state (due now), flashcard.updated moves it, flashcard.deleted drops it, also for events sent while the scheduler was down")
    func followsStore() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            try await withWorld(RunningStore.start(world)) { store in
                let set1 = try await RunningStore.call(world, Store.createSet, FlashcardSetCreate(name: "Cells"))
                let set2 = try await RunningStore.call(world, Store.createSet, FlashcardSetCreate(name: "Organs"))
                let biology = try await RunningStore.call(world, Store.createSubject, SubjectCreate(name: "Biology"))
                let f1 = try await RunningStore.call(world, Store.createFlashcard, FlashcardCreate(front: "Q", back: "A", setId: set1.id))
                try await eventually("f1 has review state") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: f1.id))) != nil }
                let state = try await world.call(Scheduler.cardState, ReviewCardID(cardId: f1.id))
                #expect(state.setId == set1.id && state.dueAt == world.clock.now() && state.reviewCount == 0)

                await world.stopScheduler()
                let f2 = try await RunningStore.call(world, Store.createFlashcard, FlashcardCreate(front: "Q2", back: "A2", setId: set1.id))
                _ = try await RunningStore.call(world, Store.updateFlashcard, FlashcardUpdate(id: f2.id, setId: set2.id, subjectId: biology.id))
                _ = try await RunningStore.call(world, Store.deleteFlashcard, RecordID(id: f1.id))
                try await world.startScheduler()
                try await eventually("caught up with store") {
                    let gone = await world.failure(Scheduler.cardState, ReviewCardID(cardId: f1.id))
                    let moved = try? await world.call(Scheduler.cardState, ReviewCardID(cardId: f2.id))
                    return gone?.code == .notFound && moved?.setId == set2.id
                }
                #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: f2.id)).subjectId == biology.id)
                #expect(try await world.call(Scheduler.dueCards, DueRequest()).cards.map(\.cardId) == [f2.id])
            }
        }
    }

    @Test("undo after the card moved to another set takes the review back from the set it was counted under")
    func undoAfterMove() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            try await withWorld(RunningStore.start(world)) { store in
                let before = try await RunningStore.call(world, Store.createSet, FlashcardSetCreate(name: "Before"))
                let after = try await RunningStore.call(world, Store.createSet, FlashcardSetCreate(name: "After"))
                let card = try await RunningStore.call(world, Store.createFlashcard, FlashcardCreate(front: "Q", back: "A", setId: before.id))
                try await eventually("the card has review state") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id))) != nil }
                _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: card.id, rating: .good))
                _ = try await RunningStore.call(world, Store.updateFlashcard, FlashcardUpdate(id: card.id, setId: after.id))
                try await eventually("the card moved") { try await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id)).setId == after.id }

                // The set the card left has no cards, so set.stats would answer NOT_FOUND: read its counter.
                func reviewsCounted(_ setId: String) async throws -> Int? {
                    try await world.scheduler.owner.database.pool.read { db in
                        try Int.fetchOne(db, sql: "SELECT reviews FROM set_stats WHERE set_id = ?", arguments: [setId])
                    }
                }
                #expect(try await reviewsCounted(before.id) == 1)
                _ = try await world.call(Scheduler.undoReview, ReviewCardID(cardId: card.id))
                #expect(try await reviewsCounted(before.id) == 0)
                #expect(try await reviewsCounted(after.id) ?? 0 == 0)
                #expect(try await world.call(Scheduler.setStatistics, ReviewSetID(setId: after.id)).reviews == 0)
            }
        }
    }

    @Test("progress.today counts the reviews the scheduler recorded that day; without the scheduler it answers the rest")
    func progressCountsReviews() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            try await withWorld(RunningStore.start(world)) { store in
                var cards: [Flashcard] = []
                for index in 0..<3 { cards.append(try await RunningStore.call(world, Store.createFlashcard, FlashcardCreate(front: "Q\(index)", back: "A"))) }
                for card in cards {
                    try await eventually("review state of \(card.id)") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id))) != nil }
                    _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: card.id, rating: .good))
                }
                _ = try await world.call(Scheduler.undoReview, ReviewCardID(cardId: cards[2].id))

                // The world's clock is 2026-11-22T10:00Z: that day in UTC has two reviews (one undone).
                let today = try await RunningStore.call(world, Store.progressToday, ProgressTodayRequest(date: "2026-11-22", timeZone: "UTC"))
                #expect(today.reviewsRecorded == 2 && today.flashcardsCreated == 3)
                // In Tokyo 10:00Z is 19:00, the same day.
                #expect(try await RunningStore.call(world, Store.progressToday, ProgressTodayRequest(date: "2026-11-21", timeZone: "UTC")).reviewsRecorded == 0)
                #expect(try await RunningStore.call(world, Store.progressToday, ProgressTodayRequest(date: "2026-11-22", timeZone: "Asia/Tokyo")).reviewsRecorded == 2)
                // Another user's day has none of them.
                let bob = try await world.client.call(Store.progressToday, ProgressTodayRequest(date: "2026-11-22", timeZone: "UTC"), options: CallOptions(user: "u2"))
                #expect(bob.reviewsRecorded == 0)
                // review.count checks its range.
                let backwards = await world.failure(Scheduler.reviewCount, ReviewCountRequest(from: world.clock.now(), to: world.clock.now().addingTimeInterval(-1)))
                #expect(backwards?.code == .invalidArgument)

                await world.stopScheduler()
                let started = ContinuousClock.now
                let withoutScheduler = try await RunningStore.call(world, Store.progressToday, ProgressTodayRequest(date: "2026-11-22", timeZone: "UTC"))
                #expect(withoutScheduler.reviewsRecorded == nil && withoutScheduler.flashcardsCreated == 3)
                #expect(ContinuousClock.now - started < .seconds(10))
            }
        }
    }
}
