import CZMQ
import Foundation

/// The parts of one multipart message, in storage reused for every message the owning thread
/// receives: parts are read where libzmq put them and sent on by moving them, so a message that
/// passes through (the broker's routing, a worker's reply to its client) is never copied and
/// allocates nothing. Not `Sendable`, like the sockets it is used with.
///
/// ```swift
/// let message = ZMQMultipart()
/// while try message.receive(from: socket, dontWait: true) {
///     guard message.count >= 2, message.equals(1, MDP.client) else { continue }
///     try message.send(0, on: other, more: false)   // moves part 0
/// }
/// ```
public final class ZMQMultipart {
    private let parts: UnsafeMutablePointer<zmq_msg_t>
    /// Receives the parts of a message beyond `capacity`, which are counted and dropped.
    private let overflow: UnsafeMutablePointer<zmq_msg_t>
    /// The most parts kept of one message.
    public let capacity: Int
    // Every part read, send and receive checks these; unchecked, because the multipart is
    // owned by one thread and no method holds an access to them across a call that could
    // touch them again, and the dynamic checks would be a large share of the broker's work.
    /// The parts kept of the last message received or moved in (at most ``capacity``).
    @exclusivity(unchecked) public private(set) var count = 0
    /// The parts the last message had; more than ``count`` when it had more than ``capacity``.
    @exclusivity(unchecked) public private(set) var receivedCount = 0

    /// Storage for messages of up to `capacity` parts (StudyBus messages have at most 9).
    public init(capacity: Int = 12) {
        precondition(capacity >= 1)
        self.capacity = capacity
        parts = .allocate(capacity: capacity)
        for index in 0..<capacity { zmq_msg_init(parts + index) }
        overflow = .allocate(capacity: 1)
        zmq_msg_init(overflow)
    }

    deinit {
        for index in 0..<capacity { zmq_msg_close(parts + index) }
        parts.deallocate()
        zmq_msg_close(overflow)
        overflow.deallocate()
    }

    /// Receives one whole message, replacing the parts held. Returns `false` when `dontWait` is
    /// set and no message is waiting (or the socket's receive timeout passed).
    public func receive(from socket: ZMQSocket, dontWait: Bool) throws(ZMQError) -> Bool {
        count = 0
        receivedCount = 0
        var flags = dontWait ? ZMQ_DONTWAIT : 0
        while true {
            let part = receivedCount < capacity ? parts + receivedCount : overflow
            // Receiving into a part releases what it held before.
            guard try socket.receive(part, flags: flags) else {
                if receivedCount == 0 { return false }
                throw ZMQError(code: EAGAIN, operation: "receive")
            }
            // Only the first part can be "not there yet"; the rest arrive with it.
            flags = 0
            receivedCount += 1
            count = min(receivedCount, capacity)
            if zmq_msg_more(part) == 0 { return true }
        }
    }

    /// The bytes of part `index`, valid until the part is sent, moved or received into again.
    public func bytes(_ index: Int) -> UnsafeRawBufferPointer {
        let part = self.part(index)
        return UnsafeRawBufferPointer(start: zmq_msg_data(part), count: zmq_msg_size(part))
    }

    /// The size of part `index` in bytes.
    public func size(_ index: Int) -> Int { zmq_msg_size(part(index)) }

    /// The total size of parts `from` up to the last.
    public func size(from first: Int) -> Int {
        var total = 0
        for index in first..<max(first, count) { total += zmq_msg_size(parts + index) }
        return total
    }

    /// Whether part `index` holds exactly the UTF-8 bytes of `text`.
    public func equals(_ index: Int, _ text: String) -> Bool {
        let bytes = bytes(index)
        var text = text
        return text.withUTF8 { utf8 in
            utf8.count == bytes.count && (utf8.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, utf8.count) == 0)
        }
    }

    /// A metadata property of the connection part `index` arrived on, e.g. the
    /// ``ZMQMessageProperty/userID`` its ZAP handler gave it; nil when it has none.
    public func property(_ name: ZMQMessageProperty, of index: Int) -> String? {
        zmq_msg_gets(part(index), name.rawValue).map { String(cString: $0) }
    }

    /// Replaces the content of part `index` with a copy of `bytes`.
    public func replace(_ index: Int, with bytes: [UInt8]) {
        let part = self.part(index)
        zmq_msg_close(part)
        zmq_msg_init_size(part, bytes.count)
        if !bytes.isEmpty { bytes.withUnsafeBytes { zmq_msg_data(part).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
    }

    /// A copy of part `index`.
    public func data(_ index: Int) -> Data { Data(bytes(index)) }

    /// Part `index` decoded as UTF-8 (invalid sequences repaired).
    public func string(_ index: Int) -> String { String(decoding: bytes(index), as: UTF8.self) }

    /// Sends part `index`, moving its content to libzmq: the part is empty afterwards.
    public func send(_ index: Int, on socket: ZMQSocket, more: Bool) throws(ZMQError) {
        try socket.send(part(index), flags: more ? ZMQ_SNDMORE : 0)
    }

    /// Moves parts `range` of this message to the end of `other` (which must have room).
    public func move(_ range: Range<Int>, to other: ZMQMultipart) {
        precondition(other.count + range.count <= other.capacity)
        for index in range {
            zmq_msg_move(other.parts + other.count, part(index))
            other.count += 1
        }
        other.receivedCount = other.count
    }

    private func part(_ index: Int) -> UnsafeMutablePointer<zmq_msg_t> {
        precondition(index >= 0 && index < count, "part \(index) of a message of \(count)")
        return parts + index
    }
}
