import CZMQ
import Foundation

/// The socket types StudyBus uses.
public enum ZMQSocketType: Sendable {
    case pub, sub, dealer, router, xpub, xsub, pair

    var raw: Int32 {
        switch self {
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .xpub: ZMQ_XPUB
        case .xsub: ZMQ_XSUB
        case .pair: ZMQ_PAIR
        }
    }
}

/// An integer socket option (see `zmq_setsockopt`).
public struct ZMQIntOption: Sendable {
    let raw: Int32
    public static let sendHighWaterMark = ZMQIntOption(raw: ZMQ_SNDHWM)
    public static let receiveHighWaterMark = ZMQIntOption(raw: ZMQ_RCVHWM)
    public static let routerMandatory = ZMQIntOption(raw: ZMQ_ROUTER_MANDATORY)
    public static let reconnectIntervalMs = ZMQIntOption(raw: ZMQ_RECONNECT_IVL)
    public static let reconnectIntervalMaxMs = ZMQIntOption(raw: ZMQ_RECONNECT_IVL_MAX)
    public static let immediate = ZMQIntOption(raw: ZMQ_IMMEDIATE)
    public static let sendTimeoutMs = ZMQIntOption(raw: ZMQ_SNDTIMEO)
    public static let receiveTimeoutMs = ZMQIntOption(raw: ZMQ_RCVTIMEO)
    public static let tcpKeepalive = ZMQIntOption(raw: ZMQ_TCP_KEEPALIVE)
    /// Seconds a TCP connection is idle before the first keepalive probe (`TCP_KEEPIDLE`).
    public static let tcpKeepaliveIdle = ZMQIntOption(raw: ZMQ_TCP_KEEPALIVE_IDLE)
    /// Seconds between keepalive probes (`TCP_KEEPINTVL`).
    public static let tcpKeepaliveInterval = ZMQIntOption(raw: ZMQ_TCP_KEEPALIVE_INTVL)
    public static let linger = ZMQIntOption(raw: ZMQ_LINGER)
    /// 1: the socket is a CURVE server (it needs ``ZMQBytesOption/curveSecretKey`` too).
    public static let curveServer = ZMQIntOption(raw: ZMQ_CURVE_SERVER)
    /// 1: an XPUB passes every subscription and unsubscription up, with its sender's metadata,
    /// and applies a subscription only when the application sets ``ZMQSocket/subscribe(bytes:)``
    /// right after receiving it (libzmq applies it to the connection it came from).
    public static let xpubManual = ZMQIntOption(raw: ZMQ_XPUB_MANUAL)
}

/// A socket option whose value is bytes (see `zmq_setsockopt`).
public struct ZMQBytesOption: Sendable {
    let raw: Int32
    let name: String
    /// This socket's long-term CURVE public key, 32 bytes (a CURVE client sets it).
    public static let curvePublicKey = ZMQBytesOption(raw: ZMQ_CURVE_PUBLICKEY, name: "ZMQ_CURVE_PUBLICKEY")
    /// This socket's long-term CURVE secret key, 32 bytes (client and server set it).
    public static let curveSecretKey = ZMQBytesOption(raw: ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY")
    /// The server's CURVE public key, 32 bytes: setting it makes the socket a CURVE client.
    public static let curveServerKey = ZMQBytesOption(raw: ZMQ_CURVE_SERVERKEY, name: "ZMQ_CURVE_SERVERKEY")
    /// The ZAP (RFC 27) domain a server's handshakes are authenticated in.
    public static let zapDomain = ZMQBytesOption(raw: ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN")
}

/// A libzmq socket. Owned by exactly one thread for its whole life (libzmq sockets are not
/// thread-safe), so it is deliberately not `Sendable`.
///
/// Every socket is created with `ZMQ_LINGER` 0. Close it with ``close()`` on its owning thread
/// before terminating the context.
public final class ZMQSocket {
    let handle: UnsafeMutableRawPointer
    /// The socket type it was created with.
    public let type: ZMQSocketType
    private var closed = false
    /// Whether a message may be waiting that the socket's `ZMQ_FD` will not announce: false only
    /// while the last operation was a receive that found nothing (which read the command mailbox
    /// the descriptor signals). A send can take in a command that makes messages readable, so
    /// every send sets it, as does a receive that got a message (there may be more).
    /// Written on every send and receive: unchecked, as the socket belongs to one thread and
    /// the flag is only ever stored or loaded whole (no access spans another).
    @exclusivity(unchecked) public internal(set) var mayHaveEvents = true
    /// The socket's `ZMQ_FD`: readable when commands wait in its mailbox.
    let eventDescriptor: Int32
    /// One message part reused for every receive into `Data`, so receiving allocates only the
    /// `Data` itself.
    private let scratch = ZMQFrame()

    /// Creates a socket of `type` in `context`.
    public init(context: ZMQContext, type: ZMQSocketType) throws(ZMQError) {
        guard let handle = zmq_socket(context.handle, type.raw) else { throw .last("zmq_socket") }
        self.handle = handle
        self.type = type
        var zero: Int32 = 0
        zmq_setsockopt(handle, ZMQ_LINGER, &zero, MemoryLayout<Int32>.size)
        var descriptor: Int32 = -1
        var size = MemoryLayout<Int32>.size
        zmq_getsockopt(handle, ZMQ_FD, &descriptor, &size)
        eventDescriptor = descriptor
    }

    /// Closes the socket; pending outgoing messages are dropped (linger 0). Idempotent.
    public func close() {
        guard !closed else { return }
        closed = true
        zmq_close(handle)
    }

    /// Binds to `endpoint`, e.g. `tcp://*:5555` or `tcp://127.0.0.1:*`.
    public func bind(_ endpoint: String) throws(ZMQError) {
        guard zmq_bind(handle, endpoint) == 0 else { throw .last("bind \(endpoint)") }
    }

    /// Connects to `endpoint`; libzmq reconnects by itself when the peer goes away.
    public func connect(_ endpoint: String) throws(ZMQError) {
        guard zmq_connect(handle, endpoint) == 0 else { throw .last("connect \(endpoint)") }
    }

    /// Sets an integer option.
    public func set(_ option: ZMQIntOption, _ value: Int32) throws(ZMQError) {
        var value = value
        guard zmq_setsockopt(handle, option.raw, &value, MemoryLayout<Int32>.size) == 0 else {
            throw .last("setsockopt \(option.raw)")
        }
    }

    /// Sets the largest inbound message, in bytes, a peer may send before it is disconnected.
    public func setMaxMessageSize(_ bytes: Int64) throws(ZMQError) {
        var value = bytes
        guard zmq_setsockopt(handle, ZMQ_MAXMSGSIZE, &value, MemoryLayout<Int64>.size) == 0 else {
            throw .last("setsockopt ZMQ_MAXMSGSIZE")
        }
    }

    /// Sets a bytes option.
    public func set(_ option: ZMQBytesOption, _ bytes: [UInt8]) throws(ZMQError) {
        try setBytes(option.raw, bytes, name: option.name)
    }

    /// Makes the socket a CURVE client of the server whose public key is `serverKey`, with this
    /// side's key pair (all 32 bytes). Set before connecting: it applies to later connections.
    public func makeCurveClient(serverKey: [UInt8], publicKey: [UInt8], secretKey: [UInt8]) throws(ZMQError) {
        try set(.curveServerKey, serverKey)
        try set(.curvePublicKey, publicKey)
        try set(.curveSecretKey, secretKey)
    }

    /// Makes the socket a CURVE server with `secretKey` (32 bytes). Set before binding. Each
    /// handshake is checked by the ZAP handler of the socket's context, if one is bound at
    /// `inproc://zeromq.zap.01`; without one libzmq admits every client key.
    public func makeCurveServer(secretKey: [UInt8]) throws(ZMQError) {
        try set(.curveServer, 1)
        try set(.curveSecretKey, secretKey)
    }

    /// ZMTP heartbeats (RFC 37): a PING every `interval` on each connection, which is closed
    /// when nothing arrives on it for `timeout` (a connecting socket then connects again), and
    /// the peer is asked to close it after `timeout` too. So a connection whose far end
    /// vanished without closing it — a half-open TCP connection — is noticed even on a socket
    /// that sends nothing (a subscriber), and no connection sits idle long enough for a load
    /// balancer's idle cut.
    public func setHeartbeat(interval: Duration, timeout: Duration) throws(ZMQError) {
        func milliseconds(_ duration: Duration) -> Int32 {
            Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        }
        try set(ZMQIntOption(raw: ZMQ_HEARTBEAT_IVL), milliseconds(interval))
        try set(ZMQIntOption(raw: ZMQ_HEARTBEAT_TIMEOUT), milliseconds(timeout))
        // The TTL travels in tenths of a second in 16 bits.
        try set(ZMQIntOption(raw: ZMQ_HEARTBEAT_TTL), min(milliseconds(timeout), 6_553_500))
    }

    /// Adds a prefix subscription (SUB sockets); the empty prefix receives everything.
    public func subscribe(_ prefix: String) throws(ZMQError) {
        try setBytes(ZMQ_SUBSCRIBE, Array(prefix.utf8), name: "ZMQ_SUBSCRIBE")
    }

    /// Removes a prefix subscription (SUB sockets).
    public func unsubscribe(_ prefix: String) throws(ZMQError) {
        try setBytes(ZMQ_UNSUBSCRIBE, Array(prefix.utf8), name: "ZMQ_UNSUBSCRIBE")
    }

    /// Adds (SUB) or, on a manual XPUB, admits for the connection of the subscription just
    /// received, the prefix `bytes`.
    public func subscribe(bytes: UnsafeRawBufferPointer) throws(ZMQError) {
        guard zmq_setsockopt(handle, ZMQ_SUBSCRIBE, bytes.baseAddress, bytes.count) == 0 else { throw .last("setsockopt ZMQ_SUBSCRIBE") }
    }

    /// Removes (SUB) or, on a manual XPUB, removes for the connection of the unsubscription
    /// just received, the prefix `bytes`.
    public func unsubscribe(bytes: UnsafeRawBufferPointer) throws(ZMQError) {
        guard zmq_setsockopt(handle, ZMQ_UNSUBSCRIBE, bytes.baseAddress, bytes.count) == 0 else { throw .last("setsockopt ZMQ_UNSUBSCRIBE") }
    }

    private func setBytes(_ option: Int32, _ bytes: [UInt8], name: String) throws(ZMQError) {
        let status = bytes.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
        guard status == 0 else { throw .last("setsockopt \(name)") }
    }

    /// The endpoint the socket last bound or connected to, with the port resolved when it was `*`.
    public var lastEndpoint: String {
        var buffer = [CChar](repeating: 0, count: 256)
        var size = buffer.count
        zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size)
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Sending

    /// Sends one message part. Returns `false` when `dontWait` is set and the part would block.
    @discardableResult
    public func send(bytes: UnsafeRawBufferPointer, more: Bool, dontWait: Bool = false) throws(ZMQError) -> Bool {
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        mayHaveEvents = true
        while true {
            if zmq_send(handle, bytes.baseAddress, bytes.count, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN && dontWait { return false }
            throw ZMQError(code: code, operation: "send")
        }
    }

    /// Sends one message part holding `data`.
    @discardableResult
    public func send(_ data: Data, more: Bool, dontWait: Bool = false) throws(ZMQError) -> Bool {
        try data.withUnsafeBytes { sending($0, more: more, dontWait: dontWait) }.get()
    }

    /// Sends one message part holding `bytes`.
    @discardableResult
    public func send(_ bytes: [UInt8], more: Bool, dontWait: Bool = false) throws(ZMQError) -> Bool {
        try bytes.withUnsafeBytes { sending($0, more: more, dontWait: dontWait) }.get()
    }

    /// Sends one message part holding the UTF-8 bytes of `string`, from its own storage.
    @discardableResult
    public func send(_ string: String, more: Bool, dontWait: Bool = false) throws(ZMQError) -> Bool {
        var string = string
        return try string.withUTF8 { sending(UnsafeRawBufferPointer($0), more: more, dontWait: dontWait) }.get()
    }

    /// ``send(bytes:more:dontWait:)`` for the closures of `withUnsafeBytes`, which cannot throw
    /// typed errors.
    private func sending(_ bytes: UnsafeRawBufferPointer, more: Bool, dontWait: Bool) -> Result<Bool, ZMQError> {
        Result { () throws(ZMQError) in try send(bytes: bytes, more: more, dontWait: dontWait) }
    }

    /// Sends a frame, moving its content to libzmq (the frame is empty afterwards).
    @discardableResult
    public func send(frame: ZMQFrame, more: Bool, dontWait: Bool = false) throws(ZMQError) -> Bool {
        try send(frame.message, flags: (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0))
    }

    /// Sends a whole multipart message. With `dontWait`, returns `false` if the first part would
    /// block (libzmq queues the rest of a message atomically once the first part is accepted).
    @discardableResult
    public func send(_ parts: [Data], dontWait: Bool = false) throws(ZMQError) -> Bool {
        for (index, part) in parts.enumerated() {
            let more = index < parts.count - 1
            if try !send(part, more: more, dontWait: dontWait && index == 0) { return false }
        }
        return true
    }

    // MARK: Receiving

    /// Receives one whole multipart message as copies of its bytes; `nil` if none came (see
    /// ``receive(into:flags:)``).
    public func receive(dontWait: Bool = false) throws(ZMQError) -> [Data]? {
        var parts: [Data] = []
        let flags = dontWait ? ZMQ_DONTWAIT : 0
        while true {
            if try !receive(into: scratch, flags: parts.isEmpty ? flags : 0) { return nil }
            parts.append(scratch.data)
            if zmq_msg_more(scratch.message) == 0 { return parts }
        }
    }

    /// Receives one part into `frame`. Returns `false` on EAGAIN: nothing waiting when
    /// non-blocking, or the socket's receive timeout (`receiveTimeoutMs`) passed.
    public func receive(into frame: ZMQFrame, flags: Int32) throws(ZMQError) -> Bool {
        try receive(frame.message, flags: flags)
    }

    /// Receives one part into `message`; `false` on EAGAIN. Keeps ``mayHaveEvents`` up to date.
    func receive(_ message: UnsafeMutablePointer<zmq_msg_t>, flags: Int32) throws(ZMQError) -> Bool {
        while true {
            if zmq_msg_recv(message, handle, flags) >= 0 {
                mayHaveEvents = true
                return true
            }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN {
                mayHaveEvents = false
                return false
            }
            throw ZMQError(code: code, operation: "receive")
        }
    }

    /// Sends one part moving `message`'s content; `false` if `ZMQ_DONTWAIT` is in `flags` and
    /// the part would block. Keeps ``mayHaveEvents`` up to date.
    @discardableResult
    func send(_ message: UnsafeMutablePointer<zmq_msg_t>, flags: Int32) throws(ZMQError) -> Bool {
        mayHaveEvents = true
        while zmq_msg_send(message, handle, flags) < 0 {
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN && flags & ZMQ_DONTWAIT != 0 { return false }
            throw ZMQError(code: code, operation: "send")
        }
        return true
    }

    /// Whether a message can be received now (`ZMQ_EVENTS`, which processes the socket's
    /// commands). When none can, the socket's `ZMQ_FD` announces the next.
    func hasMessageWaiting() throws(ZMQError) -> Bool {
        var events: Int32 = 0
        var size = MemoryLayout<Int32>.size
        while zmq_getsockopt(handle, ZMQ_EVENTS, &events, &size) != 0 {
            let code = zmq_errno()
            if code != EINTR { throw ZMQError(code: code, operation: "getsockopt ZMQ_EVENTS") }
        }
        let waiting = events & Int32(ZMQ_POLLIN) != 0
        mayHaveEvents = waiting
        return waiting
    }

    /// Whether the part just received by ``receive(into:flags:)`` has more parts after it.
    public func frameHasMore(_ frame: ZMQFrame) -> Bool {
        zmq_msg_more(frame.message) != 0
    }

    /// Flags value for a non-blocking receive.
    public static let dontWait = ZMQ_DONTWAIT
}
