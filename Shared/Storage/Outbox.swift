import Foundation
import GRDB
import Logging
import ServiceLifecycle
import Synchronization
import Traces
import Tracing
import Wire

/// The durable event stream of a service that owns data (wire protocol §3).
///
/// A change and the events it causes are written in **one transaction**: ``append(_:_:_:user:)``
/// inserts the event into the outbox table of the same database, numbered by `seq` (1, 2, 3, …
/// with no gaps: SQLite `AUTOINCREMENT` rolls back with the transaction). After commit the
/// outbox publishes it; if the process dies first, it is published on the next start. Any
/// subscriber can fill a gap or catch up with `_events.replay`, which ``replay(_:)`` answers
/// from the table.
///
/// The stream's `instance` is a name stored in the database at its creation, so `seq` keeps
/// counting across restarts and a subscriber's cursor stays valid.
public final class Outbox: Service, Sendable {
    public let source: String
    /// The stream's stable instance name, `<source>-<id of this database>`.
    public let instance: String
    let database: ServiceDatabase
    private let publisher: any EventPublisher
    private let logger: Logger
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let retention: Duration
    /// The newest `seq` published in this run (0 before the first), for ``backlog()``.
    let publishedSeq = Atomic<Int64>(0)

    /// Adds the outbox tables; register it with the service's other migrations.
    public static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("bus.outbox.v1") { db in
            try db.execute(sql: """
                CREATE TABLE bus_outbox (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    topic TEXT NOT NULL,
                    user TEXT,
                    ts INTEGER NOT NULL,
                    meta TEXT,
                    payload TEXT NOT NULL
                );
                CREATE TABLE bus_outbox_state (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    instance TEXT NOT NULL,
                    published_seq INTEGER NOT NULL
                );
                """)
            try db.execute(
                sql: "INSERT INTO bus_outbox_state (singleton, instance, published_seq) VALUES (1, ?, 0)",
                arguments: [String(UUID().uuidString.prefix(8)).lowercased()])
        }
    }

    /// - Parameters:
    ///   - retention: how long published events stay replayable (`OUTBOX_RETENTION_DAYS`).
    public init(source: String, database: ServiceDatabase, publisher: any EventPublisher, retention: Duration = .seconds(30 * 86_400), logger: Logger) throws(BusError) {
        self.source = source
        self.database = database
        self.publisher = publisher
        self.logger = logger
        self.retention = retention
        (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        do {
            let suffix = try database.pool.read { db in
                try String.fetchOne(db, sql: "SELECT instance FROM bus_outbox_state WHERE singleton = 1")
            }
            guard let suffix else { throw BusError.failedPrecondition("the outbox migration has not run") }
            instance = "\(source)-\(suffix)"
        } catch let error as BusError {
            throw error
        } catch {
            throw .failedPrecondition("cannot read the outbox state: \(error)")
        }
    }

    /// Appends an event inside the caller's write transaction; returns its `seq`.
    /// Call ``notifyCommitted()`` after the transaction commits. The event carries the
    /// `traceparent` of the work that wrote it (``TraceParent/current``), unless `meta` has one.
    ///
    /// While the process traces (``Spans``), the event is also a producer span `create TOPIC`,
    /// a child of that `traceparent` (or a new trace's root), and carries the span's own
    /// `traceparent` instead: its consumers' spans are the producer span's children. The span
    /// is made when the row is written, so a transaction that rolls back leaves a span for an
    /// event that never went out.
    @discardableResult
    public static func append<Payload>(_ db: Database, _ topic: Topic<Payload>, _ payload: Payload, user: String?, meta: [String: String] = [:]) throws -> Int64 {
        let json = String(decoding: try WireCoding.encode(payload), as: UTF8.self)
        let id = UUID().uuidString.lowercased()
        guard Spans.isEnabled else {
            return try insert(db, id: id, topic: topic.name, user: user, meta: TraceParent.propagated(into: meta), json: json)
        }
        let span = Spans.start("create \(topic.name)", kind: .producer, parent: TraceParent.valid(meta[TraceParent.key]) ?? TraceParent.current)
        span.attributes["messaging.system"] = "studybus"
        span.attributes["messaging.operation.type"] = "create"
        span.attributes["messaging.destination.name"] = topic.name
        span.attributes["messaging.message.id"] = id
        var meta = TraceParent.propagated(into: meta)
        if let traceparent = Spans.traceparent(of: span) { meta[TraceParent.key] = traceparent }
        do {
            let seq = try insert(db, id: id, topic: topic.name, user: user, meta: meta, json: json)
            span.attributes["studybus.event.seq"] = seq
            span.end()
            return seq
        } catch {
            span.setStatus(SpanStatus(code: .error, message: "the event was not written"))
            span.end()
            throw error
        }
    }

    private static func insert(_ db: Database, id: String, topic: String, user: String?, meta: [String: String], json: String) throws -> Int64 {
        let metaJSON = meta.isEmpty ? nil : JSONValue.object(meta.mapValues { .string($0) }).jsonText
        // A cached statement: one transaction may append hundreds (a material's cards).
        try db.cachedStatement(sql: "INSERT INTO bus_outbox (id, topic, user, ts, meta, payload) VALUES (?, ?, ?, ?, ?, ?)")
            .execute(arguments: [id, topic, user, Date().unixMilliseconds, metaJSON, json])
        return db.lastInsertedRowID
    }

    /// Wakes the publisher; call after a transaction that appended events commits.
    public func notifyCommitted() {
        wake.yield()
    }

    /// Publishes stored events in `seq` order as they are committed; also prunes events older
    /// than the retention. Runs until graceful shutdown (publishing what is committed by then).
    ///
    /// How far it has published is kept in memory and saved at most once a second (and at the
    /// end), not after every batch: after a crash, at most the last second's events go out
    /// again, with the same ids and seqs, which consumers skip as already seen.
    public func run() async throws {
        var cursor = try PublishCursor(database: database)
        wake.yield()
        var nextPrune = ContinuousClock.now
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                // A periodic tick covers commits whose caller forgot notifyCommitted().
                group.addTask { [wake] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        wake.yield()
                    }
                }
                for await _ in wakeups {
                    await publishPending(&cursor)
                    await cursor.save(to: database, force: false, logger: logger)
                    if ContinuousClock.now >= nextPrune {
                        await prune(publishedThrough: cursor.published)
                        nextPrune = ContinuousClock.now + .seconds(3600)
                    }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: { [wake] in
            wake.finish()
        }
        await publishPending(&cursor)
        await cursor.save(to: database, force: true, logger: logger)
    }

    private func publishPending(_ cursor: inout PublishCursor) async {
        do {
            while true {
                let after = cursor.published
                let events = try await database.pool.read { db in
                    try StoredRow.fetchAll(db, sql: "SELECT * FROM bus_outbox WHERE seq > ? ORDER BY seq LIMIT 500", arguments: [after])
                }
                guard let last = events.last else { return }
                for row in events {
                    do {
                        try publisher.publish(topic: row.topic, header: row.header(source: source, instance: instance), payload: Data(row.payload.utf8))
                    } catch let error as BusError where error.code == .resourceExhausted {
                        // Larger than the broker takes from publishers: it can never go out live,
                        // and retrying it would hold back every event after it. It stays in the
                        // outbox, so a durable consumer sees the gap in seq and replays it.
                        logger.error("outbox event too large to publish; skipped live, kept for _events.replay", metadata: [
                            "seq": "\(row.seq)", "topic": "\(row.topic)", "error": "\(error.message)",
                        ])
                    }
                }
                cursor.published = last.seq
                publishedSeq.store(last.seq, ordering: .relaxed)
            }
        } catch {
            logger.error("outbox could not publish; will retry", metadata: ["error": "\(error)"])
        }
    }

    private func prune(publishedThrough published: Int64) async {
        let cutoff = Date().unixMilliseconds - retention.components.seconds * 1000
        do {
            let removed = try await database.pool.write { db -> Int in
                // Keep the newest event so that seq keeps counting even after a long quiet time.
                try db.execute(sql: """
                    DELETE FROM bus_outbox WHERE ts < ? AND seq <= ? AND seq < (SELECT MAX(seq) FROM bus_outbox)
                    """, arguments: [cutoff, published])
                return db.changesCount
            }
            if removed > 0 { logger.info("outbox pruned old events", metadata: ["removed": "\(removed)"]) }
        } catch {
            logger.warning("outbox prune failed", metadata: ["error": "\(error)"])
        }
    }

    /// The most events one `_events.replay` answer carries (and the default).
    public static let replayLimit = 1000

    /// The answer to `_events.replay`: the stored events after `request.after` (at most
    /// ``replayLimit``), only `user`'s when given. `lastSeq` is the stream's newest either way,
    /// so a caller reading one user's events is caught up when a page holds fewer than it asked.
    /// - Throws: `INVALID_ARGUMENT` for a negative `after` or a limit out of range.
    public func replay(_ request: ReplayRequest, user: String? = nil) async throws -> ReplayResponse {
        guard request.after >= 0 else { throw BusError.invalidArgument("field 'after' must be 0 or more") }
        let limit = request.limit ?? Self.replayLimit
        guard (1...Self.replayLimit).contains(limit) else {
            throw BusError.invalidArgument("field 'limit' must be between 1 and \(Self.replayLimit), got \(limit)")
        }
        let source = self.source, instance = self.instance
        return try await database.pool.read { db in
            let rows = if let user {
                // Walks the stream from `after` by its primary key: one user's share of the
                // retained events is read past, not indexed (events are kept for days, and the
                // edge asks from its last position).
                try StoredRow.fetchAll(db, sql: "SELECT * FROM bus_outbox WHERE seq > ? AND user = ? ORDER BY seq LIMIT ?", arguments: [request.after, user, limit])
            } else {
                try StoredRow.fetchAll(db, sql: "SELECT * FROM bus_outbox WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [request.after, limit])
            }
            let lastSeq = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'bus_outbox'") ?? 0
            let events = try rows.map { row in
                StoredEvent(topic: row.topic, header: row.header(source: source, instance: instance), payload: try JSONValue.parse(row.payload))
            }
            return ReplayResponse(events: events, lastSeq: lastSeq, instance: instance)
        }
    }

    /// The newest `seq` in the stream (0 when empty).
    public func lastSeq() throws -> Int64 {
        try database.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'bus_outbox'") ?? 0
        }
    }
}

/// How far the outbox has published, and when that was last saved.
private struct PublishCursor {
    var published: Int64
    private var saved: Int64
    private var savedAt = ContinuousClock.now

    init(database: ServiceDatabase) throws {
        published = try database.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT published_seq FROM bus_outbox_state WHERE singleton = 1") ?? 0
        }
        saved = published
    }

    mutating func save(to database: ServiceDatabase, force: Bool, logger: Logger) async {
        guard published != saved, force || ContinuousClock.now - savedAt >= .seconds(1) else { return }
        do {
            let value = published
            try await database.pool.write { db in
                try db.execute(sql: "UPDATE bus_outbox_state SET published_seq = ? WHERE singleton = 1", arguments: [value])
            }
            saved = published
            savedAt = ContinuousClock.now
        } catch {
            logger.warning("outbox could not save its publish cursor; will retry", metadata: ["error": "\(error)"])
        }
    }
}

private struct StoredRow: FetchableRecord, Decodable, Sendable {
    var seq: Int64
    var id: String
    var topic: String
    var user: String?
    var ts: Int64
    var meta: String?
    var payload: String

    func header(source: String, instance: String) -> EventHeader {
        var metadata: [String: String] = [:]
        if let meta, let object = try? JSONValue.parse(meta).objectValue {
            for (key, value) in object { metadata[key] = value.stringValue }
        }
        return EventHeader(id: id, source: source, instance: instance, seq: seq, ts: ts, user: user, meta: metadata)
    }
}
