import Foundation
import Logging
import Wire
import ZMQ

/// The process's event publisher on the I/O thread.
///
/// It is an XPUB rather than a PUB (wire-compatible for the broker's XSUB) so that it can see
/// the broker's subscription arrive: events published before that are held, not dropped, which
/// removes ZeroMQ's "slow joiner" loss for events sent right after start-up. With a broker pair
/// it connects to every broker's XSUB, and so sends every event to each; events are held only
/// until the first broker subscribes.
final class PublisherEndpoint: LoopEndpoint {
    private let queue: PublishQueue
    private let logger: Logger
    /// Changed for every batch of events. Exclusivity checks off, as for the loop's own state
    /// (see IOLoop): only the I/O thread touches it, and no access spans another.
    @exclusivity(unchecked) private var state: PublisherState

    init(loop: IOLoop, queue: PublishQueue) {
        self.queue = queue
        logger = loop.logger
        var socket: ZMQSocket?
        do {
            socket = try loop.makeSocket(.xpub, connectTo: loop.configuration.pubEndpoints)
        } catch {
            logger.error("cannot connect the event publisher", metadata: ["endpoint": "\(loop.configuration.pubEndpoint)", "error": "\(error)"])
        }
        state = PublisherState(socket: socket, holdLimit: Int(loop.configuration.highWaterMark))
    }

    var socket: ZMQSocket? { state.socket }

    /// Sends everything published since the last drain, in order.
    func sendQueued() {
        queue.take(into: &state.taken)
        if let socket = state.sendOrHoldTaken() {
            for event in state.taken { send(event, on: socket) }
        }
        state.taken.removeAll(keepingCapacity: true)
    }

    private func send(_ event: RawEvent, on socket: ZMQSocket) {
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
        guard let socket = state.socket else { return }
        while let message = try? socket.receive(dontWait: true) {
            // A subscription message is one frame: 0x01 (subscribe) or 0x00, then the prefix.
            guard message.first?.first == 1, let (held, dropped) = state.brokerSubscribed() else { continue }
            for event in held { send(event, on: socket) }
            if dropped > 0 {
                logger.warning("dropped events published before the broker connected", metadata: ["dropped": "\(dropped)"])
            }
        }
    }

    var nextDeadline: ContinuousClock.Instant? { nil }
    func timerFired(now: ContinuousClock.Instant, loop: IOLoop) {}

    func close(loop: IOLoop) {
        if let socket = state.close() { loop.closeFlushing(socket) }
    }
}

/// The publisher's states and their transitions, without the I/O: each transition returns what
/// the endpoint must do next.
struct PublisherState {
    enum Subscription {
        /// The broker has not subscribed yet: events wait in `held`, up to the high-water mark;
        /// newer ones are dropped, as a PUB socket would drop them, and counted. Subscribers see
        /// the gap in `seq`.
        case awaitingBroker(held: [RawEvent], dropped: Int)
        /// The broker has subscribed: events go straight out.
        case subscribed
    }

    /// The XPUB socket; nil if it could not be made, and once closed.
    private(set) var socket: ZMQSocket?
    private var subscription = Subscription.awaitingBroker(held: [], dropped: 0)
    private let holdLimit: Int
    /// What one drain took from the publish queue; its storage is reused.
    var taken: [RawEvent] = []

    init(socket: ZMQSocket?, holdLimit: Int) {
        self.socket = socket
        self.holdLimit = holdLimit
    }

    /// Returns the socket to send ``taken`` on now, or nil when the events are held (or, without
    /// a socket, dropped).
    mutating func sendOrHoldTaken() -> ZMQSocket? {
        switch subscription {
        case .subscribed:
            return socket
        case .awaitingBroker(var held, var dropped):
            // Out of the enum while it grows, so that appending does not copy the array.
            subscription = .subscribed
            let room = max(0, holdLimit - held.count)
            held.append(contentsOf: taken.prefix(room))
            dropped += max(0, taken.count - room)
            subscription = .awaitingBroker(held: held, dropped: dropped)
            return nil
        }
    }

    /// The broker subscribed. The first time, returns the events held until then, to be sent in
    /// order, and how many were dropped.
    mutating func brokerSubscribed() -> (held: [RawEvent], dropped: Int)? {
        guard case .awaitingBroker(let held, let dropped) = subscription else { return nil }
        subscription = .subscribed
        return (held, dropped)
    }

    /// Closes for good; returns the socket to close.
    mutating func close() -> ZMQSocket? {
        defer { socket = nil }
        return socket
    }
}
