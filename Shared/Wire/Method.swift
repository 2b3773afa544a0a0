import Foundation

/// A service method, declared once in the contracts module and used by both sides:
/// callers pass it to ``Bus/call(_:_:options:)``, the service registers its handler against it.
///
/// ```swift
/// public let getMaterial = Method<MaterialID, Material>("store", "materials.get", "Fetch one material by id.")
/// let material = try await bus.call(Store.getMaterial, MaterialID(id: id), options: .init(user: "u1"))
/// ```
public struct Method<Request: Codable & Sendable, Response: Codable & Sendable>: MethodDescriptor {
    public let service: String
    public let name: String
    public let summary: String

    public init(_ service: String, _ name: String, _ summary: String) {
        self.service = service
        self.name = name
        self.summary = summary
    }

    public var requestShape: JSONValue { JSONShape.of(Request.self) }
    public var responseShape: JSONValue { JSONShape.of(Response.self) }
}

/// What `_describe` and busctl need to know about a method, whatever its types.
public protocol MethodDescriptor: Sendable {
    var service: String { get }
    var name: String { get }
    var summary: String { get }
    /// The JSON shape of the request payload.
    var requestShape: JSONValue { get }
    /// The JSON shape of the response payload.
    var responseShape: JSONValue { get }
}
