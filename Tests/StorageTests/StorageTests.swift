import BrokerCore
import Bus
import Foundation
import GRDB
import ServiceKit
import Storage
import Synchronization
import TestSupport
import Testing
import Wire

struct NoteAdded: Codable, Sendable, Equatable {
    var n: Int
}

let noteAdded = Topic<NoteAdded>(service: "notes", "note.added", "A note was added.")
let noteOther = Topic<NoteAdded>(service: "notes", "other.thing", "Something the consumer ignores.")

struct NoteText: Codable, Sendable, Equatable {
    var text: String
}

let noteText = Topic<NoteText>(service: "notes", "note.text", "A note's text.")

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appending(path: "studybus-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A producer service "notes": a database with an outbox and a host answering `_events.replay`.
struct Producer {
    let database: ServiceDatabase
    let outbox: Outbox
    let host: ServiceHost
    let tasks: [Task<Void, any Error>]

    static func open(at directory: URL, bus: Bus) throws -> (ServiceDatabase, Outbox) {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("notes.v1") { db in try db.execute(sql: "CREATE TABLE note (n INTEGER PRIMARY KEY)") }
        Outbox.registerMigrations(&migrator)
        let database = try ServiceDatabase.open(at: directory.appending(path: "notes.sqlite"), migrator: migrator, logger: testLogger("notes"))
        return (database, try Outbox(source: "notes", database: database, publisher: bus, logger: testLogger("notes")))
    }

    static func start(at directory: URL, bus: Bus) throws -> Producer {
        let (database, outbox) = try open(at: directory, bus: bus)
        let host = ServiceHost(bus: bus, service: "notes", logger: testLogger("notes"))
        host.serveReplay(from: outbox)
        return Producer(database: database, outbox: outbox, host: host, tasks: [Task { try await host.run() }, Task { try await outbox.run() }])
    }

    /// Adds notes `range`, each with its event, one transaction per note.
    func add(_ range: ClosedRange<Int>, topic: Topic<NoteAdded> = noteAdded) throws {
        for n in range {
            try database.pool.write { db in
                try db.execute(sql: "INSERT INTO note (n) VALUES (?)", arguments: [n])
                try Outbox.append(db, topic, NoteAdded(n: n), user: "u1")
            }
        }
        outbox.notifyCommitted()
    }

    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
    }
}

/// A consumer "tally": records every note event it applies, in its own database.
func openTally(at directory: URL) throws -> ServiceDatabase {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("tally.v1") { db in
        try db.execute(sql: "CREATE TABLE seen (n INTEGER NOT NULL, event_id TEXT NOT NULL)")
    }
    DurableConsumer.registerMigrations(&migrator)
    return try ServiceDatabase.open(at: directory.appending(path: "tally.sqlite"), migrator: migrator, logger: testLogger("tally"))
}

func tallyConsumer(bus: Bus, database: ServiceDatabase, failOn: Int? = nil) -> DurableConsumer {
    var routes = EventRoutes()
    routes.on(noteAdded) { note, header, db in
        if note.n == failOn { throw BusError.internal("refusing note \(note.n)") }
        try db.execute(sql: "INSERT INTO seen (n, event_id) VALUES (?, ?)", arguments: [note.n, header.id])
    }
    return DurableConsumer(name: "tally", bus: bus, database: database, routes: routes, catchUpInterval: .milliseconds(200), logger: testLogger("tally"))
}

func seen(_ database: ServiceDatabase) throws -> [Int] {
    try database.pool.read { db in try Int.fetchAll(db, sql: "SELECT n FROM seen ORDER BY rowid") }
}

@Suite("Outbox, replay and durable consumers")
struct StorageTests {
    @Test("outbox seq counts 1, 2, 3 with no gap left by a rolled-back transaction")
    func contiguousSeq() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let bus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
            let (database, outbox) = try Producer.open(at: try temporaryDirectory(), bus: bus)
            try await database.pool.write { db in _ = try Outbox.append(db, noteAdded, NoteAdded(n: 1), user: nil) }
            await #expect(throws: BusError.self) {
                try await database.pool.write { db in
                    _ = try Outbox.append(db, noteAdded, NoteAdded(n: 2), user: nil)
                    throw BusError.aborted("injected failure after the append")
                }
            }
            try await database.pool.write { db in _ = try Outbox.append(db, noteAdded, NoteAdded(n: 3), user: nil) }
            let rows = try database.pool.read { db in try Row.fetchAll(db, sql: "SELECT seq, payload FROM bus_outbox ORDER BY seq") }
            #expect(rows.map { $0["seq"] as Int64 } == [1, 2])
            #expect(rows.map { $0["payload"] as String } == [#"{"n":1}"#, #"{"n":3}"#])
            #expect(try outbox.lastSeq() == 2)
            await bus.shutdown()
        }
    }

    @Test("committed events are published with the durable stream's header, also those committed before start")
    func publishesCommitted() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let bus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
            let directory = try temporaryDirectory()
            let (database, outbox) = try Producer.open(at: directory, bus: bus)
            // Committed while no publisher ran, as after a crash between commit and publish.
            try await database.pool.write { db in _ = try Outbox.append(db, noteAdded, NoteAdded(n: 1), user: "u1") }
            let listener = try Bus(configuration: busConfiguration(endpoints, source: "listener"), logger: testLogger("listener"))
            let events = try await EventCollector.subscribed(listener, ["note."])
            let publisher = Task { try await outbox.run() }
            try await database.pool.write { db in _ = try Outbox.append(db, noteAdded, NoteAdded(n: 2), user: "u2") }
            outbox.notifyCommitted()
            try await eventually("two events published") { events.all.count == 2 }
            let headers = events.all.map(\.header)
            #expect(headers.map(\.seq) == [1, 2])
            #expect(headers.allSatisfy { $0.source == "notes" && $0.instance == outbox.instance })
            #expect(headers.map(\.user) == ["u1", "u2"])
            #expect(try events.all.map { try $0.decode(noteAdded).n } == [1, 2])
            publisher.cancel()
            _ = try? await publisher.value
            events.cancel()
            await listener.shutdown()
            await bus.shutdown()
        }
    }

    @Test("an event too large to publish is skipped live, not retried forever: the next ones go out, replay still has it")
    func oversizedEventSkipped() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            var configuration = busConfiguration(endpoints, source: "notes")
            configuration.maxEventBytes = 1024
            let bus = try Bus(configuration: configuration, logger: testLogger("notes"))
            let producer = try Producer.start(at: try temporaryDirectory(), bus: bus)
            let listener = try Bus(configuration: busConfiguration(endpoints, source: "listener"), logger: testLogger("listener"))
            let events = try await EventCollector.subscribed(listener, [noteText.name, noteAdded.name])
            _ = try await producer.database.pool.write { db in
                try Outbox.append(db, noteText, NoteText(text: String(repeating: "x", count: 4096)), user: "u1")
            }
            try producer.add(1...2)
            try await eventually("the events after the large one published") { events.all.count == 2 }
            #expect(events.all.map(\.header.seq) == [2, 3])
            let replayed = try await listener.call(Reserved.eventsReplay("notes"), ReplayRequest(after: 0))
            #expect(replayed.events.map(\.topic) == [noteText.name, noteAdded.name, noteAdded.name])
            events.cancel()
            await producer.stop()
            await listener.shutdown()
            await bus.shutdown()
        }
    }

    @Test("_events.replay returns the stored events after a seq, in order, with the stream's last seq; a limit outside 1...1000 is INVALID_ARGUMENT")
    func replay() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let bus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
            let producer = try Producer.start(at: try temporaryDirectory(), bus: bus)
            try producer.add(1...25)
            let client = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("client"))
            try await eventually("notes serves", timeout: Wait.startup) { (try? await client.call(Reserved.health("notes"), Empty())) != nil }
            let page = try await client.call(Reserved.eventsReplay("notes"), ReplayRequest(after: 20, limit: 3))
            #expect(page.events.map(\.header.seq) == [21, 22, 23])
            #expect(page.events.map(\.payload) == [.object(["n": .int(21)]), .object(["n": .int(22)]), .object(["n": .int(23)])])
            #expect(page.lastSeq == 25)
            #expect(page.instance == producer.outbox.instance)
            let bad = await #expect(throws: BusError.self) { _ = try await client.call(Reserved.eventsReplay("notes"), ReplayRequest(after: -1)) }
            #expect(bad?.code == .invalidArgument)
            for limit in [0, 1001] {
                let outOfRange = await #expect(throws: BusError.self) {
                    _ = try await client.call(Reserved.eventsReplay("notes"), ReplayRequest(after: 0, limit: limit))
                }
                #expect(outOfRange == .invalidArgument("field 'limit' must be between 1 and 1000, got \(limit)"))
            }
            #expect(try await client.call(Reserved.eventsReplay("notes"), ReplayRequest(after: 0)).events.count == 25)
            await producer.stop()
            await client.shutdown()
            await bus.shutdown()
        }
    }

    @Test("a consumer applies events published while it was down, then live ones, each exactly once across restarts")
    func consumerCatchesUpExactlyOnce() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let producerBus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
            let producer = try Producer.start(at: try temporaryDirectory(), bus: producerBus)
            try producer.add(1...40)
            try producer.add(41...45, topic: noteOther)  // not wanted by the consumer

            let consumerDirectory = try temporaryDirectory()
            let tally = try openTally(at: consumerDirectory)
            var consumerBus = try Bus(configuration: busConfiguration(endpoints, source: "tally"), logger: testLogger("tally"))
            var consumer = Task { [consumerBus] in try await tallyConsumer(bus: consumerBus, database: tally).run() }
            try await eventually("caught up with 40 notes") { try seen(tally).count == 40 }
            try producer.add(46...60)
            try await eventually("live notes applied") { try seen(tally).count == 55 }

            consumer.cancel()
            _ = try? await consumer.value
            await consumerBus.shutdown()
            try producer.add(61...70)  // while the consumer is down
            consumerBus = try Bus(configuration: busConfiguration(endpoints, source: "tally"), logger: testLogger("tally"))
            consumer = Task { [consumerBus] in try await tallyConsumer(bus: consumerBus, database: tally).run() }
            try await eventually("caught up after restart") { try seen(tally).count == 65 }
            // One more note after the catch-up: the consumer applies in order, so once it has 71
            // any note it applied twice on the way would show.
            try producer.add(71...71)
            try await eventually("the note after the catch-up applied") { try seen(tally).last == 71 }
            #expect(try seen(tally) == Array(1...40) + Array(46...71))

            consumer.cancel()
            _ = try? await consumer.value
            await consumerBus.shutdown()
            await producer.stop()
            await producerBus.shutdown()
        }
    }

    @Test("an event whose handler keeps failing is parked as a dead letter and the stream moves on")
    func deadLetter() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let producerBus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
            let producer = try Producer.start(at: try temporaryDirectory(), bus: producerBus)
            try producer.add(1...5)
            let tally = try openTally(at: try temporaryDirectory())
            let consumerBus = try Bus(configuration: busConfiguration(endpoints, source: "tally"), logger: testLogger("tally"))
            let consumer = Task { try await tallyConsumer(bus: consumerBus, database: tally, failOn: 3).run() }
            try await eventually("the other notes applied") { try seen(tally).count == 4 }
            #expect(try seen(tally) == [1, 2, 4, 5])
            let parked = try tally.pool.read { db in try Row.fetchAll(db, sql: "SELECT seq, error FROM bus_dead_letter") }
            #expect(parked.map { $0["seq"] as Int64 } == [3])
            #expect((parked.first?["error"] as String?)?.contains("refusing note 3") == true)
            consumer.cancel()
            _ = try? await consumer.value
            await consumerBus.shutdown()
            await producer.stop()
            await producerBus.shutdown()
        }
    }

    @Test("an idempotency key applies a write once, returns the first response to repeats of the same request and refuses others")
    func idempotency() throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("counter.v1") { db in try db.execute(sql: "CREATE TABLE counter (n INTEGER)") }
        Idempotency.registerMigrations(&migrator)
        let database = try ServiceDatabase.open(at: try temporaryDirectory().appending(path: "c.sqlite"), migrator: migrator, logger: testLogger("c"))
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        func increment(
            key: String?, user: String = "u1", method: String = "counter.add", by amount: [String: Int] = ["a": 1, "b": 2], at now: Date = start
        ) throws -> NoteAdded {
            let key = try Idempotency.Key(key, method: method, request: amount)
            return try database.pool.write { db in
                try Idempotency.once(db, user: user, key: key, now: now) {
                    try db.execute(sql: "INSERT INTO counter (n) VALUES (1)")
                    return NoteAdded(n: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM counter") ?? 0)
                }
            }
        }
        #expect(try increment(key: "k1").n == 1)
        #expect(try increment(key: "k1").n == 1)
        #expect(try increment(key: "k1", user: "u2").n == 2)
        #expect(try increment(key: nil).n == 3)
        let reused: JSONValue = .object(["reason": .string(Idempotency.keyReusedReason)])
        #expect(throws: BusError(.failedPrecondition, "idempotency key 'k1' was already used for counter.add", details: reused)) {
            _ = try increment(key: "k1", method: "counter.reset")
        }
        #expect(throws: BusError(.failedPrecondition, "idempotency key 'k1' was already used for a different counter.add request; send a new key with a new request", details: reused)) {
            _ = try increment(key: "k1", by: ["a": 1, "b": 3])
        }
        #expect(throws: BusError.invalidArgument("request header field 'idem' must be 1 to 128 characters")) {
            _ = try increment(key: String(repeating: "k", count: 129))
        }
        #expect(try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM counter") } == 3)
        // Members may come in any order (a dictionary's differs between processes); the
        // fingerprint is of the canonical JSON.
        struct BeforeA: Encodable { var b = 2, a = 1 }
        let fingerprints = [try Idempotency.Key("k", method: "m", request: BeforeA()), try Idempotency.Key("k", method: "m", request: ["a": 1, "b": 2])]
        #expect(fingerprints[0] != nil && fingerprints[0] == fingerprints[1])
        // The key is remembered for 24 hours, then forgotten.
        #expect(try increment(key: "k1", at: start + 24 * 3600).n == 1)
        #expect(try increment(key: "k1", by: ["a": 5], at: start + 24 * 3600 + 0.001).n == 4)
    }
}
