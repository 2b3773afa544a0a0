import Foundation
import Wire
import ZMQ

/// A request ready to go to the broker: its id, parts and local deadline. Built the same way
/// for ``Bus`` and ``BlockingClient``.
struct OutgoingCall: Sendable {
    let id: String
    let service: String
    let method: String
    let header: [UInt8]
    let payload: [UInt8]
    let attachment: Data?
    /// When the caller stops waiting, on the monotonic clock.
    let deadline: ContinuousClock.Instant

    /// - Throws: `DEADLINE_EXCEEDED` when the deadline has passed already, `RESOURCE_EXHAUSTED`
    ///   when the payload or attachment is larger than the broker accepts.
    init(id: String, service: String, method: String, payload: [UInt8], options: CallOptions, configuration: BusConfiguration) throws(BusError) {
        let nowMs = Date().unixMilliseconds
        // Never past the last deadline the wire carries (wire-protocol.md, addition 1).
        let (timedOutMs, overflow) = nowMs.addingReportingOverflow((options.timeout ?? configuration.defaultTimeout).wholeMilliseconds)
        var deadlineMs = overflow ? WireLimits.latestUnixMilliseconds : min(timedOutMs, WireLimits.latestUnixMilliseconds)
        if let deadline = options.deadline { deadlineMs = min(deadlineMs, deadline.unixMilliseconds) }
        guard deadlineMs > nowMs else {
            throw .deadlineExceeded("the deadline of \(service)/\(method) passed before the call was sent")
        }
        let largest = max(payload.count, options.attachment?.count ?? 0)
        guard largest <= configuration.maxMessageBytes else {
            throw .messageTooLarge("the request to \(service)/\(method)", bytes: largest, limit: configuration.maxMessageBytes,
                                   advice: "send less at once or raise the limit for the broker and this process")
        }
        self.id = id
        self.service = service
        self.method = method
        header = RequestHeader(id: id, deadline: deadlineMs, user: options.user, meta: TraceParent.propagated(into: options.meta), idem: options.idempotencyKey,
                               caller: options.claimedCaller).encodedBytes
        self.payload = payload
        attachment = options.attachment
        deadline = ContinuousClock.now + .milliseconds(deadlineMs - nowMs)
    }

    /// Sends `[empty, MDPC01, service, method, header, payload, attachment?]`. Returns `false`
    /// if the socket would block at the first part, when nothing was sent.
    func send(on socket: ZMQSocket) throws(ZMQError) -> Bool {
        guard try socket.send(MDP.Frames.empty, more: true, dontWait: true) else { return false }
        try socket.send(MDP.Frames.client, more: true)
        try socket.send(service, more: true)
        try socket.send(method, more: true)
        try socket.send(header, more: true)
        try socket.send(payload, more: attachment != nil)
        if let attachment { try socket.send(attachment, more: false) }
        return true
    }

    /// A prefix that makes this connection's call ids unique among the broker's clients.
    static func newIDPrefix() -> String {
        String(UInt32.random(in: 0...UInt32.max), radix: 36) + "-"
    }

    /// The request payload of a typed call.
    static func encode<Request: Encodable>(_ request: Request, for method: String) throws(BusError) -> [UInt8] {
        do {
            return try WireCoding.encodeBytes(request)
        } catch {
            throw .invalidArgument("cannot encode the \(method) request: \(error)")
        }
    }

    /// The response of a typed call.
    static func decode<Response: Decodable>(_ type: Response.Type, from reply: RawReply, of service: String, _ method: String) throws(BusError) -> Response {
        try withBytes(of: reply.payload) { payload throws(BusError) in try decode(type, from: payload, of: service, method) }
    }

    /// The response of a typed call, read from the bytes of its payload part.
    static func decode<Response: Decodable>(_ type: Response.Type, from payload: UnsafeRawBufferPointer, of service: String, _ method: String) throws(BusError) -> Response {
        do {
            return try WireCoding.decode(type, from: payload)
        } catch {
            throw .internal("the reply of \(service)/\(method) does not decode: \(DecodingFailure.describe(error))")
        }
    }
}

extension RawReply {
    /// Reads a reply as the broker sends it to a client, `[empty, MDPC01, service, header,
    /// payload, attachment?]`, copying the payload and attachment out; `nil` if it is not one.
    init?(_ message: ZMQMultipart) {
        guard let header = message.clientReplyHeader else { return nil }
        self.init(header: header, message: message)
    }

    /// The reply in `message`, whose `header` was read already.
    init(header: ReplyHeader, message: ZMQMultipart) {
        self.init(header: header, payload: message.data(4), attachment: message.receivedCount == 6 ? message.data(5) : nil)
    }
}

extension ZMQMultipart {
    /// The header of a reply as the broker sends it to a client, `[empty, MDPC01, service,
    /// header, payload, attachment?]`; `nil` if the message is not one.
    var clientReplyHeader: ReplyHeader? {
        guard receivedCount >= 5, receivedCount <= 6, size(0) == 0 else { return nil }
        return try? ReplyHeader.decode(bytes: bytes(3))
    }
}
