import Foundation
import Logging
import ZMQ

/// A request the broker handed to this worker, as raw frames.
struct InboundRequest: Sendable {
    /// Which connection it came on; replies to an older connection are dropped, because the
    /// broker that sent it has forgotten it.
    var generation: Int
    var client: Data
    var method: String
    var header: Data
    var payload: Data
    var attachment: Data?
}

/// A service's worker connection to the broker (the 7/MDP worker side) on the I/O thread:
/// READY with credit, heartbeats both ways, and reconnect with back-off when the broker is lost.
final class WorkerEndpoint: LoopEndpoint {
    let service: String
    let credit: Int
    /// Hands a request to the service host; returns the reply frames if it answered at once.
    private let deliver: @Sendable (InboundRequest) -> [Data]?
    private let logger: Logger
    private(set) var socket: ZMQSocket?
    private var generation = 0
    private var heartbeatAt: ContinuousClock.Instant
    private var expiresAt: ContinuousClock.Instant
    private var reconnectAt: ContinuousClock.Instant?
    private var backoff: Duration
    private var heardSinceConnect = false
    private var draining = false

    init(service: String, credit: Int, loop: IOLoop, deliver: @escaping @Sendable (InboundRequest) -> [Data]?) {
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
    private var configurationHeartbeat: Duration = .milliseconds(MDP.defaultHeartbeatIntervalMs)
    private var configurationLiveness = MDP.defaultHeartbeatLiveness

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

    /// The REPLY command for `client`.
    static func replyFrames(client: Data, header: ReplyHeader, payload: Data, attachment: Data?) -> [Data] {
        var frames = [MDP.Frames.empty, MDP.Frames.worker, MDP.Command.reply.frame, client, Data(), header.encoded(), payload]
        if let attachment { frames.append(attachment) }
        return frames
    }

    /// Sends a handler's reply, unless the connection it belongs to is gone.
    func reply(generation: Int, frames: [Data]) {
        guard generation == self.generation, let socket else { return }
        do {
            try socket.send(frames)
        } catch {
            logger.warning("cannot send reply to the broker", metadata: ["service": "\(service)", "error": "\(error)"])
        }
    }

    func readable(_ loop: IOLoop) {
        guard let socket else { return }
        for _ in 0..<IOLoop.readBatch {
            let received: [Data]?
            do {
                received = try socket.receive(dontWait: true)
            } catch {
                logger.warning("worker receive failed", metadata: ["service": "\(service)", "error": "\(error)"])
                return
            }
            guard let frames = received else { return }
            guard frames.count >= 3, frames[0].isEmpty, frames[1] == MDP.Frames.worker,
                  frames[2].count == 1, let command = MDP.Command(rawValue: frames[2][frames[2].startIndex])
            else {
                logger.warning("dropping a malformed message from the broker", metadata: ["service": "\(service)"])
                continue
            }
            expiresAt = loop.clock.now + liveness
            switch command {
            case .request:
                // [empty, MDPW01, 0x02, client, empty, method, header, payload, attachment?]
                guard frames.count == 8 || frames.count == 9 else {
                    logger.warning("dropping a malformed REQUEST", metadata: ["service": "\(service)", "frames": "\(frames.count)"])
                    continue
                }
                markHealthy(loop)
                if draining {
                    let id = (try? RequestHeader.decode(frames[6]).id) ?? ""
                    let refusal = ReplyHeader(id: id, error: .unavailable("service \(service) is shutting down; retry"))
                    reply(generation: generation, frames: Self.replyFrames(client: frames[3], header: refusal, payload: Data(), attachment: nil))
                    continue
                }
                let answer = deliver(InboundRequest(
                    generation: generation, client: frames[3], method: String(decoding: frames[5], as: UTF8.self),
                    header: frames[6], payload: frames[7], attachment: frames.count == 9 ? frames[8] : nil))
                if let answer { reply(generation: generation, frames: answer) }
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
