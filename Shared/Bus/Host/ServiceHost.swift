import CoreMetrics
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Traces
import Tracing
import Wire

/// Serves a service's methods on the bus: the 7/MDP worker side with credit, typed handlers
/// registered against the contract's descriptors, and the reserved `_health` and `_describe`.
///
/// ```swift
/// let host = ServiceHost(bus: bus, contract: Store, credit: 64, logger: logger)
/// host.handle(Store.getMaterial) { request, context in
///     try await repository.material(id: request.id, user: try context.requireUser())
/// }
/// // then run it in a ServiceGroup after the bus
/// ```
///
/// Handlers run concurrently as tasks, up to `credit` at once. A handler that only computes for a
/// few microseconds (no I/O, no locks held long, no awaiting) can instead be registered with
/// ``handleOnIOThread(_:_:)``: it runs on the bus's I/O thread the moment its request is read and
/// its reply is sent from there, which saves two thread wake-ups per call. `_health` is served
/// that way; `_describe`, whose answer lists every method's shapes, as a task.
///
/// What handlers throw becomes the reply's status:
/// a ``BusError`` or ``BusErrorConvertible`` as it says, a cancellation as `CANCELLED`, anything
/// else as `INTERNAL` (logged, never sent to the caller). A request payload that does not decode,
/// or a header `user` that is not a user id (``RequestHeader/checkUser(_:)``), is
/// `INVALID_ARGUMENT` naming the field; an unknown method is `UNIMPLEMENTED`.
///
/// Before a handler runs, the host checks the request's `caller` (stamped by the broker) against
/// the method's ``Audience``: a caller whose role the audience does not admit, or a `user` key
/// asking for another user, is `PERMISSION_DENIED`. A request without `caller` may call only
/// `_health` and `_describe`, unless the host's own `BUS_SECURITY` is off: then it is trusted as
/// an operator, as every request was before the bus had keys.
///
/// Every answer is counted per method and status code, with its latency
/// (`studybus_requests_total`, `studybus_request_duration_seconds`), through the metrics factory
/// given or swift-metrics' bootstrapped one; with the no-op factory nothing is recorded.
///
/// While the process traces (``Spans/isEnabled``), each request is also a server span
/// `service/method`, a child of the request's `traceparent` (or a new trace's root), from the
/// moment it is read until its reply: `rpc.service`, `rpc.method` and the reply's status code
/// as attributes, an error status unless OK. The handler's calls and events then name that span
/// as their parent. A reserved method (`_health`, `_events.replay`, …) gets a span only when its
/// request belongs to a trace already: health checks and catch-up ticks start no traces.
public final class ServiceHost: Service, Sendable {
    public let service: String
    public let credit: Int
    private let bus: Bus
    private let logger: Logger
    private let topics: [any TopicDescriptor]
    private let routes = Mutex<[String: Route]>([:])
    private let serving = Atomic<Bool>(true)
    /// Whether each broker (of ``BusConfiguration/rpcEndpoints``, in order) has answered this
    /// host's current worker connection to it.
    private let links: [WorkerLink]
    private let metrics: HostMetrics?
    /// Whether a request without `caller` is trusted as an operator: only when this process's
    /// own `BUS_SECURITY` is off.
    private let trustsUnidentifiedCallers: Bool

    private struct Route: Sendable {
        /// Each gets the request payload and returns the reply payload and attachment. An
        /// I/O-thread handler reads the payload where it arrived; a task gets a copy.
        enum Invoke: Sendable {
            case task(@Sendable (Data, RequestContext) async throws -> ([UInt8], Data?))
            case ioThread(@Sendable (UnsafeRawBufferPointer, RequestContext) throws -> ([UInt8], Data?))
        }
        let descriptor: any MethodDescriptor
        let invoke: Invoke
    }

    /// A request read and checked on the I/O thread: either answered already (an error, or an
    /// I/O-thread handler's reply) or to be served by a task.
    private enum Intake {
        case answered(WorkerReply)
        /// The handler, its context and, while tracing, the request's server span.
        case task(@Sendable (Data, RequestContext) async throws -> ([UInt8], Data?), RequestContext, (any Span)?)
    }

    /// A host for `service` that publishes `topics` (listed by `_describe`); its request metrics
    /// go through `metrics`, by default swift-metrics' bootstrapped factory.
    public init(
        bus: Bus, service: String, credit: Int = 64, publishes topics: [any TopicDescriptor] = [], logger: Logger? = nil,
        metrics: (any MetricsFactory)? = nil
    ) {
        precondition(credit >= 1, "credit must be at least 1")
        self.bus = bus
        self.service = service
        self.credit = credit
        self.topics = topics
        links = bus.configuration.rpcEndpoints.map { _ in WorkerLink() }
        self.metrics = HostMetrics.make(service: service, factory: metrics ?? MetricsSystem.factory)
        trustsUnidentifiedCallers = bus.configuration.security == .off
        var logger = logger ?? bus.logger
        logger[metadataKey: "service"] = "\(service)"
        self.logger = logger
        handleOnIOThread(Reserved.health(service)) { [weak self] _, _ in
            HealthStatus(status: self?.serving.load(ordering: .relaxed) == true ? .serving : .notServing, build: BuildInfo.stamp)
        }
        handle(Reserved.describe(service)) { [weak self] _, _ in
            guard let self else { throw BusError.unavailable("service is stopping") }
            return self.description
        }
    }

    /// A host for the service a contract declares, publishing the contract's topics.
    public convenience init<Contract: ServiceContract>(
        bus: Bus, contract: Contract, credit: Int = 64, logger: Logger? = nil, metrics: (any MetricsFactory)? = nil
    ) {
        self.init(bus: bus, service: Contract.serviceName, credit: credit, publishes: contract.topics, logger: logger, metrics: metrics)
    }

    /// Registers the handler of `method`; replaces an earlier one.
    public func handle<Request, Response>(
        _ method: Method<Request, Response>, _ handler: @escaping @Sendable (Request, RequestContext) async throws -> Response
    ) {
        handle(method, withAttachment: { request, context in (try await handler(request, context), nil) })
    }

    /// Registers a handler that also returns an attachment frame (large exports, files).
    public func handle<Request, Response>(
        _ method: Method<Request, Response>,
        withAttachment handler: @escaping @Sendable (Request, RequestContext) async throws -> (Response, Data?)
    ) {
        register(method, .task { payload, context in
            let request = try payload.withUnsafeBytes { payload in try Self.decode(Request.self, payload) }
            let (response, attachment) = try await handler(request, context)
            return (try WireCoding.encodeBytes(response), attachment)
        })
    }

    /// Registers a handler that runs on the bus's I/O thread, as soon as its request is read.
    /// It must return within microseconds and never block: while it runs, no socket of this
    /// process is served. It does not take one of the host's slots.
    public func handleOnIOThread<Request, Response>(
        _ method: Method<Request, Response>, _ handler: @escaping @Sendable (Request, RequestContext) throws -> Response
    ) {
        register(method, .ioThread { payload, context in
            (try WireCoding.encodeBytes(try handler(try Self.decode(Request.self, payload), context)), nil)
        })
    }

    private func register(_ method: any MethodDescriptor, _ invoke: Route.Invoke) {
        precondition(method.service == service, "\(method.service)/\(method.name) registered on host of \(service)")
        routes.withLock { $0[method.name] = Route(descriptor: method, invoke: invoke) }
        metrics?.register(method.name)
    }

    private static func decode<Request: Decodable>(_ type: Request.Type, _ payload: UnsafeRawBufferPointer) throws -> Request {
        do {
            return try WireCoding.decode(type, from: payload)
        } catch {
            throw BusError.invalidArgument(DecodingFailure.describe(error))
        }
    }

    /// Sets what `_health` answers.
    public func setServing(_ isServing: Bool) {
        serving.store(isServing, ordering: .relaxed)
    }

    /// Whether the host takes new requests: false once it drains.
    public var isServing: Bool { serving.load(ordering: .relaxed) }

    /// Whether a broker answers this host's worker connection: it has sent a heartbeat or a
    /// request since the connection was made, and has not been silent too long since. With a
    /// broker pair, one of them is enough: callers reach the host through it.
    public var isRegistered: Bool { links.contains { $0.isAnswered } }

    /// The broker endpoint the host registers with (a comma-separated list for a broker pair).
    public var busEndpoint: String { bus.configuration.rpcEndpoint }

    /// What `_describe` answers: the registered methods (reserved ones last) and the topics.
    public var description: ServiceDescription {
        let descriptors = routes.withLock { $0.values.map(\.descriptor) }
            .sorted { ($0.name.hasPrefix("_") ? 1 : 0, $0.name) < ($1.name.hasPrefix("_") ? 1 : 0, $1.name) }
        return ServiceDescription(service: service, methods: descriptors, topics: topics, build: BuildInfo.stamp)
    }

    /// Registers with the broker and serves until graceful shutdown. Then it refuses new requests
    /// (`UNAVAILABLE`, so callers can retry elsewhere), finishes those in flight, and leaves.
    /// If the task is cancelled instead, it leaves at once.
    public func run() async throws {
        let workerIDs = links.map { _ in bus.nextEndpointID() }
        let inFlight = InFlightCounter()
        // One set of slots for every broker's connection: each broker grants the whole credit,
        // and the process still runs at most `credit` handlers at once.
        let slots = TaskSlots(count: credit)
        for ((endpoint, link), workerID) in zip(zip(bus.configuration.rpcEndpoints, links), workerIDs) {
            try bus.addWorker(id: workerID, service: service, credit: credit, endpoint: endpoint, link: link) { [self] request in
                deliver(request, replyingThrough: workerID, inFlight: inFlight, slots: slots)
            }
        }
        logger.info("serving", metadata: [
            "credit": "\(credit)", "broker": "\(bus.configuration.rpcEndpoint)",
            "methods": "\(routes.withLock { $0.count })",
        ])
        do {
            try await gracefulShutdown()
            setServing(false)
            logger.info("draining: refusing new requests, finishing those in flight")
            await withCheckedContinuation { (refusing: CheckedContinuation<Void, Never>) in
                do {
                    try bus.io.submit { loop in
                        for workerID in workerIDs { loop.endpoint(workerID, as: WorkerEndpoint.self)?.startDraining() }
                        refusing.resume()
                    }
                } catch {
                    refusing.resume()
                }
            }
            await inFlight.drained()
        } catch {
            setServing(false)
        }
        try? bus.io.submit { loop in
            for workerID in workerIDs { loop.remove(workerID) }
        }
        logger.info("stopped serving")
    }

    /// On the I/O thread: a request is checked there, and answered there if it can be.
    /// Otherwise it runs as its own task, started right from that thread, so that it changes
    /// threads only once; its reply goes back through the worker connection `workerID` it came
    /// on. These tasks are never cancelled, so taking a slot cannot fail.
    private func deliver(_ request: ArrivingRequest, replyingThrough workerID: Int, inFlight: InFlightCounter, slots: TaskSlots) -> WorkerReply? {
        // Timed only for metrics and the debug log: a clock read is not free on a path of
        // microseconds.
        let started = metrics != nil || debugLogging ? ContinuousClock.now : nil
        switch intake(request) {
        case .answered(let reply):
            if let started { handled(request.method, reply.header, since: started) }
            return reply
        case .task(let invoke, let context, let span):
            let generation = request.generation, client = request.client, payload = Data(request.payload)
            inFlight.begin()
            metrics?.inFlight.increment()
            Task {
                try? await slots.withSlot {
                    let reply = if let span {
                        await InstrumentationContext.$current.withValue(span.context) { await answer(context) { try await invoke(payload, context) } }
                    } else {
                        await answer(context) { try await invoke(payload, context) }
                    }
                    try? bus.io.submit { loop in
                        loop.endpoint(workerID, as: WorkerEndpoint.self)?.reply(generation: generation, client: client, reply)
                    }
                    if let span { Spans.end(span, code: reply.header.code, message: reply.header.message) }
                    if let started { handled(context.method, reply.header, since: started) }
                }
                metrics?.inFlight.decrement()
                inFlight.end()
            }
            return nil
        }
    }

    private var debugLogging: Bool { logger.logLevel <= .debug }

    private func handled(_ method: String, _ header: ReplyHeader, since started: ContinuousClock.Instant) {
        metrics?.record(method, header.code, since: started)
        guard debugLogging else { return }
        logger.debug("handled", metadata: [
            "method": "\(method)", "request": "\(header.id)", "code": "\(header.code.name)",
            "us": "\((ContinuousClock.now - started).wholeMicroseconds)",
        ])
    }

    /// Reads the request's header and finds its route; answers errors, and runs an I/O-thread
    /// handler, at once.
    private func intake(_ request: ArrivingRequest) -> Intake {
        let header: RequestHeader
        do {
            header = try RequestHeader.decode(bytes: request.header)
        } catch {
            return .answered(.failure(RequestHeader.idOfRefused(bytes: request.header) ?? "", error))
        }
        do {
            try header.checkUser()
        } catch {
            return .answered(.failure(header.id, error))
        }
        let method = request.method
        var user = header.user
        if let caller = header.caller, caller.role == .user {
            // A user key acts for its own user only.
            if let user, user != caller.name {
                return .answered(.failure(header.id, .permissionDenied("the caller is user '\(caller.name ?? "")' and may not act for user '\(user)'")))
            }
            user = caller.name
        }
        var context = RequestContext(
            requestID: header.id, method: method, user: user, caller: header.caller, trustsUnidentifiedCallers: trustsUnidentifiedCallers,
            meta: header.meta, traceparent: TraceParent.valid(header.meta[TraceParent.key]), idempotencyKey: header.idem, deadline: header.deadline.map { Date(unixMilliseconds: $0) },
            attachment: request.attachment, baseLogger: logger, bus: bus)
        guard Spans.isEnabled, let span = serverSpan(&context) else { return dispatch(request, context, span: nil) }
        let intake = dispatch(request, context, span: span)
        if case .answered(let reply) = intake { Spans.end(span, code: reply.header.code, message: reply.header.message) }
        return intake
    }

    /// The server span of a traced request, with `context` moved into it (its `traceparent`
    /// now names the span); nil for a reserved method outside a trace.
    private func serverSpan(_ context: inout RequestContext) -> (any Span)? {
        if context.traceparent == nil && context.method.hasPrefix("_") { return nil }
        let span = Spans.start("\(service)/\(context.method)", kind: .server, parent: context.traceparent)
        span.attributes["rpc.system"] = "studybus"
        span.attributes["rpc.service"] = service
        span.attributes["rpc.method"] = context.method
        if let traceparent = Spans.traceparent(of: span) { context.traceparent = traceparent }
        return span
    }

    /// Routes a request whose header was read: answers errors, and runs an I/O-thread handler,
    /// at once; a task handler is returned to run.
    private func dispatch(_ request: ArrivingRequest, _ context: RequestContext, span: (any Span)?) -> Intake {
        let method = context.method
        if let late = startedTooLate(context) { return .answered(late) }
        guard let route = routes.withLock({ $0[method] }) else {
            return .answered(.failure(context.requestID, .unimplemented("service \(service) has no method '\(method)'; _describe lists its methods")))
        }
        let audience = route.descriptor.audience
        if let refusal = AudienceCheck.refusal(audience, "\(service)/\(method)", caller: context.caller, trustsUnidentified: trustsUnidentifiedCallers) {
            return .answered(.failure(context.requestID, refusal))
        }
        switch route.invoke {
        case .task(let invoke):
            return .task(invoke, context, span)
        case .ioThread(let invoke):
            guard let traceparent = context.traceparent else { return .answered(reply(context, Result { try invoke(request.payload, context) })) }
            return .answered(reply(context, TraceParent.$current.withValue(traceparent) { Result { try invoke(request.payload, context) } }))
        }
    }

    /// DEADLINE_EXCEEDED if the request's deadline passed before its handler started.
    private func startedTooLate(_ context: RequestContext) -> WorkerReply? {
        guard let deadline = context.deadline, deadline <= Date() else { return nil }
        return .failure(context.requestID, .deadlineExceeded("the deadline passed before \(service) started the request"))
    }

    /// Runs a task handler, unless the request's deadline passed while it waited for a slot.
    private func answer(_ context: RequestContext, _ invoke: () async throws -> ([UInt8], Data?)) async -> WorkerReply {
        if let late = startedTooLate(context) { return late }
        do {
            guard let traceparent = context.traceparent else { return reply(context, .success(try await invoke())) }
            return reply(context, .success(try await TraceParent.$current.withValue(traceparent) { try await invoke() }))
        } catch {
            return reply(context, .failure(error))
        }
    }

    /// The reply to a handler's outcome: its payload, or the status its error maps to.
    private func reply(_ context: RequestContext, _ outcome: Result<([UInt8], Data?), any Error>) -> WorkerReply {
        switch outcome {
        case .success(let (payload, attachment)):
            if let tooLarge = oversized(payload: payload, attachment: attachment, method: context.method) {
                context.logger.warning("reply too large for the broker", metadata: ["error": "\(tooLarge.message)"])
                return .failure(context.requestID, tooLarge)
            }
            return WorkerReply(header: ReplyHeader(id: context.requestID), payload: payload, attachment: attachment)
        case .failure(let error):
            return .failure(context.requestID, replyError(for: error, logger: context.logger))
        }
    }

    /// A reply frame larger than the broker accepts would not reach the caller, and the
    /// broker would drop this host's connection with every request in flight on it.
    private func oversized(payload: [UInt8], attachment: Data?, method: String) -> BusError? {
        let limit = bus.configuration.maxMessageBytes
        let bytes = max(payload.count, attachment?.count ?? 0)
        guard bytes > limit else { return nil }
        return .messageTooLarge("the reply of \(service)/\(method)", bytes: bytes, limit: limit,
                                advice: "ask for less at once (filters, paging) or raise the limit for the broker and \(service)")
    }

    private func replyError(for error: any Error, logger: Logger) -> BusError {
        switch error {
        case let error as BusError:
            return error
        case let error as any BusErrorConvertible:
            return error.busError
        case is CancellationError:
            return .cancelled("the request was cancelled")
        default:
            logger.error("handler failed", metadata: ["error": "\(String(reflecting: error))"])
            return .internal("internal error in \(service); the service log has the details")
        }
    }
}
