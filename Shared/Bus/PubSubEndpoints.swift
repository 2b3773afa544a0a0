import Foundation
import Logging
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

/// An event as received: the three frames, not yet parsed.
struct RawEvent: Sendable {
    var topic: String
    var header: Data
    var payload: Data
}

/// One subscription's SUB socket on the I/O thread.
final class SubscriberEndpoint: LoopEndpoint {
    // Exclusivity checks off, as for the loop's own state (see IOLoop.endpoints).
    @exclusivity(unchecked) private(set) var socket: ZMQSocket?
    private let buffer: SubscriptionBuffer
    private let logger: Logger
    /// The events of one read pass, handed to the buffer together; reused across passes.
    @exclusivity(unchecked) private var batch: [RawEvent] = []
    /// One message part reused for every receive; its bytes are copied out.
    private let frame = ZMQFrame(Data())

    /// - Parameter buffer: where the events go; finished when the endpoint closes (removed, or
    ///   the bus shut down).
    init(prefixes: [String], loop: IOLoop, buffer: SubscriptionBuffer) throws(ZMQError) {
        self.buffer = buffer
        logger = loop.logger
        let socket = try loop.makeSocket(.sub, connectTo: loop.configuration.subEndpoint)
        do {
            for prefix in prefixes { try socket.subscribe(prefix) }
        } catch {
            socket.close()
            throw error
        }
        self.socket = socket
        batch.reserveCapacity(IOLoop.readBatch)
    }

    func readable(_ loop: IOLoop) {
        guard let socket else { return }
        defer { buffer.deliver(&batch) }
        do {
            for _ in 0..<IOLoop.readBatch {
                guard try socket.receive(into: frame, flags: ZMQSocket.dontWait) else { return }
                if let event = try readEvent(from: socket) { batch.append(event) }
            }
        } catch {
            logger.warning("subscriber receive failed", metadata: ["error": "\(error)"])
        }
    }

    /// Reads the rest of the message whose first part is in `frame`. Returns `nil` (logged) for
    /// a message that is not three frames.
    private func readEvent(from socket: ZMQSocket) throws(ZMQError) -> RawEvent? {
        var parts = 1
        let topic = frame.string
        var header = Data(), payload = Data()
        while socket.frameHasMore(frame) {
            _ = try socket.receive(into: frame, flags: 0)
            parts += 1
            if parts == 2 { header = frame.data } else if parts == 3 { payload = frame.data }
        }
        guard parts == 3 else {
            logger.warning("dropping an event that is not three frames", metadata: ["frames": "\(parts)"])
            return nil
        }
        return RawEvent(topic: topic, header: header, payload: payload)
    }

    var nextDeadline: ContinuousClock.Instant? { nil }
    func timerFired(now: ContinuousClock.Instant, loop: IOLoop) {}

    func close(loop: IOLoop) {
        socket?.close()
        socket = nil
        buffer.finish()
    }
}

