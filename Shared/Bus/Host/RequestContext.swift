import Foundation
import Logging
import Wire

/// What a handler knows about the request it serves, and how it calls further services on the
/// same request's behalf.
public struct RequestContext: Sendable {
    /// The request header's `id`.
    public let requestID: String
    /// The method being served.
    public let method: String
    /// The end user the call acts for, if the caller said (for a `user` key, that key's user).
    public let user: String?
    /// Who called, as the broker stamped it (wire protocol, Addition 10); nil when the request
    /// came without one, which a host with `BUS_SECURITY=off` treats as an operator.
    public let caller: BusIdentity?
    /// Whether a request without `caller` is trusted as an operator: the host's own security is off.
    let trustsUnidentifiedCallers: Bool
    /// The request's metadata (`traceparent`, …).
    public let meta: [String: String]
    /// The `traceparent` the handler's work continues: the request's when it is well-formed
    /// (``TraceParent/valid(_:)``), or, while this process traces (``Spans``), the host's server
    /// span for the request — a child of the request's. The handler runs with it as
    /// ``TraceParent/current``, so its calls and events carry it on; log lines carry its ids.
    public internal(set) var traceparent: String?
    /// The request's idempotency key.
    public let idempotencyKey: String?
    /// When the caller stops waiting; the header's `deadline`, which decoding kept within
    /// ``WireLimits/deadline`` (so it converts back to milliseconds exactly).
    public let deadline: Date?
    /// The request's attachment frame.
    public let attachment: Data?
    /// The service's logger; ``logger`` adds the request's id and method to it.
    let baseLogger: Logger
    /// The bus, for downstream calls and events.
    public let bus: Bus

    /// A logger carrying the request id and method, and `trace_id` and `span_id` when the
    /// request came with a `traceparent`. Made on use: setting metadata is not free, and most
    /// requests log nothing.
    public var logger: Logger {
        var logger = baseLogger
        logger[metadataKey: "request"] = "\(requestID)"
        logger[metadataKey: "method"] = "\(method)"
        if let traceparent {
            let (traceID, spanID) = TraceParent.ids(traceparent)
            logger[metadataKey: "trace_id"] = "\(traceID)"
            logger[metadataKey: "span_id"] = "\(spanID)"
        }
        return logger
    }

    /// The calling user.
    /// - Throws: `INVALID_ARGUMENT` when the request header has no `user`.
    public func requireUser() throws(BusError) -> String {
        guard let user, !user.isEmpty else {
            throw .invalidArgument("request header field 'user' is required: every \(method) call acts for a user")
        }
        return user
    }

    /// Refuses the request unless its caller is of `audience` (``Audience/admits(_:)``): for a
    /// check that depends on the request, beyond the method's own audience, e.g.
    /// `try context.require(.operator, for: "usage with allUsers")`.
    /// - Throws: `PERMISSION_DENIED` naming `what` and who may.
    public func require(_ audience: Audience, for what: String) throws(BusError) {
        if let refusal = AudienceCheck.refusal(audience, what, caller: caller, trustsUnidentified: trustsUnidentifiedCallers) {
            throw refusal
        }
    }

    /// How long until the caller stops waiting (zero once it has passed), or `nil` when the
    /// request set no deadline. Saturating, so the far end of the deadline's range is safe to
    /// add to a clock's `now`.
    public var timeRemaining: Duration? {
        deadline.map { .seconds(saturating: max(0, $0.timeIntervalSinceNow)) }
    }

    /// Options for a downstream call made for this request: same user, the same deadline,
    /// and `traceparent` propagated.
    public func downstreamOptions(timeout: Duration? = nil, attachment: Data? = nil, idempotencyKey: String? = nil) -> CallOptions {
        var propagated: [String: String] = [:]
        if let traceparent { propagated[TraceParent.key] = traceparent }
        return CallOptions(user: user, timeout: timeout, deadline: deadline, meta: propagated, idempotencyKey: idempotencyKey, attachment: attachment)
    }

    /// Calls another service for this request (user, deadline and trace propagated).
    public func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, attachment: Data? = nil) async throws(BusError) -> Response {
        try await bus.call(method, request, options: downstreamOptions(attachment: attachment))
    }
}

/// The one rule for who may call what, used by the host for each method's audience and by
/// ``RequestContext/require(_:for:)``.
enum AudienceCheck {
    /// Why `caller` may not do `what`, whose audience is `audience`; nil when it may. A request
    /// without a caller is trusted as an operator only when `trustsUnidentified` (the host's
    /// security is off), and otherwise may call only methods of audience `any`.
    static func refusal(_ audience: Audience, _ what: @autoclosure () -> String, caller: BusIdentity?, trustsUnidentified: Bool) -> BusError? {
        if audience == .any { return nil }
        guard let caller else {
            if trustsUnidentified { return nil }
            return .permissionDenied("\(what()) is for \(audience.callers) (audience \(audience.rawValue)), and the request does not say who called: the broker stamps 'caller' when it authenticates the connection")
        }
        guard audience.admits(caller.role) else {
            return .permissionDenied("\(what()) is for \(audience.callers) (audience \(audience.rawValue)); the caller is \(caller)")
        }
        return nil
    }
}
