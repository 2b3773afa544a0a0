import Foundation

/// An event topic and its payload type, declared once in the contracts module.
public struct Topic<Payload: Codable & Sendable>: TopicDescriptor {
    public let name: String
    public let summary: String

    public init(_ name: String, _ summary: String) {
        self.name = name
        self.summary = summary
    }

    public var payloadShape: JSONValue { JSONShape.of(Payload.self) }
}

/// What `_describe` and busctl need to know about an event topic.
public protocol TopicDescriptor: Sendable {
    var name: String { get }
    var summary: String { get }
    var payloadShape: JSONValue { get }
}
