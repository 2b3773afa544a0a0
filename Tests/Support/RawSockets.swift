import Bus
import Foundation
import Wire
import ZMQ

// Peers that put exact bytes on the wire, for tests of what a service does with hostile input:
// a client whose request header is any JSON, and a "broker" that hands a worker any REQUEST.
// Each socket lives on its peer's own thread (ZeroMQ's rule), where receives block without
// holding a thread of the cooperative pool.

/// A DEALER client that sends requests with a header written by the test.
public actor RawClient {
    private let executor = ThreadExecutor(name: "raw-client")
    private var connection: (context: ZMQContext, socket: ZMQSocket)?

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// A client connected to the broker's request endpoint.
    public static func connect(_ endpoint: String) async throws -> RawClient {
        let client = RawClient()
        try await client.open(endpoint)
        return client
    }

    private func open(_ endpoint: String) throws {
        let context = try ZMQContext()
        let socket = try ZMQSocket(context: context, type: .dealer)
        try socket.set(.linger, 0)
        try socket.connect(endpoint)
        connection = (context, socket)
    }

    /// Sends `[empty, MDPC01, service, method, header, payload]` and returns the first reply's
    /// header and payload, or nil when none comes in `timeoutMs`.
    public func call(_ service: String, _ method: String, header: String, payload: String = "{}", timeoutMs: Int32 = 10_000) throws
        -> (header: ReplyHeader, payload: Data)?
    {
        guard let socket = connection?.socket else { throw BusError.unavailable("the raw client is closed") }
        _ = try socket.send([Data(), MDP.Frames.client, Data(service.utf8), Data(method.utf8), Data(header.utf8), Data(payload.utf8)])
        try socket.set(.receiveTimeoutMs, timeoutMs)
        while let frames = try socket.receive() {
            guard frames.count >= 5, let reply = try? ReplyHeader.decode(frames[3]) else { continue }
            return (reply, frames[4])
        }
        return nil
    }

    public func close() {
        connection?.socket.close()
        connection?.context.terminate()
        connection = nil
        executor.stop()
    }
}

/// A ROUTER standing in for the broker: a service's worker connects to it (as its `BUS_RPC`)
/// and gets REQUESTs with headers written by the test, as a broker that checks nothing would
/// pass them on. It answers the worker's heartbeats by sending its own while it waits.
public actor RawBroker {
    private let executor = ThreadExecutor(name: "raw-broker")
    private var connection: (context: ZMQContext, socket: ZMQSocket)?
    /// The worker that sent READY.
    private var worker: Data?
    public private(set) var endpoint = ""

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// A router bound to an ephemeral loopback port (``endpoint``).
    public static func bind() async throws -> RawBroker {
        let broker = RawBroker()
        try await broker.open()
        return broker
    }

    private func open() throws {
        let context = try ZMQContext()
        let socket = try ZMQSocket(context: context, type: .router)
        try socket.set(.linger, 0)
        try socket.set(.receiveTimeoutMs, 100)
        try socket.bind("tcp://127.0.0.1:*")
        endpoint = socket.lastEndpoint
        connection = (context, socket)
    }

    /// Waits (up to `timeout`) for a worker's READY; returns the service it registered.
    public func waitForWorker(timeout: Duration = .seconds(30)) throws -> String? {
        guard let frames = try receiveWorkerMessage(.ready, until: .now + timeout), frames.count >= 5 else { return nil }
        return String(decoding: frames[4], as: UTF8.self)
    }

    /// Hands the worker `[REQUEST, client, empty, method, header, payload]` and returns its
    /// REPLY's header, or nil when none comes within `timeout`. A worker that reconnected
    /// meanwhile (a starved machine can make it miss heartbeats) gets the request again.
    public func request(_ method: String, header: String, payload: String = "{}", timeout: Duration = .seconds(20)) throws -> ReplyHeader? {
        guard let socket = connection?.socket else { throw BusError.unavailable("the raw broker is closed") }
        let deadline = ContinuousClock.now + timeout
        while let worker {
            _ = try socket.send([worker, Data(), MDP.Frames.worker, MDP.Command.request.frame, Data("client-1".utf8), Data(),
                                 Data(method.utf8), Data(header.utf8), Data(payload.utf8)])
            guard let frames = try receiveWorkerMessage(.reply, until: deadline) else { return nil }
            if frames[3] == MDP.Command.reply.frame, frames.count >= 7 { return try? ReplyHeader.decode(frames[6]) }
        }
        throw BusError.unavailable("no worker is connected")
    }

    /// The next worker message with `command`, or a READY (which makes its sender the worker),
    /// after `[identity, empty, MDPW01, command]`; a heartbeat goes to the worker every 100 ms
    /// meanwhile so that it keeps the connection.
    private func receiveWorkerMessage(_ command: MDP.Command, until deadline: ContinuousClock.Instant) throws -> [Data]? {
        guard let socket = connection?.socket else { throw BusError.unavailable("the raw broker is closed") }
        while ContinuousClock.now < deadline {
            if let worker { _ = try socket.send([worker, Data(), MDP.Frames.worker, MDP.Command.heartbeat.frame]) }
            guard let frames = try socket.receive(), frames.count >= 4, frames[2] == MDP.Frames.worker else { continue }
            if frames[3] == MDP.Command.ready.frame {
                worker = frames[0]
                return frames
            }
            if frames[3] == command.frame { return frames }
        }
        return nil
    }

    public func close() {
        connection?.socket.close()
        connection?.context.terminate()
        connection = nil
        executor.stop()
    }
}
