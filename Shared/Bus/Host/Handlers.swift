import Foundation
import Wire

/// Registers the handlers of one service on its host, each called with the service itself,
/// which the host holds weakly: no handler keeps its service alive or forms a retain cycle, and
/// a request that arrives after the service is gone is answered `UNAVAILABLE`.
///
/// A service registers its handlers area by area, one file per area:
///
/// ```swift
/// enum TimerMethods {
///     static func register(_ handlers: Handlers<TimerTickerService>) {
///         handlers.handle(TimerTicker.createTimer) { service, request, context in
///             try await service.timers.create(request, user: try context.requireUser())
///         }
///     }
/// }
/// // in the service's initializer, once self is complete:
/// let handlers = owner.host.handlers(for: self)
/// TimerMethods.register(handlers)
/// ```
public struct Handlers<Owner: AnyObject & Sendable>: Sendable {
    private let host: ServiceHost
    private weak var owner: Owner?

    init(host: ServiceHost, owner: Owner) {
        self.host = host
        self.owner = owner
    }

    /// Registers the handler of `method`, run as a task (``ServiceHost/handle(_:_:)``).
    public func handle<Request, Response>(
        _ method: Method<Request, Response>, _ handler: @escaping @Sendable (Owner, Request, RequestContext) async throws -> Response
    ) {
        let service = host.service
        host.handle(method) { [weak owner] request, context in
            guard let owner else { throw Self.gone(service) }
            return try await handler(owner, request, context)
        }
    }

    /// Registers a handler that also returns an attachment frame.
    public func handle<Request, Response>(
        _ method: Method<Request, Response>,
        withAttachment handler: @escaping @Sendable (Owner, Request, RequestContext) async throws -> (Response, Data?)
    ) {
        let service = host.service
        host.handle(method, withAttachment: { [weak owner] request, context in
            guard let owner else { throw Self.gone(service) }
            return try await handler(owner, request, context)
        })
    }

    /// Registers a handler of a few microseconds that runs on the bus's I/O thread
    /// (``ServiceHost/handleOnIOThread(_:_:)``).
    public func handleOnIOThread<Request, Response>(
        _ method: Method<Request, Response>, _ handler: @escaping @Sendable (Owner, Request, RequestContext) throws -> Response
    ) {
        let service = host.service
        host.handleOnIOThread(method) { [weak owner] request, context in
            guard let owner else { throw Self.gone(service) }
            return try handler(owner, request, context)
        }
    }

    private static func gone(_ service: String) -> BusError {
        .unavailable("\(service) is stopping")
    }
}

extension ServiceHost {
    /// Registers handlers that are called with `owner`, held weakly.
    public func handlers<Owner: AnyObject & Sendable>(for owner: Owner) -> Handlers<Owner> {
        Handlers(host: self, owner: owner)
    }
}
