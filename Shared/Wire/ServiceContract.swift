import Foundation

/// A service's declarations: its name, and its methods and topics as stored properties.
///
/// The lists of methods and topics are read from the properties themselves (by reflection), so
/// there is no second, hand-kept list to forget to update.
public protocol ServiceContract: Sendable {
    /// The service name callers address, e.g. `store`.
    static var serviceName: String { get }
}

extension ServiceContract {
    /// Every method declared as a property of the contract, in declaration order.
    public var methods: [any MethodDescriptor] {
        Mirror(reflecting: self).children.compactMap { $0.value as? any MethodDescriptor }
    }

    /// Every event topic declared as a property of the contract, in declaration order.
    public var topics: [any TopicDescriptor] {
        Mirror(reflecting: self).children.compactMap { $0.value as? any TopicDescriptor }
    }

    /// The declared method called `name`, if any.
    public func method(named name: String) -> (any MethodDescriptor)? {
        methods.first { $0.name == name }
    }
}
