import Foundation

/// A service method, declared once as a property of its service's contract and used by both
/// sides: callers pass it to `Bus.call`, the service registers its handler against it.
///
/// Each says who may call it (``Audience``); there is no default, so a new method cannot be
/// opened to apps, or closed to them, by forgetting.
///
/// ```swift
/// public struct StoreContract: ServiceContract {
///     public static let serviceName = "store"
///     public let getMaterial = Method<RecordID, Material>(Self.self, "materials.get", "Fetch one material.", audience: .app)
/// }
/// let material = try await bus.call(Store.getMaterial, RecordID(id: id), options: .init(user: "u1"))
/// ```
public struct Method<Request: Codable & Sendable, Response: Codable & Sendable>: MethodDescriptor {
    public let service: String
    public let name: String
    public let summary: String
    public let audience: Audience

    /// A method of `contract`'s service: the service name comes from the contract.
    public init<Contract: ServiceContract>(_ contract: Contract.Type, _ name: String, _ summary: String, audience: Audience) {
        self.init(service: Contract.serviceName, name, summary, audience: audience)
    }

    /// A method of a service known by name only: the reserved methods every service answers,
    /// and services of tests and benchmarks.
    public init(service: String, _ name: String, _ summary: String, audience: Audience) {
        self.service = service
        self.name = name
        self.summary = summary
        self.audience = audience
    }

    public var requestShape: JSONValue { JSONShape.of(Request.self) }
    public var responseShape: JSONValue { JSONShape.of(Response.self) }
}

/// What `_describe` and busctl need to know about a method, whatever its types.
public protocol MethodDescriptor: Sendable {
    var service: String { get }
    var name: String { get }
    var summary: String { get }
    /// Who may call it; its service's host refuses anyone else.
    var audience: Audience { get }
    /// The JSON shape of the request payload.
    var requestShape: JSONValue { get }
    /// The JSON shape of the response payload.
    var responseShape: JSONValue { get }
}
