import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import SchedulerCore
import ServiceKit
import Storage
import TestSupport
import Testing

/// A stand-in for store's durable stream: a real outbox and `_events.replay` under the name
/// `store`, publishing flashcard events with store's payload fields.
struct FakeStore {
    struct Card: Codable, Sendable {
        var id: String
        var userId: String
        var front: String
        var back: String
        var setId: String?
        var subjectId: String?
    }
    static let created = Topic<Card>("flashcard.created", "store's flashcard.created")
    static let updated = Topic<Card>("flashcard.updated", "store's flashcard.updated")
    static let deleted = Topic<Card>("flashcard.deleted", "store's flashcard.deleted")

    let bus: Bus
    let database: ServiceDatabase
    let outbox: Outbox
    let tasks: [Task<Void, any Error>]

    static func start(_ endpoints: Broker.Endpoints) throws -> FakeStore {
        let bus = try Bus(configuration: busConfiguration(endpoints, source: "store", heartbeatMs: heartbeatMs), logger: testLogger("store"))
        var migrator = DatabaseMigrator()
        Outbox.registerMigrations(&migrator)
        let database = try ServiceDatabase.open(at: try temporaryDirectory().appending(path: "store.sqlite"), migrator: migrator, logger: testLogger("store"))
        let outbox = try Outbox(source: "store", database: database, bus: bus, logger: testLogger("store"))
        let host = ServiceHost(bus: bus, service: "store", logger: testLogger("store"))
        outbox.registerReplay(on: host)
        return FakeStore(bus: bus, database: database, outbox: outbox, tasks: [Task { try await host.run() }, Task { try await outbox.run() }])
    }

    func publish(_ topic: Topic<Card>, _ card: Card) throws {
        try database.pool.write { db in _ = try Outbox.append(db, topic, card, user: card.userId) }
        outbox.notifyCommitted()
    }

    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
        await bus.shutdown()
    }
}

@Suite("Review state follows store's flashcards")
struct StoreCardsTests {
    @Test("flashcard.created starts review state (due now), flashcard.updated moves it, flashcard.deleted drops it, also for events sent while the scheduler was down")
    func followsStore() async throws {
        let world = try await SchedulerWorld.start()
        let store = try FakeStore.start(world.endpoints)
        try store.publish(FakeStore.created, .init(id: "f1", userId: "u1", front: "Q", back: "A", setId: "s1"))
        try await eventually("f1 has review state") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: "f1"))) != nil }
        let state = try await world.call(Scheduler.cardState, ReviewCardID(cardId: "f1"))
        #expect(state.setId == "s1" && state.dueAt == world.clock.now() && state.reviewCount == 0)

        await world.stopScheduler()
        try store.publish(FakeStore.created, .init(id: "f2", userId: "u1", front: "Q2", back: "A2", setId: "s1"))
        try store.publish(FakeStore.updated, .init(id: "f2", userId: "u1", front: "Q2", back: "A2", setId: "s2", subjectId: "bio"))
        try store.publish(FakeStore.deleted, .init(id: "f1", userId: "u1", front: "Q", back: "A", setId: "s1"))
        try await world.startScheduler()
        try await eventually("caught up with store") {
            let f1 = await world.failure(Scheduler.cardState, ReviewCardID(cardId: "f1"))
            let f2 = try? await world.call(Scheduler.cardState, ReviewCardID(cardId: "f2"))
            return f1?.code == .notFound && f2?.setId == "s2"
        }
        #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: "f2")).subjectId == "bio")
        #expect(try await world.call(Scheduler.dueCards, DueRequest()).cards.map(\.cardId) == ["f2"])
        await store.stop()
        await world.stop()
    }
}
