import Bus
import Contracts
import Foundation
@testable import SchedulerCore
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("Hostile events to the scheduler's consumer")
struct HostileEventTests {
    @Test("store events with seq 2^63−1, then 1, and a ts of Int64.min are dropped and counted; the scheduler keeps serving")
    func hostileSeqAndTs() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            // Anyone may publish on the bus; this one claims to be store.
            let impostor = try Bus(configuration: busConfiguration(world.endpoints, source: "store"), logger: testLogger("impostor"))
            let card = Flashcard(id: "c1", userId: "u1", front: "f", back: "b", createdAt: world.clock.now(), updatedAt: world.clock.now())
            let payload = try WireCoding.encode(card)
            func publish(_ id: String, seq: Int64, ts: Int64) throws {
                let header = EventHeader(id: id, source: "store", instance: "store-forged", seq: seq, ts: ts, user: "u1")
                try impostor.publish(topic: Store.flashcardCreated.name, header: header, payload: payload)
            }
            var round = 0
            try await eventually("the scheduler dropped the hostile events") {
                round += 1
                try publish("max-\(round)", seq: .max, ts: 0)
                try publish("one-\(round)", seq: 1, ts: 0)
                try publish("min-ts-\(round)", seq: 2, ts: .min)
                try await Task.sleep(for: .milliseconds(50))
                return world.scheduler.storeCards.invalidEventsDropped >= 2
            }
            #expect(try await world.client.call(Reserved.health("scheduler"), Empty()).status == .serving)
            let settings = try await world.call(Scheduler.getSettings, Empty())
            #expect(settings.userId == "u1", "the scheduler still answers")
            await impostor.shutdown()
        }
    }
}
