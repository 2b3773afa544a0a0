import CZMQ
import Foundation

/// One message part, owned by the thread that made or received it.
///
/// It wraps a heap-allocated `zmq_msg_t` so the message is never copied by value; sending it
/// moves its content to libzmq without copying bytes, which is what the broker's forwarding path
/// relies on. Not `Sendable`: copy the bytes out with ``data`` to hand them to another thread.
public final class ZMQFrame {
    let message: UnsafeMutablePointer<zmq_msg_t>

    /// An empty frame, ready to receive into.
    init() {
        message = .allocate(capacity: 1)
        zmq_msg_init(message)
    }

    init(size: Int) {
        message = .allocate(capacity: 1)
        zmq_msg_init_size(message, size)
    }

    /// A frame holding a copy of `bytes`.
    public convenience init(_ bytes: UnsafeRawBufferPointer) {
        self.init(size: bytes.count)
        fill(from: bytes)
    }

    /// A frame holding a copy of `data`.
    public convenience init(_ data: Data) {
        self.init(size: data.count)
        data.withUnsafeBytes { fill(from: $0) }
    }

    /// A frame holding the UTF-8 bytes of `string`.
    public convenience init(_ string: String) {
        var string = string
        self.init(size: string.utf8.count)
        string.withUTF8 { fill(from: UnsafeRawBufferPointer($0)) }
    }

    deinit {
        zmq_msg_close(message)
        message.deallocate()
    }

    private func fill(from bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        zmq_msg_data(message).copyMemory(from: base, byteCount: bytes.count)
    }

    /// The number of bytes in the frame.
    public var count: Int { zmq_msg_size(message) }

    /// Calls `body` with the frame's bytes, without copying them.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: zmq_msg_data(message), count: zmq_msg_size(message)))
    }

    /// A copy of the frame's bytes.
    public var data: Data {
        withUnsafeBytes { Data($0) }
    }

    /// The frame's bytes decoded as UTF-8 (invalid sequences repaired).
    public var string: String {
        withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// A metadata property of the message this frame was received in (`zmq_msg_gets`), e.g.
    /// ``ZMQMessageProperty/userID``; nil when the connection has none.
    public func property(_ name: ZMQMessageProperty) -> String? {
        zmq_msg_gets(message, name.rawValue).map { String(cString: $0) }
    }

    /// Whether the frame's bytes equal the bytes of `text`.
    public func equals(_ text: StaticString) -> Bool {
        withUnsafeBytes { bytes in
            bytes.count == text.utf8CodeUnitCount
                && (bytes.count == 0 || memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0)
        }
    }
}

/// The metadata libzmq attaches to every message received on a connection (`zmq_msg_gets`).
public struct ZMQMessageProperty: RawRepresentable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The user id the ZAP handler (RFC 27) returned when it admitted the connection: who sent
    /// the message, as the handler names it. Absent without a ZAP handler.
    public static let userID = ZMQMessageProperty(rawValue: "User-Id")
    /// The peer's socket type, e.g. `DEALER`.
    public static let socketType = ZMQMessageProperty(rawValue: "Socket-Type")
    /// The peer's IP address.
    public static let peerAddress = ZMQMessageProperty(rawValue: "Peer-Address")
}
