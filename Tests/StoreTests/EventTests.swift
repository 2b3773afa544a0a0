import Bus
import Contracts
import Foundation
import ServiceKit
import Storage
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("Events and description")
struct EventTests {
    @Test("committed changes are published on the bus from the outbox, with the durable stream's seq")
    func publishesFromOutbox() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let listener = try Bus(configuration: busConfiguration(world.endpoints, source: "listener"), logger: testLogger("listener"))
            let events = try await EventCollector.subscribed(listener, ["flashcard.", "set."])
            let set = try await world.call(Store.createSet, FlashcardSetCreate(name: "Deck"))
            let card = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Q", back: "A", setId: set.id))
            _ = try await world.call(Store.deleteSet, RecordID(id: set.id))
            try await eventually("four events published") { events.all.count == 4 }
            #expect(events.topics() == ["set.created", "flashcard.created", "flashcard.deleted", "set.deleted"])
            let headers = events.all.map(\.header)
            #expect(headers.allSatisfy { $0.source == "store" && $0.instance == world.store.owner.outbox?.instance && $0.user == "alice" })
            #expect(headers.map(\.seq) == [1, 2, 3, 4])
            #expect(try events.all[1].decode(Store.flashcardCreated) == card)
            #expect(try events.all[2].decode(Store.flashcardDeleted).setId == set.id)
            events.cancel()
            await listener.shutdown()
        }
    }

    @Test("_describe lists every method of the contract and the events")
    func describe() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let description = try await world.call(Reserved.describe("store"), Empty())
            let served = Set(description.methods.map(\.name))
            #expect(Set(Store.methods.map(\.name)).isSubset(of: served))
            #expect(served.contains("_events.replay"))
            #expect(description.events.map(\.topic) == Store.topics.map(\.name))
            let put = try #require(description.methods.first { $0.name == "materials.put" })
            #expect(put.request["chunks"] != nil && put.request["materialId?"] != nil)
        }
    }
}
