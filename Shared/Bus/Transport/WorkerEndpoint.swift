import Foundation
import Logging
import Wire
import ZMQ

/// A request the broker handed to this worker, read in place from the message that brought it,
/// `[empty, MDPW01, REQUEST, client, empty, method, header, payload, attachment?]`: valid only
/// during the call it is passed to. What must outlive that call is copied out.
struct ArrivingRequest {
    fileprivate let message: ZMQMultipart
    /// Which connection it came on; replies to an older connection are dropped, because the
    /// broker that sent it has forgotten it.
    let generation: Int

    var client: Data { message.data(3) }
    var method: String { message.string(5) }
    var header: UnsafeRawBufferPointer { message.bytes(6) }
    var payload: UnsafeRawBufferPointer { message.bytes(7) }
    var attachment: Data? { message.count > 8 ? message.data(8) : nil }
}

/// A worker's reply: its header and, when OK, the payload and attachment.
struct WorkerReply: Sendable {
    var header: ReplyHeader
    var payload: [UInt8] = []
    var attachment: Data?

    static func failure(_ id: String, _ error: BusError) -> WorkerReply { WorkerReply(header: ReplyHeader(id: id, error: error)) }
}

/// A service's worker connection to the broker (the 7/MDP worker side) on the I/O thread:
/// READY with credit, heartbeats both ways, and reconnect with back-off when the broker is lost.
final class WorkerEndpoint: LoopEndpoint {
    let service: String
    let credit: Int
    /// Hands a request to the service host; returns the reply if it answered at once.
    private let deliver: @Sendable (ArrivingRequest) -> WorkerReply?
    private let logger: Logger
    // Exclusivity checks off, as for the loop's own state (see IOLoop.endpoints).
    @exclusivity(unchecked) private(set) var socket: ZMQSocket?
    @exclusivity(unchecked) private var generation = 0
    @exclusivity(unchecked) private var heartbeatAt: ContinuousClock.Instant
    @exclusivity(unchecked) private var expiresAt: ContinuousClock.Instant
    @exclusivity(unchecked) private var reconnectAt: ContinuousClock.Instant?
    private var backoff: Duration
    @exclusivity(unchecked) private var heardSinceConnect = false
    @exclusivity(unchecked) private var draining = false
    /// The message being read: received into the same parts every time.
    private let message = ZMQMultipart()

    init(service: String, credit: Int, loop: IOLoop, deliver: @escaping @Sendable (ArrivingRequest) -> WorkerReply?) {
        self.service = service
        self.credit = credit
        self.deliver = deliver
        self.logger = loop.logger
        backoff = loop.configuration.reconnectInitialDelay
        heartbeatAt = loop.clock.now
        expiresAt = loop.clock.now
        connect(loop)
    }

    private var liveness: Duration {
        configurationHeartbeat * configurationLiveness
    }
    @exclusivity(unchecked) private var configurationHeartbeat: Duration = .milliseconds(MDP.defaultHeartbeatIntervalMs)
    @exclusivity(unchecked) private var configurationLiveness = MDP.defaultHeartbeatLiveness

    private func connect(_ loop: IOLoop) {
        configurationHeartbeat = loop.configuration.heartbeatInterval
        configurationLiveness = loop.configuration.heartbeatLiveness
        reconnectAt = nil
        do {
            let socket = try loop.makeSocket(.dealer, connectTo: loop.configuration.rpcEndpoint)
            try socket.send([MDP.Frames.empty, MDP.Frames.worker, MDP.Command.ready.frame, Data(service.utf8), Data(String(credit).utf8)])
            self.socket = socket
            generation += 1
            heardSinceConnect = false
            heartbeatAt = loop.clock.now + configurationHeartbeat
            expiresAt = loop.clock.now + liveness
        } catch {
            logger.error("cannot connect worker to the broker", metadata: ["service": "\(service)", "error": "\(error)"])
            scheduleReconnect(loop)
        }
        loop.socketsChanged()
    }

    private func dropConnection(_ loop: IOLoop) {
        socket?.close()
        socket = nil
        loop.socketsChanged()
    }

    private func scheduleReconnect(_ loop: IOLoop) {
        reconnectAt = loop.clock.now + backoff
        backoff = min(backoff * 2, loop.configuration.reconnectMaximumDelay)
    }

    /// From now on, answers new requests with `UNAVAILABLE` itself instead of delivering them,
    /// while the replies of requests already delivered still go out.
    func startDraining() { draining = true }

    /// Sends the reply to a request delivered earlier, unless the connection it came on is gone.
    func reply(generation: Int, client: Data, _ reply: WorkerReply) {
        guard generation == self.generation, let socket else { return }
        send(reply, on: socket) { () throws(ZMQError) in try socket.send(client, more: true) }
    }

    /// Sends `[empty, MDPW01, REPLY, client, empty, header, payload, attachment?]`, the client
    /// address part sent by `sendClient`.
    private func send(_ reply: WorkerReply, on socket: ZMQSocket, client sendClient: () throws(ZMQError) -> Void) {
        do {
            try socket.send(MDP.Frames.empty, more: true)
            try socket.send(MDP.Frames.worker, more: true)
            try socket.send(MDP.Command.reply.frame, more: true)
            try sendClient()
            try socket.send(MDP.Frames.empty, more: true)
            try socket.send(reply.header.encodedBytes, more: true)
            try socket.send(reply.payload, more: reply.attachment != nil)
            if let attachment = reply.attachment { try socket.send(attachment, more: false) }
        } catch {
            logger.warning("cannot send reply to the broker", metadata: ["service": "\(service)", "error": "\(error)"])
        }
    }

    func readable(_ loop: IOLoop) {
        guard let socket else { return }
        for _ in 0..<IOLoop.readBatch {
            do {
                guard try message.receive(from: socket, dontWait: true) else { return }
            } catch {
                logger.warning("worker receive failed", metadata: ["service": "\(service)", "error": "\(error)"])
                return
            }
            guard message.count >= 3, message.size(0) == 0, message.equals(1, MDP.worker),
                  message.size(2) == 1, let command = MDP.Command(rawValue: message.bytes(2)[0])
            else {
                logger.warning("dropping a malformed message from the broker", metadata: ["service": "\(service)"])
                continue
            }
            expiresAt = loop.clock.now + liveness
            switch command {
            case .request:
                // [empty, MDPW01, 0x02, client, empty, method, header, payload, attachment?]
                guard message.receivedCount == 8 || message.receivedCount == 9 else {
                    logger.warning("dropping a malformed REQUEST", metadata: ["service": "\(service)", "frames": "\(message.receivedCount)"])
                    continue
                }
                markHealthy(loop)
                let reply: WorkerReply?
                if draining {
                    let id = (try? RequestHeader.decode(bytes: message.bytes(6)).id) ?? ""
                    reply = .failure(id, .unavailable("service \(service) is shutting down; retry"))
                } else {
                    reply = deliver(ArrivingRequest(message: message, generation: generation))
                }
                // Answered at once: the client address goes back in the part it came in.
                if let reply { send(reply, on: socket) { () throws(ZMQError) in try message.send(3, on: socket, more: true) } }
            case .heartbeat:
                markHealthy(loop)
            case .disconnect:
                logger.warning("broker asked the worker to reconnect", metadata: ["service": "\(service)"])
                dropConnection(loop)
                scheduleReconnect(loop)
                return
            case .ready, .reply:
                logger.warning("ignoring unexpected command from the broker", metadata: ["service": "\(service)", "command": "\(command)"])
            }
        }
    }

    private func markHealthy(_ loop: IOLoop) {
        guard !heardSinceConnect else { return }
        heardSinceConnect = true
        backoff = loop.configuration.reconnectInitialDelay
        if generation > 1 {
            logger.info("worker reconnected to the broker", metadata: ["service": "\(service)", "credit": "\(credit)"])
        }
    }

    var nextDeadline: ContinuousClock.Instant? {
        if let reconnectAt { return reconnectAt }
        return min(heartbeatAt, expiresAt)
    }

    func timerFired(now: ContinuousClock.Instant, loop: IOLoop) {
        if let reconnectAt {
            if reconnectAt <= now { connect(loop) }
            return
        }
        if now >= expiresAt {
            logger.warning("lost the broker (no heartbeat); reconnecting", metadata: [
                "service": "\(service)", "silentForMs": "\(liveness.wholeMilliseconds)",
            ])
            dropConnection(loop)
            scheduleReconnect(loop)
            return
        }
        if now >= heartbeatAt, let socket {
            _ = try? socket.send([MDP.Frames.empty, MDP.Frames.worker, MDP.Command.heartbeat.frame], dontWait: true)
            heartbeatAt = now + configurationHeartbeat
        }
    }

    func close(loop: IOLoop) {
        if let socket {
            _ = try? socket.send([MDP.Frames.empty, MDP.Frames.worker, MDP.Command.disconnect.frame], dontWait: true)
            loop.closeFlushing(socket)
        }
        socket = nil
    }
}
