import Foundation
import Logging

/// A missed stretch of one publisher's stream: `seq` jumped from `expected` to `received`.
public struct SeqGap: Sendable, Equatable, CustomStringConvertible {
    public var source: String
    public var instance: String
    public var expected: Int64
    public var received: Int64
    /// How many events were missed.
    public var missed: Int64 { received - expected }

    public init(source: String, instance: String, expected: Int64, received: Int64) {
        self.source = source
        self.instance = instance
        self.expected = expected
        self.received = received
    }

    public var description: String {
        "missed \(missed) event(s) from \(source) \(instance): expected seq \(expected), got \(received)"
    }
}

/// Tracks the last `seq` of every `source`+`instance` stream and reports jumps.
public struct SeqTracker: Sendable {
    private var last: [String: Int64] = [:]
    /// The stream of the previous event, kept out of the dictionary: consecutive events mostly
    /// come from one stream, and this saves building a key and two lookups per event.
    private var current: (source: String, instance: String, seq: Int64)?

    public init() {}

    /// Records `header`; returns the gap before it, if events were missed. The first event of a
    /// stream, and a `seq` that goes back (a replay or a restarted stream), are not gaps.
    public mutating func observe(_ header: EventHeader) -> SeqGap? {
        let previous: Int64?
        if let current, current.source == header.source, current.instance == header.instance {
            previous = current.seq
        } else {
            if let current { last[Self.key(current.source, current.instance)] = current.seq }
            previous = last[Self.key(header.source, header.instance)]
        }
        current = (header.source, header.instance, header.seq)
        guard let previous, header.seq > previous + 1 else { return nil }
        return SeqGap(source: header.source, instance: header.instance, expected: previous + 1, received: header.seq)
    }

    private static func key(_ source: String, _ instance: String) -> String {
        source + "\u{0}" + instance
    }
}

/// One received event.
public struct BusEvent: Sendable {
    public var topic: String
    public var header: EventHeader
    /// The payload JSON.
    public var payload: Data
    /// Events of this event's stream that were missed just before it, if any.
    public var gap: SeqGap?

    public init(topic: String, header: EventHeader, payload: Data, gap: SeqGap? = nil) {
        self.topic = topic
        self.header = header
        self.payload = payload
        self.gap = gap
    }

    /// Decodes the payload as `topic`'s payload type.
    public func decode<Payload>(_ topic: Topic<Payload>) throws -> Payload {
        try WireCoding.decode(Payload.self, from: payload)
    }
}

/// Events matching a subscription's prefixes, in arrival order, with `seq` gaps reported.
///
/// The subscription ends when the task iterating it is cancelled, or when it and its iterators
/// are gone; iterating ends when the bus shuts down.
public struct EventSubscription: AsyncSequence, Sendable {
    public typealias Element = BusEvent
    let lifetime: SubscriptionLifetime
    let logger: Logger

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(batch: RawEventBatch(lifetime: lifetime), logger: logger)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let batch: RawEventBatch
        var tracker = SeqTracker()
        let logger: Logger

        init(batch: RawEventBatch, logger: Logger) {
            self.batch = batch
            self.logger = logger
        }

        public mutating func next() async -> BusEvent? {
            await next(isolation: nil)
        }

        /// Runs on the caller's actor, like `AsyncStream`'s iterator: no hop to the global
        /// executor and back for every event.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> BusEvent? {
            while let raw = await batch.next() {
                let header: EventHeader
                do {
                    header = try EventHeader.decode(raw.header)
                } catch {
                    logger.warning("skipping event with an invalid header", metadata: ["topic": "\(raw.topic)", "error": "\(error.message)"])
                    continue
                }
                return BusEvent(topic: raw.topic, header: header, payload: raw.payload, gap: tracker.observe(header))
            }
            return nil
        }
    }
}

/// One event with its payload decoded.
public struct TypedEvent<Payload: Sendable>: Sendable {
    public var header: EventHeader
    public var payload: Payload
    public var gap: SeqGap?
}

/// Events of exactly one topic, decoded; events whose payload does not decode are logged and
/// skipped.
public struct TypedSubscription<Payload: Codable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = TypedEvent<Payload>
    let base: EventSubscription
    let topic: Topic<Payload>
    let logger: Logger

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
                    logger.warning("skipping event whose payload does not decode", metadata: [
                        "topic": "\(event.topic)", "error": "\(DecodingFailure.describe(error))",
                    ])
                }
            }
            return nil
        }
    }
}
