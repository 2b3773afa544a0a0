import Foundation
import Logging
import Wire
import ZMQ

/// An event as received: the three frames, not yet parsed.
struct RawEvent: Sendable {
    var topic: String
    var header: Data
    var payload: Data

    /// What the event holds in memory, as buffers count it.
    var byteCount: Int { topic.utf8.count + header.count + payload.count }
}

/// One subscription's SUB socket on the I/O thread. With a broker pair it is connected to
/// every broker's XPUB and lets each event through once (``DuplicateEvents``).
final class SubscriberEndpoint: LoopEndpoint {
    private let buffer: SubscriptionBuffer
    private let logger: Logger
    /// Changed for every event. Exclusivity checks off, as for the loop's own state (see IOLoop):
    /// only the I/O thread touches it, and no access spans another.
    @exclusivity(unchecked) private var state: State
    /// One message part reused for every receive; its bytes are copied out.
    private let frame = ZMQFrame(Data())

    private struct State {
        /// The SUB socket; nil once closed.
        var socket: ZMQSocket?
        /// The events of one read pass, handed to the buffer together; reused across passes.
        var batch: [RawEvent] = []
        /// What came through the brokers so far, when there are several.
        var duplicates: DuplicateEvents?
    }

    /// - Parameter buffer: where the events go; finished when the endpoint closes (removed, or
    ///   the bus shut down).
    init(prefixes: [String], loop: IOLoop, buffer: SubscriptionBuffer) throws(ZMQError) {
        self.buffer = buffer
        logger = loop.logger
        let brokers = loop.configuration.subEndpoints
        let socket = try loop.makeSocket(.sub, connectTo: brokers)
        do {
            for prefix in prefixes { try socket.subscribe(prefix) }
        } catch {
            socket.close()
            throw error
        }
        state = State(socket: socket, duplicates: brokers.count > 1 ? DuplicateEvents() : nil)
        state.batch.reserveCapacity(IOLoop.readBatch)
    }

    var socket: ZMQSocket? { state.socket }

    func readable(_ loop: IOLoop) {
        guard let socket = state.socket else { return }
        defer { buffer.deliver(&state.batch) }
        do {
            for _ in 0..<IOLoop.readBatch {
                guard try socket.receive(into: frame, flags: ZMQSocket.dontWait) else { return }
                guard let event = try readEvent(from: socket) else { continue }
                // A header that does not decode is not deduplicated: its reader reports it.
                if state.duplicates != nil, let header = try? EventHeader.decode(event.header), state.duplicates!.isDuplicate(header) { continue }
                state.batch.append(event)
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
        state.socket?.close()
        state.socket = nil
        buffer.finish()
    }
}
