import Foundation
import Logging
import Wire

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
