import Foundation

/// Where a service's events go: the bus's publisher in a running service. Code that stores
/// events (the outbox) depends on this, not on a transport.
public protocol EventPublisher: Sendable {
    /// Sends one event of wire protocol §3: `topic`, its header and its payload JSON.
    /// - Throws: when the event cannot be handed to the transport (it is stopping).
    func publish(topic: String, header: EventHeader, payload: Data) throws
}
