import Foundation

/// A request ready to go to the broker: its id, frames and local deadline. Built the same way
/// for ``Bus`` and ``BlockingClient``.
struct OutgoingCall {
    let id: String
    let frames: [Data]
    /// When the caller stops waiting, on the monotonic clock.
    let deadline: ContinuousClock.Instant

    /// - Throws: `DEADLINE_EXCEEDED` when the deadline has passed already, `RESOURCE_EXHAUSTED`
    ///   when the payload or attachment is larger than the broker accepts.
    init(id: String, service: String, method: String, payload: Data, options: CallOptions, configuration: BusConfiguration) throws(BusError) {
        let nowMs = Date().unixMilliseconds
        var deadlineMs = nowMs + (options.timeout ?? configuration.defaultTimeout).wholeMilliseconds
        if let deadline = options.deadline { deadlineMs = min(deadlineMs, deadline.unixMilliseconds) }
        guard deadlineMs > nowMs else {
            throw .deadlineExceeded("the deadline of \(service)/\(method) passed before the call was sent")
        }
        let largest = max(payload.count, options.attachment?.count ?? 0)
        guard largest <= configuration.maxMessageBytes else {
            throw .messageTooLarge("the request to \(service)/\(method)", bytes: largest, limit: configuration.maxMessageBytes,
                                   advice: "send less at once or raise the limit for the broker and this process")
        }
        let header = RequestHeader(id: id, deadline: deadlineMs, user: options.user, meta: options.meta, idem: options.idempotencyKey)
        var frames = [Data(), MDP.Frames.client, Data(service.utf8), Data(method.utf8), header.encoded(), payload]
        if let attachment = options.attachment { frames.append(attachment) }
        self.id = id
        self.frames = frames
        self.deadline = ContinuousClock.now + .milliseconds(deadlineMs - nowMs)
    }

    /// A prefix that makes this connection's call ids unique among the broker's clients.
    static func newIDPrefix() -> String {
        String(UInt32.random(in: 0...UInt32.max), radix: 36) + "-"
    }

    /// The request payload of a typed call.
    static func encode<Request: Encodable>(_ request: Request, for method: String) throws(BusError) -> Data {
        do {
            return try WireCoding.encode(request)
        } catch {
            throw .invalidArgument("cannot encode the \(method) request: \(error)")
        }
    }

    /// The response of a typed call.
    static func decode<Response: Decodable>(_ type: Response.Type, from reply: RawReply, of service: String, _ method: String) throws(BusError) -> Response {
        do {
            return try WireCoding.decode(type, from: reply.payload)
        } catch {
            throw .internal("the reply of \(service)/\(method) does not decode: \(DecodingFailure.describe(error))")
        }
    }
}

extension RawReply {
    /// Parses a reply as the broker sends it to a client: `[empty, MDPC01, service, header,
    /// payload, attachment?]`; `nil` if it is not one.
    init?(frames: [Data]) {
        guard frames.count >= 5, frames.count <= 6, frames[0].isEmpty, let header = try? ReplyHeader.decode(frames[3]) else { return nil }
        self.init(header: header, payload: frames[4], attachment: frames.count == 6 ? frames[5] : nil)
    }
}
