import Foundation

/// An event topic and its payload type, declared once as a property of the contract of the
/// service that publishes it.
///
/// ```swift
/// public let materialCreated = Topic<Material>(Self.self, "material.created", "A material was created.")
/// ```
public struct Topic<Payload: Codable & Sendable>: TopicDescriptor {
    /// The service that publishes it, whose `_events.replay` holds it when the service owns data.
    public let service: String
    public let name: String
    public let summary: String

    /// A topic `contract`'s service publishes.
    public init<Contract: ServiceContract>(_ contract: Contract.Type, _ name: String, _ summary: String) {
        self.init(service: Contract.serviceName, name, summary)
    }

    /// A topic of a publisher known by name only (the broker's `bus.rpc`, tests and benchmarks).
    public init(service: String, _ name: String, _ summary: String) {
        self.service = service
        self.name = name
        self.summary = summary
    }

    public var payloadShape: JSONValue { JSONShape.of(Payload.self) }
}

/// What `_describe` and busctl need to know about an event topic.
public protocol TopicDescriptor: Sendable {
    var service: String { get }
    var name: String { get }
    var summary: String { get }
    var payloadShape: JSONValue { get }
}
