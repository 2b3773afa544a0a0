import Foundation

/// One received event.
public struct BusEvent: Sendable {
    public var topic: String
    public var header: EventHeader
    /// The payload JSON.
    public var payload: Data
    /// Events of this event's stream that were missed just before it, if any.
    public var gap: SeqGap?

    public init(topic: String, header: EventHeader, payload: Data, gap: SeqGap? = nil) {
        self.topic = topic
        self.header = header
        self.payload = payload
        self.gap = gap
    }

    /// Decodes the payload as `topic`'s payload type.
    public func decode<Payload>(_ topic: Topic<Payload>) throws -> Payload {
        try WireCoding.decode(Payload.self, from: payload)
    }
}
