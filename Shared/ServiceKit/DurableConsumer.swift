import Bus
import CoreMetrics
import Foundation
import GRDB
import Logging
import ServiceLifecycle
import Storage
import Synchronization
import Traces
import Tracing
import Wire

/// Consumes other services' durable event streams so that every event is applied exactly once,
/// even across restarts, slow subscriptions and producers that published while this service
/// was down.
///
/// It keeps a cursor per source stream (`source`+`instance`) in the consumer's own database and
/// advances it **in the same transaction** as the handler's writes. Live events arrive by
/// subscription; a `seq` jump, an unknown stream, start-up and a periodic tick all trigger a
/// catch-up through the producer's `_events.replay`. Duplicates (`seq` at or below the cursor)
/// are skipped. A handler that keeps failing for one event (3 tries) parks it in
/// `bus_dead_letter` with the error, so one bad event cannot block the stream.
///
/// While the process traces (``Spans``), applying an event is a consumer span `process TOPIC`,
/// a child of the event's `traceparent` (its producer span), with an error status if the event
/// ends in `bus_dead_letter`; what the handler writes to an outbox is the span's child.
///
/// ```swift
/// var routes = EventRoutes()
/// routes.on(Store.flashcardCreated) { card, header, db in try addCard(card, db) }
/// let consumer = DurableConsumer(name: "scheduler", bus: bus, database: database, routes: routes, logger: logger)
/// ```
public final class DurableConsumer: Service, Sendable {
    private let name: String
    private let bus: Bus
    private let database: ServiceDatabase
    private let routes: EventRoutes
    /// The producers consumed from, derived once from the routes.
    private let producers: Set<String>
    private let afterCommit: (@Sendable () -> Void)?
    private let logger: Logger
    private let catchUpInterval: Duration
    /// The live subscription, once ``run()`` made it.
    private let subscription = Mutex<EventSubscription?>(nil)
    /// `studybus_consumer_lag_events` per producer.
    private let lag: [String: Meter]

    /// How many live events were dropped as invalid (a header out of the protocol's ranges, a
    /// malformed one); 0 before ``run()``. Each is logged too, the 1st, 2nd, 4th … with the count.
    public var invalidEventsDropped: Int { subscription.withLock { $0?.invalidEventsDropped ?? 0 } }

    /// Adds the cursor and dead-letter tables; register with the service's other migrations.
    public static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("bus.cursors.v1") { db in
            try db.execute(sql: """
                CREATE TABLE bus_cursor (
                    source TEXT NOT NULL,
                    instance TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (source, instance)
                );
                CREATE TABLE bus_dead_letter (
                    source TEXT NOT NULL,
                    instance TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    topic TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    error TEXT NOT NULL,
                    at INTEGER NOT NULL,
                    PRIMARY KEY (source, instance, seq)
                );
                """)
        }
    }

    /// - Parameters:
    ///   - name: the consumer's name, for logs.
    ///   - catchUpInterval: how often to ask producers for missed events even without a gap.
    ///   - afterCommit: called after each transaction that applied events (to wake other loops).
    ///   - metrics: where its lag per source goes; swift-metrics' bootstrapped factory by default.
    public init(
        name: String, bus: Bus, database: ServiceDatabase, routes: EventRoutes, catchUpInterval: Duration = .seconds(5),
        logger: Logger, afterCommit: (@Sendable () -> Void)? = nil, metrics: (any MetricsFactory)? = nil
    ) {
        self.name = name
        self.bus = bus
        self.database = database
        self.routes = routes
        producers = Set(routes.sources.map(\.service))
        let factory = metrics ?? MetricsSystem.factory
        lag = Dictionary(uniqueKeysWithValues: producers.map { producer in
            (producer, Meter(label: "studybus_consumer_lag_events", dimensions: [("consumer", name), ("source", producer)], factory: factory))
        })
        self.catchUpInterval = catchUpInterval
        self.logger = logger
        self.afterCommit = afterCommit
    }

    private enum Input: Sendable {
        case event(BusEvent)
        case tick
    }

    /// Subscribes, catches up with every source, then applies events as they come.
    public func run() async throws {
        let subscription = try bus.subscribe(routes.topics)
        self.subscription.withLock { $0 = subscription }
        let (inputs, feed) = AsyncStream<Input>.makeStream()
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in subscription { feed.yield(.event(event)) }
                }
                group.addTask { [catchUpInterval] in
                    feed.yield(.tick)
                    while !Task.isCancelled {
                        try? await Task.sleep(for: catchUpInterval)
                        feed.yield(.tick)
                    }
                }
                var state = ConsumerState()
                for await input in inputs {
                    switch input {
                    case .tick:
                        for producer in producers.sorted() { await catchUp(producer, state: &state) }
                    case .event(let event):
                        await receive(event, state: &state)
                    }
                    for (producer, meter) in lag { meter.set(state.lag(producer)) }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            feed.finish()
        }
    }

    private struct ConsumerState {
        /// Cursors of the streams seen so far, keyed by source and instance.
        var cursors: [String: Int64] = [:]
        /// Per source, the instance whose cursor moved last (the producer's current stream).
        var currentInstance: [String: String] = [:]
        var loaded = false
        /// The newest `seq` known of each stream (from its events and replays), keyed as `cursors`.
        var newest: [String: Int64] = [:]

        func cursor(_ source: String, _ instance: String) -> Int64 { cursors[source + "\u{0}" + instance] ?? 0 }

        func knows(_ source: String, _ instance: String) -> Bool { cursors[source + "\u{0}" + instance] != nil }

        mutating func set(_ header: EventHeader) {
            cursors[header.source + "\u{0}" + header.instance] = header.seq
            currentInstance[header.source] = header.instance
        }

        mutating func saw(_ source: String, _ instance: String, seq: Int64) {
            newest[source + "\u{0}" + instance] = max(seq, newest[source + "\u{0}" + instance] ?? 0)
        }

        /// Events of `source`'s current stream known but not applied yet.
        func lag(_ source: String) -> Int64 {
            guard let instance = currentInstance[source] else { return 0 }
            return max(0, (newest[source + "\u{0}" + instance] ?? 0) - cursor(source, instance))
        }
    }

    private func loadCursors(_ state: inout ConsumerState) async {
        guard !state.loaded else { return }
        do {
            let rows = try await database.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT source, instance, seq FROM bus_cursor ORDER BY updated_at").map { row in
                    (source: row["source"] as String, instance: row["instance"] as String, seq: row["seq"] as Int64)
                }
            }
            for row in rows {
                state.cursors[row.source + "\u{0}" + row.instance] = row.seq
                state.currentInstance[row.source] = row.instance
            }
            state.loaded = true
        } catch {
            logger.error("cannot read event cursors", metadata: ["consumer": "\(name)", "error": "\(error)"])
        }
    }

    private func receive(_ event: BusEvent, state: inout ConsumerState) async {
        await loadCursors(&state)
        let header = event.header
        guard producers.contains(header.source) else { return }
        state.saw(header.source, header.instance, seq: header.seq)
        let cursor = state.cursor(header.source, header.instance)
        if state.knows(header.source, header.instance) && header.seq == cursor + 1 {
            await apply([StoredEvent(topic: event.topic, header: header, payload: (try? JSONValue.parse(event.payload)) ?? .null)], state: &state)
        } else if header.seq > cursor {
            // A stream not seen before, or a gap: the producer's replay has everything in order.
            await catchUp(header.source, state: &state)
        }
    }

    /// Applies everything `service` stored after our cursor for its current stream.
    private func catchUp(_ service: String, state: inout ConsumerState) async {
        await loadCursors(&state)
        var instance = state.currentInstance[service]
        var confirmed = false
        while !Task.isCancelled {
            let after = instance.map { state.cursor(service, $0) } ?? 0
            let response: ReplayResponse
            do {
                response = try await bus.call(
                    Reserved.eventsReplay(service), ReplayRequest(after: after, limit: 500), options: CallOptions(timeout: .seconds(10)))
            } catch {
                logger.debug("cannot catch up yet", metadata: ["consumer": "\(name)", "source": "\(service)", "error": "\(error.message)"])
                return
            }
            guard let streamInstance = response.instance else { return }
            state.saw(service, streamInstance, seq: response.lastSeq)
            if !confirmed && streamInstance != instance {
                // The producer has a stream we have no cursor for (new database): start it at 0.
                instance = streamInstance
                confirmed = true
                continue
            }
            confirmed = true
            if let first = response.events.first, first.header.seq > after + 1 {
                logger.warning("events are no longer replayable; skipping them", metadata: [
                    "consumer": "\(name)", "source": "\(service)", "from": "\(after + 1)", "to": "\(first.header.seq - 1)",
                ])
            }
            await apply(response.events, state: &state)
            let reached = state.cursor(service, streamInstance)
            if response.events.isEmpty || reached >= response.lastSeq || reached < (response.events.last?.header.seq ?? 0) { return }
        }
    }

    /// Applies `events` in order; each wanted one in its own transaction with the cursor, the
    /// unwanted ones just move the cursor. Stops at the first event that cannot be settled.
    private func apply(_ events: [StoredEvent], state: inout ConsumerState) async {
        var skipped: EventHeader?
        for event in events {
            guard let apply = routes.route(topic: event.topic, source: event.header.source) else {
                skipped = event.header
                continue
            }
            guard await settle(event, apply) else { return }
            state.set(event.header)
            skipped = nil
        }
        guard let skipped else { return }
        do {
            try await database.pool.write { db in try Self.storeCursor(db, skipped) }
            state.set(skipped)
        } catch {
            logger.error("cannot advance event cursor", metadata: ["consumer": "\(name)", "error": "\(error)"])
        }
    }

    /// Runs the handler and stores the cursor in one transaction (three tries); an event that
    /// keeps failing is parked in `bus_dead_letter`. Returns whether the cursor moved past it.
    private func settle(_ stored: StoredEvent, _ apply: EventRoutes.Apply) async -> Bool {
        let parent = TraceParent.valid(stored.header.meta[TraceParent.key])
        guard Spans.isEnabled else { return await settle(stored, apply, traceparent: parent).settled }
        let span = Spans.start("process \(stored.topic)", kind: .consumer, parent: parent)
        span.attributes["messaging.system"] = "studybus"
        span.attributes["messaging.operation.type"] = "process"
        span.attributes["messaging.destination.name"] = stored.topic
        span.attributes["messaging.message.id"] = stored.header.id
        span.attributes["messaging.consumer.group.name"] = name
        span.attributes["studybus.event.source"] = stored.header.source
        span.attributes["studybus.event.seq"] = stored.header.seq
        let outcome = await InstrumentationContext.$current.withValue(span.context) {
            await settle(stored, apply, traceparent: Spans.traceparent(of: span) ?? parent)
        }
        span.attributes["studybus.event.attempts"] = outcome.attempts
        if !outcome.applied {
            span.setStatus(SpanStatus(code: .error, message: outcome.settled ? "parked in bus_dead_letter" : "not settled; retried on the next catch-up"))
        }
        span.end()
        return outcome.settled
    }

    /// ``settle(_:_:)`` with the `traceparent` the handler's writes carry; says whether the
    /// handler applied the event, in how many attempts, and whether the cursor moved past it.
    private func settle(_ stored: StoredEvent, _ apply: EventRoutes.Apply, traceparent: String?) async -> (settled: Bool, applied: Bool, attempts: Int) {
        let event = BusEvent(topic: stored.topic, header: stored.header, payload: stored.payload.jsonData, gap: nil)
        var lastError: (any Error)?
        for attempt in 1...3 {
            do {
                // What the handler writes (events in its outbox) continues the event's trace.
                try await TraceParent.$current.withValue(traceparent) {
                    try await database.pool.write { db in
                        try apply(event, db)
                        try Self.storeCursor(db, stored.header)
                    }
                }
                afterCommit?()
                return (true, true, attempt)
            } catch {
                lastError = error
                logger.warning("event handler failed", metadata: [
                    "consumer": "\(name)", "topic": "\(stored.topic)", "seq": "\(stored.header.seq)", "attempt": "\(attempt)", "error": "\(error)",
                ])
            }
        }
        do {
            try await database.pool.write { [lastError] db in
                try db.execute(sql: """
                    INSERT OR REPLACE INTO bus_dead_letter (source, instance, seq, topic, event_id, payload, error, at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [stored.header.source, stored.header.instance, stored.header.seq, stored.topic, stored.header.id,
                                     stored.payload.jsonText, "\(lastError.map { "\($0)" } ?? "unknown")", Date().unixMilliseconds])
                try Self.storeCursor(db, stored.header)
            }
            logger.error("event parked in bus_dead_letter after 3 failures", metadata: [
                "consumer": "\(name)", "topic": "\(stored.topic)", "seq": "\(stored.header.seq)", "event": "\(stored.header.id)",
            ])
            return (true, false, 3)
        } catch {
            logger.error("cannot park a failing event; will retry on the next catch-up", metadata: ["consumer": "\(name)", "error": "\(error)"])
            return (false, false, 3)
        }
    }

    private static func storeCursor(_ db: Database, _ header: EventHeader) throws {
        try db.execute(sql: """
            INSERT INTO bus_cursor (source, instance, seq, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (source, instance) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at
            """, arguments: [header.source, header.instance, header.seq, Date().unixMilliseconds])
    }
}
