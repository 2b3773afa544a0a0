import Foundation
import Logging
import Wire
import ZMQ

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
