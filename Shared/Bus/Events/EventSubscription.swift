import Foundation
import Logging
import Synchronization
import Wire

/// Events matching a subscription's prefixes, in arrival order, with `seq` gaps reported.
///
/// An event whose header does not decode — malformed, or a `seq` or `ts` out of the protocol's
/// range (``WireLimits``) — is dropped and counted (``invalidEventsDropped``), never delivered.
///
/// The subscription ends when the task iterating it is cancelled, or when it and its iterators
/// are gone; iterating ends when the bus shuts down.
public struct EventSubscription: AsyncSequence, Sendable {
    public typealias Element = BusEvent
    let lifetime: SubscriptionLifetime
    let logger: Logger
    let dropped = DroppedEvents()

    /// How many events this subscription dropped because they were invalid.
    public var invalidEventsDropped: Int { dropped.count }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(batch: RawEventBatch(lifetime: lifetime), logger: logger, dropped: dropped)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let batch: RawEventBatch
        var tracker = SeqTracker()
        let logger: Logger
        let dropped: DroppedEvents

        init(batch: RawEventBatch, logger: Logger, dropped: DroppedEvents) {
            self.batch = batch
            self.logger = logger
            self.dropped = dropped
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
                    dropped.add(logger, "dropped an event with an invalid header", topic: raw.topic, error: error.message)
                    continue
                }
                return BusEvent(topic: raw.topic, header: header, payload: raw.payload, gap: tracker.observe(header))
            }
            return nil
        }
    }
}

/// Counts the events a subscription dropped, and logs them without letting a flood of bad
/// events flood the log: the 1st, 2nd, 4th, 8th … each with the count so far.
final class DroppedEvents: Sendable {
    private let dropped = Atomic<Int>(0)

    var count: Int { dropped.load(ordering: .relaxed) }

    func add(_ logger: Logger, _ message: Logger.Message, topic: String, error: String) {
        let count = dropped.add(1, ordering: .relaxed).newValue
        guard count & (count - 1) == 0 else { return }
        // The topic is the sender's: at most 200 bytes of it, as JSON would escape it.
        logger.warning(message, metadata: [
            "topic": "\(JSONValue.string(String(decoding: topic.utf8.prefix(200), as: UTF8.self)).jsonText)",
            "error": "\(error)", "droppedSoFar": "\(count)",
        ])
    }
}
