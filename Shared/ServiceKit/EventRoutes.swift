import Bus
import Foundation
import GRDB
import Wire

/// What a durable consumer does with each topic it consumes, registered by typed topic. The
/// subscriptions and the producers to catch up from are derived from the registrations, so no
/// list of topics or sources is kept by hand.
///
/// ```swift
/// var routes = EventRoutes()
/// routes.on(Store.flashcardCreated) { card, header, db in try cards.add(card, db) }
/// routes.on(TimerTicker.timerCompleted) { completed, header, db in … }
/// let consumer = DurableConsumer(name: "scheduler", bus: bus, database: database, routes: routes, logger: logger)
/// ```
public struct EventRoutes: Sendable {
    /// Applies one event inside the consumer's write transaction, which also moves its cursor.
    typealias Apply = @Sendable (BusEvent, Database) throws -> Void

    private var routes: [String: (service: String, apply: Apply)] = [:]

    public init() {}

    /// Routes `topic`'s events, from the service whose contract declares it, to `handler`, with
    /// the payload decoded. A payload that does not decode fails like a handler error (retried,
    /// then parked in `bus_dead_letter`).
    public mutating func on<Payload>(
        _ topic: Topic<Payload>, _ handler: @escaping @Sendable (Payload, EventHeader, Database) throws -> Void
    ) {
        precondition(routes[topic.name] == nil, "\(topic.name) is routed twice")
        routes[topic.name] = (topic.service, { event, db in try handler(try event.decode(topic), event.header, db) })
    }

    /// The producers whose streams are consumed, each with the topics wanted from it.
    public var sources: [(service: String, topics: [String])] {
        Dictionary(grouping: routes, by: \.value.service)
            .map { service, entries in (service, entries.map(\.key).sorted()) }
            .sorted { $0.service < $1.service }
    }

    /// Every topic routed, to subscribe to.
    var topics: [String] { routes.keys.sorted() }

    /// The route of an event: its topic is routed, and it came from the topic's producer.
    func route(topic: String, source: String) -> Apply? {
        guard let route = routes[topic], route.service == source else { return nil }
        return route.apply
    }
}
