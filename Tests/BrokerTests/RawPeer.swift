import Bus
import Foundation
import TestSupport
import Wire
import ZMQ

/// A client or worker speaking raw frames to the broker, for tests that need exact control of
/// what goes on the wire. Its socket lives on the peer's own thread, where receives block (up to
/// `timeoutMs`) without holding a thread of the cooperative pool.
actor RawPeer {
    private let executor = ThreadExecutor(name: "raw-peer")
    private let timeoutMs: Int32
    private var connection: (context: ZMQContext, socket: ZMQSocket)?

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// A socket of `type` (a DEALER unless said) connected to `endpoint`, created on the peer's
    /// thread with `options` set before it connects.
    static func connect(
        _ endpoint: String, type: ZMQSocketType = .dealer, options: [(ZMQIntOption, Int32)] = [], timeoutMs: Int32 = 5000,
        curve: CurveClientKeys? = nil
    ) async throws -> RawPeer {
        let peer = RawPeer(timeoutMs: timeoutMs)
        try await peer.open(endpoint, type: type, options: options, curve: curve)
        return peer
    }

    private init(timeoutMs: Int32) {
        self.timeoutMs = timeoutMs
    }

    private func open(_ endpoint: String, type: ZMQSocketType, options: [(ZMQIntOption, Int32)], curve: CurveClientKeys?) throws {
        let context = try ZMQContext()
        let socket = try ZMQSocket(context: context, type: type)
        if let curve {
            try socket.makeCurveClient(serverKey: curve.brokerKey.bytes, publicKey: curve.keyPair.publicKey.bytes, secretKey: curve.keyPair.secretKey.bytes)
        }
        try socket.set(.receiveTimeoutMs, timeoutMs)
        for (option, value) in options { try socket.set(option, value) }
        try socket.connect(endpoint)
        connection = (context, socket)
    }

    private var socket: ZMQSocket {
        get throws {
            guard let connection else { throw BusError.unavailable("the raw peer is closed") }
            return connection.socket
        }
    }

    func send(_ frames: [Data]) throws { try socket.send(frames) }

    func send(_ frames: [String]) throws { try send(frames.map { Data($0.utf8) }) }

    /// Adds prefix subscriptions (a SUB peer).
    func subscribe(_ prefixes: [String]) throws {
        for prefix in prefixes { try socket.subscribe(prefix) }
    }

    /// Removes prefix subscriptions (a SUB peer).
    func unsubscribe(_ prefixes: [String]) throws {
        for prefix in prefixes { try socket.unsubscribe(prefix) }
    }

    /// The next message, or nil when none arrives within `timeoutMs` (default: the peer's).
    func receive(timeoutMs: Int32? = nil) -> [Data]? {
        guard let socket = try? socket else { return nil }
        if let timeoutMs { try? socket.set(.receiveTimeoutMs, timeoutMs) }
        defer { if timeoutMs != nil { try? socket.set(.receiveTimeoutMs, self.timeoutMs) } }
        return try? socket.receive()
    }

    /// The next message that is not a HEARTBEAT (workers get those all the time) nor the
    /// broker's own `_health` question (Addition 19), which is left unanswered unless
    /// ``answersProbes`` says to answer it with `probeAnswer`.
    func receiveSkippingHeartbeats(timeoutMs: Int32? = nil) -> [Data]? {
        while let message = receive(timeoutMs: timeoutMs) {
            if message.count == 3 && message[2] == MDP.Command.heartbeat.frame { continue }
            if message.count >= 8 && message[2] == MDP.Command.request.frame && message[3].first == 0 && message[5] == Data("_health".utf8) {
                probesSeen += 1
                if let probeAnswer, let header = try? RequestHeader.decode(message[6]) {
                    try? answer(client: message[3], id: header.id, payload: probeAnswer)
                }
                continue
            }
            return message
        }
        return nil
    }

    /// The broker's `_health` questions this peer skipped.
    private(set) var probesSeen = 0
    /// What this worker answers to the broker's `_health`; nil: nothing.
    var probeAnswer: String?

    func answerProbes(with payload: String?) { probeAnswer = payload }

    /// Closes the socket and the context, then lets the peer's thread end.
    func close() {
        if let connection {
            connection.socket.close()
            connection.context.terminate()
        }
        connection = nil
        executor.stop()
    }

    // MARK: Client side

    /// Sends a StudyBus request: empty, MDPC01, service, method, header, payload.
    func request(_ service: String, _ method: String, id: String, deadlineMs: Int64? = nil, payload: String = "{}") throws {
        let header = RequestHeader(id: id, deadline: deadlineMs).encoded()
        try send([Data(), Data(MDP.client.utf8), Data(service.utf8), Data(method.utf8), header, Data(payload.utf8)])
    }

    /// Receives a reply and returns its header (and payload).
    func reply(timeoutMs: Int32? = nil) -> (header: ReplyHeader, payload: Data, frames: [Data])? {
        guard let frames = receive(timeoutMs: timeoutMs), frames.count >= 5, let header = try? ReplyHeader.decode(frames[3]) else { return nil }
        return (header, frames[4], frames)
    }

    // MARK: Worker side

    func ready(_ service: String, credit: Int? = nil) throws {
        var frames = [Data(), Data(MDP.worker.utf8), MDP.Command.ready.frame, Data(service.utf8)]
        if let credit { frames.append(Data(String(credit).utf8)) }
        try send(frames)
    }

    /// Sends a HEARTBEAT, as a live worker does.
    func heartbeat() throws {
        try send([Data(), Data(MDP.worker.utf8), MDP.Command.heartbeat.frame])
    }

    /// Waits for a REQUEST; returns the client address, method and header.
    func nextRequest(timeoutMs: Int32? = nil) -> (client: Data, method: String, header: RequestHeader, frames: [Data])? {
        guard let frames = receiveSkippingHeartbeats(timeoutMs: timeoutMs), frames.count >= 8, frames[2] == MDP.Command.request.frame,
              let header = try? RequestHeader.decode(frames[6]) else { return nil }
        return (frames[3], String(decoding: frames[5], as: UTF8.self), header, frames)
    }

    func answer(client: Data, id: String, payload: String = "{}", attachment: Data? = nil) throws {
        var frames = [Data(), Data(MDP.worker.utf8), MDP.Command.reply.frame, client, Data(), ReplyHeader(id: id).encoded(), Data(payload.utf8)]
        if let attachment { frames.append(attachment) }
        try send(frames)
    }
}

func nowMs() -> Int64 { Date().unixMilliseconds }
