import BrokerCore
import Bus
import Foundation
import GRDB
import ServiceKit
import Storage
import TestSupport
import Testing
import Wire

private let addNote = Method<NoteAdded, Empty>(service: "notes", "notes.add", "Adds a note and its event.", audience: .app)
private let relayEcho = Method<EchoRequest, EchoReply>(service: "relay", "relay", "Calls echo and returns its reply.", audience: .app)
private let tallied = Topic<NoteAdded>(service: "tally", "note.tallied", "The consumer counted a note.")

@Suite("traceparent follows the work across calls and events")
struct TraceTests {
    static let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("traceparent must be well-formed to be passed on")
    func validation() {
        #expect(TraceParent.valid(Self.trace) == Self.trace)
        #expect(TraceParent.valid("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01") == nil)  // upper case
        #expect(TraceParent.valid("00-00000000000000000000000000000000-00f067aa0ba902b7-01") == nil)  // zero trace id
        #expect(TraceParent.valid("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01") == nil)  // zero span id
        #expect(TraceParent.valid("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == nil)  // version ff
        #expect(TraceParent.valid(Self.trace + "-extra") == nil)
        #expect(TraceParent.valid("not a trace") == nil)
        #expect(TraceParent.valid(nil) == nil)
    }

    @Test("a request's traceparent goes into the events its handler writes; a malformed one does not")
    func requestToOutbox() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let bus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
            let producer = try Producer.start(at: try temporaryDirectory(), bus: bus)
            producer.host.handle(addNote) { note, _ in
                try await producer.database.pool.write { db in
                    try db.execute(sql: "INSERT INTO note (n) VALUES (?)", arguments: [note.n])
                    try Outbox.append(db, noteAdded, note, user: "u1")
                }
                return Empty()
            }
            let client = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("client"))
            try await eventually("notes serves", timeout: Wait.startup) { (try? await client.call(Reserved.health("notes"), Empty())) != nil }
            _ = try await client.call(addNote, NoteAdded(n: 1), options: CallOptions(user: "u1", meta: ["traceparent": Self.trace]))
            _ = try await client.call(addNote, NoteAdded(n: 2), options: CallOptions(user: "u1", meta: ["traceparent": "00-bogus"]))
            _ = try await client.call(addNote, NoteAdded(n: 3), options: CallOptions(user: "u1"))
            let events = try await client.call(Reserved.eventsReplay("notes"), ReplayRequest(after: 0)).events
            #expect(events.map { $0.header.meta[TraceParent.key] } == [Self.trace, nil, nil])
            await producer.stop()
            await client.shutdown()
            await bus.shutdown()
        }
    }

    @Test("a handler's calls carry the request's traceparent without passing it by hand")
    func requestToCalls() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let relayBus = try Bus(configuration: busConfiguration(world.endpoints, source: "relay"), logger: testLogger("relay"))
            let relay = ServiceHost(bus: relayBus, service: "relay", logger: testLogger("relay"))
            relay.handle(relayEcho) { request, _ in
                try await relayBus.call(Echo.echo, request, options: CallOptions(user: "u1"))
            }
            let relayTask = Task { try await relay.run() }
            try await world.waitForService("relay")
            let reply = try await world.client.call(relayEcho, EchoRequest(text: "hi"), options: CallOptions(user: "u1", meta: ["traceparent": Self.trace]))
            #expect(reply.traceparent == Self.trace)
            let untraced = try await world.client.call(relayEcho, EchoRequest(text: "hi"), options: CallOptions(user: "u1"))
            #expect(untraced.traceparent == nil)
            relayTask.cancel()
            _ = try? await relayTask.value
            await relayBus.shutdown()
        }
    }

    @Test("what a consumer writes for an event continues the event's trace")
    func eventToOutbox() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let producerBus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
            let producer = try Producer.start(at: try temporaryDirectory(), bus: producerBus)
            try await TraceParent.$current.withValue(Self.trace) {
                try await producer.database.pool.write { db in try Outbox.append(db, noteAdded, NoteAdded(n: 1), user: "u1") }
            }
            _ = try await producer.database.pool.write { db in try Outbox.append(db, noteAdded, NoteAdded(n: 2), user: "u1") }
            producer.outbox.notifyCommitted()

            var migrator = DatabaseMigrator()
            DurableConsumer.registerMigrations(&migrator)
            Outbox.registerMigrations(&migrator)
            let tally = try ServiceDatabase.open(at: try temporaryDirectory().appending(path: "tally.sqlite"), migrator: migrator, logger: testLogger("tally"))
            var routes = EventRoutes()
            routes.on(noteAdded) { note, _, db in try Outbox.append(db, tallied, note, user: "u1") }
            let consumerBus = try Bus(configuration: busConfiguration(endpoints, source: "tally"), logger: testLogger("tally"))
            let consumer = DurableConsumer(name: "tally", bus: consumerBus, database: tally, routes: routes, catchUpInterval: .milliseconds(200), logger: testLogger("tally"))
            let consumerTask = Task { try await consumer.run() }
            let written = { try tally.pool.read { db in try String?.fetchAll(db, sql: "SELECT meta FROM bus_outbox ORDER BY seq") } }
            try await eventually("both notes tallied") { try written().count == 2 }
            let metas = try written()
            #expect(metas[0]?.contains(Self.trace) == true)
            #expect(metas[1] == nil)
            consumerTask.cancel()
            _ = try? await consumerTask.value
            await consumerBus.shutdown()
            await producer.stop()
            await producerBus.shutdown()
        }
    }
}
