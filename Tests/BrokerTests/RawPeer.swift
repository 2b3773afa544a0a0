import Bus
import Foundation
import ZMQ

/// A client or worker speaking raw frames to the broker, for tests that need exact control of
/// what goes on the wire. Calls block (up to `timeoutMs`); tests use it from one task.
final class RawPeer {
    private let context: ZMQContext
    private let socket: ZMQSocket

    init(_ endpoint: String, timeoutMs: Int32 = 5000) throws {
        context = try ZMQContext()
        socket = try ZMQSocket(context: context, type: .dealer)
        try socket.set(.receiveTimeoutMs, timeoutMs)
        try socket.connect(endpoint)
    }

    func send(_ frames: [Data]) throws { try socket.send(frames) }

    func send(_ frames: [String]) throws { try send(frames.map { Data($0.utf8) }) }

    /// The next message, or nil when none arrives in time.
    func receive() -> [Data]? {
        try? socket.receive()
    }

    /// The next message that is not a HEARTBEAT (workers get those all the time).
    func receiveSkippingHeartbeats() -> [Data]? {
        while let message = receive() {
            if message.count == 3 && message[2] == MDP.Command.heartbeat.frame { continue }
            return message
        }
        return nil
    }

    func close() {
        socket.close()
        context.terminate()
    }

    // MARK: Client side

    /// Sends a StudyBus request: empty, MDPC01, service, method, header, payload.
    func request(_ service: String, _ method: String, id: String, deadlineMs: Int64? = nil, payload: String = "{}") throws {
        let header = RequestHeader(id: id, deadline: deadlineMs).encoded()
        try send([Data(), Data(MDP.client.utf8), Data(service.utf8), Data(method.utf8), header, Data(payload.utf8)])
    }

    /// Receives a reply and returns its header (and payload).
    func reply() -> (header: ReplyHeader, payload: Data, frames: [Data])? {
        guard let frames = receive(), frames.count >= 5, let header = try? ReplyHeader.decode(frames[3]) else { return nil }
        return (header, frames[4], frames)
    }

    // MARK: Worker side

    func ready(_ service: String, credit: Int? = nil) throws {
        var frames = [Data(), Data(MDP.worker.utf8), MDP.Command.ready.frame, Data(service.utf8)]
        if let credit { frames.append(Data(String(credit).utf8)) }
        try send(frames)
    }

    /// Waits for a REQUEST; returns the client address, method and header.
    func nextRequest() -> (client: Data, method: String, header: RequestHeader, frames: [Data])? {
        guard let frames = receiveSkippingHeartbeats(), frames.count >= 8, frames[2] == MDP.Command.request.frame,
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
