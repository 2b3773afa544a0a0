import Foundation
import Logging
import Wire

/// One event with its payload decoded.
public struct TypedEvent<Payload: Sendable>: Sendable {
    public var header: EventHeader
    public var payload: Payload
    public var gap: SeqGap?
}

/// Events of exactly one topic, decoded; events whose payload does not decode (a date outside
/// years 0001–9999 among them) are dropped and counted with the invalid headers, in
/// ``invalidEventsDropped``.
public struct TypedSubscription<Payload: Codable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = TypedEvent<Payload>
    let base: EventSubscription
    let topic: Topic<Payload>
    let logger: Logger

    /// How many events this subscription dropped because their header or payload was invalid.
    public var invalidEventsDropped: Int { base.invalidEventsDropped }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), topic: topic, logger: logger)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: EventSubscription.AsyncIterator
        let topic: Topic<Payload>
        let logger: Logger

        public mutating func next() async -> TypedEvent<Payload>? {
            await next(isolation: nil)
        }

        /// Runs on the caller's actor (see ``EventSubscription/AsyncIterator``).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> TypedEvent<Payload>? {
            while let event = await base.next(isolation: actor) {
                guard event.topic == topic.name else { continue }
                do {
                    return TypedEvent(header: event.header, payload: try event.decode(topic), gap: event.gap)
                } catch {
                    base.dropped.add(logger, "dropped an event whose payload does not decode", topic: event.topic, error: DecodingFailure.describe(error))
                }
            }
            return nil
        }
    }
}
