import Foundation
import Logging
import Wire
import ZMQ

/// The process's event publisher on the I/O thread.
///
/// It is an XPUB rather than a PUB (wire-compatible for the broker's XSUB) so that it can see
/// the broker's subscription arrive: events published before that are held, not dropped, which
/// removes ZeroMQ's "slow joiner" loss for events sent right after start-up.
final class PublisherEndpoint: LoopEndpoint {
    // Exclusivity checks off, as for the loop's own state (see IOLoop.endpoints).
    @exclusivity(unchecked) private(set) var socket: ZMQSocket?
    private let queue: PublishQueue
    /// What one drain took from the queue; reused.
    @exclusivity(unchecked) private var taken: [RawEvent] = []
    @exclusivity(unchecked) private var brokerSubscribed = false
    private var held: [RawEvent] = []
    private var heldDropped = 0
    private let holdLimit: Int
    private let logger: Logger

    init(loop: IOLoop, queue: PublishQueue) {
        self.queue = queue
        holdLimit = Int(loop.configuration.highWaterMark)
        logger = loop.logger
        do {
            socket = try loop.makeSocket(.xpub, connectTo: loop.configuration.pubEndpoint)
        } catch {
            logger.error("cannot connect the event publisher", metadata: ["endpoint": "\(loop.configuration.pubEndpoint)", "error": "\(error)"])
        }
    }

    /// Sends everything published since the last drain, in order.
    func sendQueued() {
        queue.take(into: &taken)
        for event in taken { send(event) }
        taken.removeAll(keepingCapacity: true)
    }

    private func send(_ event: RawEvent) {
        guard brokerSubscribed else {
            // Beyond the high-water mark, newer events are dropped, as a PUB socket would; the
            // subscribers see the gap in seq.
            if held.count < holdLimit { held.append(event) } else { heldDropped += 1 }
            return
        }
        guard let socket else { return }
        do {
            // An XPUB never blocks: beyond its high-water mark it drops, as a PUB does.
            try socket.send(event.topic, more: true, dontWait: true)
            try socket.send(event.header, more: true)
            try socket.send(event.payload, more: false)
        } catch {
            logger.warning("cannot publish event", metadata: ["error": "\(error)"])
        }
    }

    func readable(_ loop: IOLoop) {
        guard let socket else { return }
        while let message = try? socket.receive(dontWait: true) {
            // A subscription message is one frame: 0x01 (subscribe) or 0x00, then the prefix.
            if let first = message.first?.first, first == 1, !brokerSubscribed {
                brokerSubscribed = true
                let waiting = held
                held.removeAll()
                for event in waiting { send(event) }
                if heldDropped > 0 {
                    logger.warning("dropped events published before the broker connected", metadata: ["dropped": "\(heldDropped)"])
                }
            }
        }
    }

    var nextDeadline: ContinuousClock.Instant? { nil }
    func timerFired(now: ContinuousClock.Instant, loop: IOLoop) {}

    func close(loop: IOLoop) {
        if let socket { loop.closeFlushing(socket) }
        socket = nil
    }
}
