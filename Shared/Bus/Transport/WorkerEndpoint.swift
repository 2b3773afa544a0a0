import Foundation
import Logging
import Synchronization
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
/// ``WorkerState`` decides what happens; this class does the I/O it asks for.
final class WorkerEndpoint: LoopEndpoint {
    let service: String
    let credit: Int
    /// The broker this connection registers with; a host has one per broker of ``BusConfiguration/rpcEndpoints``.
    let endpoint: String
    /// Hands a request to the service host; returns the reply if it answered at once.
    private let deliver: @Sendable (ArrivingRequest) -> WorkerReply?
    private let logger: Logger
    /// Read and changed for every message. Exclusivity checks off, as for the loop's own state
    /// (see IOLoop): only the I/O thread touches it, and no access spans another.
    @exclusivity(unchecked) private var state: WorkerState
    /// When the endpoint was made, on the loop's clock: the state's times count from here.
    private let origin: ContinuousClock.Instant
    /// The message being read: received into the same parts every time.
    private let message = ZMQMultipart()

    /// Shows other threads whether the broker answers the current connection.
    private let link: WorkerLink

    init(service: String, credit: Int, endpoint: String, link: WorkerLink, loop: IOLoop, deliver: @escaping @Sendable (ArrivingRequest) -> WorkerReply?) {
        self.service = service
        self.credit = credit
        self.endpoint = endpoint
        self.link = link
        self.deliver = deliver
        self.logger = loop.logger
        origin = loop.clock.now
        state = WorkerState(configuration: loop.configuration)
        connect(loop)
    }

    var socket: ZMQSocket? { state.socket }

    /// The time on the loop's clock, as the state counts it.
    private func now(_ loop: IOLoop) -> Duration { loop.clock.now - origin }

    private func connect(_ loop: IOLoop) {
        var socket: ZMQSocket?
        do {
            socket = try loop.makeSocket(.dealer, connectTo: endpoint)
            try socket?.send([MDP.Frames.empty, MDP.Frames.worker, MDP.Command.ready.frame, Data(service.utf8), Data(String(credit).utf8)])
            if let socket { state.connected(socket, now: now(loop)) }
        } catch {
            socket?.close()
            logger.error("cannot connect worker to the broker", metadata: ["service": "\(service)", "broker": "\(endpoint)", "error": "\(error)"])
            state.connectFailed(now: now(loop))
        }
        loop.socketsChanged()
    }

    /// Closes a connection the broker dropped or lost; the timer connects again.
    private func dropConnection(_ socket: ZMQSocket, _ loop: IOLoop) {
        socket.close()
        loop.socketsChanged()
    }

    /// From now on, answers new requests with `UNAVAILABLE` itself instead of delivering them,
    /// while the replies of requests already delivered still go out.
    func startDraining() { state.startDraining() }

    /// Sends the reply to a request delivered earlier, unless the connection it came on is gone.
    func reply(generation: Int, client: Data, _ reply: WorkerReply) {
        guard let socket = state.socket(ofGeneration: generation) else { return }
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
        guard let socket = state.socket else { return }
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
            let (next, rejoined) = state.received(inbound(command), now: now(loop))
            link.update(state.isAnswered)
            if rejoined {
                logger.info("worker reconnected to the broker", metadata: ["service": "\(service)", "broker": "\(endpoint)", "credit": "\(credit)"])
            }
            switch next {
            case .deliver(let generation):
                // Answered at once: the client address goes back in the part it came in.
                if let reply = deliver(ArrivingRequest(message: message, generation: generation)) {
                    send(reply, on: socket) { () throws(ZMQError) in try message.send(3, on: socket, more: true) }
                }
            case .refuse:
                let id = RequestHeader.idOfRefused(bytes: message.bytes(6)) ?? ""
                let reply = WorkerReply.failure(id, .unavailable("service \(service) is shutting down; retry"))
                send(reply, on: socket) { () throws(ZMQError) in try message.send(3, on: socket, more: true) }
            case .close(let dropped):
                logger.warning("broker asked the worker to reconnect", metadata: ["service": "\(service)"])
                dropConnection(dropped, loop)
                return
            case .none:
                break
            }
        }
    }

    /// What the state machine needs to know of a well-formed message from the broker; logs the
    /// commands a worker does not expect.
    private func inbound(_ command: MDP.Command) -> WorkerState.Inbound {
        switch command {
        case .request:
            // [empty, MDPW01, 0x02, client, empty, method, header, payload, attachment?]
            guard message.receivedCount == 8 || message.receivedCount == 9 else {
                logger.warning("dropping a malformed REQUEST", metadata: ["service": "\(service)", "frames": "\(message.receivedCount)"])
                return .other
            }
            return .request
        case .heartbeat:
            return .heartbeat
        case .disconnect:
            return .disconnect
        case .ready, .reply:
            logger.warning("ignoring unexpected command from the broker", metadata: ["service": "\(service)", "command": "\(command)"])
            return .other
        }
    }

    var nextDeadline: ContinuousClock.Instant? { state.nextDeadline.map { origin + $0 } }

    func timerFired(now: ContinuousClock.Instant, loop: IOLoop) {
        defer { link.update(state.isAnswered) }
        switch state.timerFired(now: now - origin) {
        case .connect:
            connect(loop)
        case .sendHeartbeat(let socket):
            _ = try? socket.send([MDP.Frames.empty, MDP.Frames.worker, MDP.Command.heartbeat.frame], dontWait: true)
        case .dropLost(let socket):
            logger.warning("lost the broker (no heartbeat); reconnecting", metadata: [
                "service": "\(service)", "broker": "\(endpoint)", "silentForMs": "\(state.liveness.wholeMilliseconds)",
            ])
            dropConnection(socket, loop)
        case .none:
            break
        }
    }

    func close(loop: IOLoop) {
        defer { link.update(false) }
        guard let socket = state.close() else { return }
        _ = try? socket.send([MDP.Frames.empty, MDP.Frames.worker, MDP.Command.disconnect.frame], dontWait: true)
        loop.closeFlushing(socket)
    }
}

/// The states of a worker's connection to the broker and their transitions, without the I/O:
/// each transition returns what the endpoint must do next.
///
/// Times are durations on the I/O loop's clock since the endpoint was made. A
/// `ContinuousClock.Instant` is resilient: in the enum it would turn every read and write of the
/// state, once per message, into runtime calls.
struct WorkerState {
    enum Connection {
        /// No connection: the next attempt is due at `retryAt`.
        case disconnected(retryAt: Duration)
        /// READY went out on the link's socket.
        case connected(Link)
        /// Closed for good (the bus shut down or the host stopped serving).
        case closed
    }

    /// One connection to the broker.
    struct Link {
        let socket: ZMQSocket
        /// Numbers the connections, from 1; a reply goes out only on the connection its request
        /// came on, because a broker that lost a connection has forgotten its requests.
        let generation: Int
        /// When the next heartbeat goes to the broker.
        var heartbeatAt: Duration
        /// When the broker counts as lost, unless it sends something first.
        var expiresAt: Duration
        /// Whether the broker has sent a request or a heartbeat on this connection. Only that
        /// starts the back-off over: libzmq connects lazily, so a connection made says nothing
        /// of the broker.
        var answered = false
    }

    /// Whether requests are handed to the host, or refused while it drains. Kept across
    /// reconnections.
    enum Intake {
        case delivering
        case refusing
    }

    /// A well-formed message from the broker, as far as the state machine cares.
    enum Inbound {
        case request
        case heartbeat
        case disconnect
        /// A malformed request or an unexpected command: it only shows the broker is alive.
        case other
    }

    /// What to do with a message from the broker.
    enum InboundAction {
        /// Hand the request to the host; its reply goes out on connection `generation`.
        case deliver(generation: Int)
        /// Answer the request `UNAVAILABLE`: the host is draining.
        case refuse
        /// The broker asked the worker to reconnect: close `socket`; the timer connects again.
        case close(ZMQSocket)
        case none
    }

    /// What to do when ``nextDeadline`` has come.
    enum TimerAction {
        /// Make a new connection: the back-off has passed.
        case connect
        /// Send a heartbeat on `socket`.
        case sendHeartbeat(ZMQSocket)
        /// The broker has been silent too long: close `socket`; the timer connects again.
        case dropLost(ZMQSocket)
        case none
    }

    private var connection: Connection
    private var intake = Intake.delivering
    /// The generation of the last connection made.
    private var generation = 0
    /// How long to wait before connecting again, doubled after every attempt up to the maximum.
    private var backoff: Duration
    private let initialBackoff: Duration
    private let maximumBackoff: Duration
    private let heartbeatInterval: Duration
    /// How long the broker may be silent before it counts as lost.
    let liveness: Duration

    /// A worker about to make its first connection.
    init(configuration: BusConfiguration) {
        connection = .disconnected(retryAt: .zero)
        initialBackoff = configuration.reconnectInitialDelay
        maximumBackoff = configuration.reconnectMaximumDelay
        backoff = initialBackoff
        heartbeatInterval = configuration.heartbeatInterval
        liveness = configuration.heartbeatInterval * configuration.heartbeatLiveness
    }

    /// The socket to poll, while connected.
    var socket: ZMQSocket? {
        guard case .connected(let link) = connection else { return nil }
        return link.socket
    }

    /// The socket to reply on to a request of connection `generation`; nil once that connection
    /// is gone.
    func socket(ofGeneration generation: Int) -> ZMQSocket? {
        guard case .connected(let link) = connection, link.generation == generation else { return nil }
        return link.socket
    }

    /// Whether the broker has answered the current connection (and not been lost since).
    var isAnswered: Bool {
        guard case .connected(let link) = connection else { return false }
        return link.answered
    }

    var nextDeadline: Duration? {
        switch connection {
        case .disconnected(let retryAt): retryAt
        case .connected(let link): min(link.heartbeatAt, link.expiresAt)
        case .closed: nil
        }
    }

    /// READY went out on a new connection.
    mutating func connected(_ socket: ZMQSocket, now: Duration) {
        generation += 1
        connection = .connected(Link(socket: socket, generation: generation, heartbeatAt: now + heartbeatInterval, expiresAt: now + liveness))
    }

    /// No connection could be made: the next attempt waits for the back-off.
    mutating func connectFailed(now: Duration) {
        connection = .disconnected(retryAt: nextAttempt(now: now))
    }

    /// When to try to connect again; the attempt after that waits twice as long.
    private mutating func nextAttempt(now: Duration) -> Duration {
        defer { backoff = min(backoff * 2, maximumBackoff) }
        return now + backoff
    }

    mutating func startDraining() { intake = .refusing }

    /// A well-formed message arrived from the broker. `rejoined` is true for the first request or
    /// heartbeat on a connection that replaced a lost one.
    mutating func received(_ inbound: Inbound, now: Duration) -> (next: InboundAction, rejoined: Bool) {
        guard case .connected(var link) = connection else { return (.none, false) }
        link.expiresAt = now + liveness
        var rejoined = false
        if inbound == .request || inbound == .heartbeat, !link.answered {
            link.answered = true
            backoff = initialBackoff
            rejoined = link.generation > 1
        }
        switch inbound {
        case .request:
            connection = .connected(link)
            switch intake {
            case .delivering: return (.deliver(generation: link.generation), rejoined)
            case .refusing: return (.refuse, rejoined)
            }
        case .heartbeat, .other:
            connection = .connected(link)
            return (.none, rejoined)
        case .disconnect:
            connection = .disconnected(retryAt: nextAttempt(now: now))
            return (.close(link.socket), false)
        }
    }

    mutating func timerFired(now: Duration) -> TimerAction {
        switch connection {
        case .disconnected(let retryAt):
            return retryAt <= now ? .connect : .none
        case .connected(var link):
            if now >= link.expiresAt {
                connection = .disconnected(retryAt: nextAttempt(now: now))
                return .dropLost(link.socket)
            }
            guard now >= link.heartbeatAt else { return .none }
            link.heartbeatAt = now + heartbeatInterval
            connection = .connected(link)
            return .sendHeartbeat(link.socket)
        case .closed:
            return .none
        }
    }

    /// Closes for good; returns the socket to say DISCONNECT on, if connected.
    mutating func close() -> ZMQSocket? {
        defer { connection = .closed }
        return socket
    }
}

/// Whether a worker's connection is answered by the broker, written by the I/O thread and read
/// by anyone (a readiness check).
final class WorkerLink: Sendable {
    private let answered = Atomic<Bool>(false)

    var isAnswered: Bool { answered.load(ordering: .relaxed) }

    func update(_ isAnswered: Bool) {
        if answered.load(ordering: .relaxed) != isAnswered { answered.store(isAnswered, ordering: .relaxed) }
    }
}
