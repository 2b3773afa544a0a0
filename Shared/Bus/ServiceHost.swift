import Foundation
import Logging
import ServiceLifecycle
import Synchronization

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
/// Handlers run concurrently, up to `credit` at once. What they throw becomes the reply's status:
/// a ``BusError`` or ``BusErrorConvertible`` as it says, a cancellation as `CANCELLED`, anything
/// else as `INTERNAL` (logged, never sent to the caller). A request payload that does not decode
/// is `INVALID_ARGUMENT` naming the field; an unknown method is `UNIMPLEMENTED`.
public final class ServiceHost: Service, Sendable {
    public let service: String
    public let credit: Int
    private let bus: Bus
    private let logger: Logger
    private let topics: [any TopicDescriptor]
    private let routes = Mutex<[String: Route]>([:])
    private let serving = Atomic<Bool>(true)

    private struct Route: Sendable {
        let descriptor: any MethodDescriptor
        let invoke: @Sendable (Data, RequestContext) async throws -> (Data, Data?)
    }

    /// A host for `service` that publishes `topics` (listed by `_describe`).
    public init(bus: Bus, service: String, credit: Int = 64, publishes topics: [any TopicDescriptor] = [], logger: Logger? = nil) {
        precondition(credit >= 1, "credit must be at least 1")
        self.bus = bus
        self.service = service
        self.credit = credit
        self.topics = topics
        var logger = logger ?? bus.logger
        logger[metadataKey: "service"] = "\(service)"
        self.logger = logger
        handle(Reserved.health(service)) { [weak self] _, _ in
            HealthStatus(status: self?.serving.load(ordering: .relaxed) == true ? .serving : .notServing)
        }
        handle(Reserved.describe(service)) { [weak self] _, _ in
            guard let self else { throw BusError.unavailable("service is stopping") }
            return self.description
        }
    }

    /// A host for the service a contract declares, publishing the contract's topics.
    public convenience init<Contract: ServiceContract>(bus: Bus, contract: Contract, credit: Int = 64, logger: Logger? = nil) {
        self.init(bus: bus, service: Contract.serviceName, credit: credit, publishes: contract.topics, logger: logger)
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
        precondition(method.service == service, "\(method.service)/\(method.name) registered on host of \(service)")
        let route = Route(descriptor: method) { payload, context in
            let request: Request
            do {
                request = try WireCoding.decode(Request.self, from: payload)
            } catch {
                throw BusError.invalidArgument(DecodingFailure.describe(error))
            }
            let (response, attachment) = try await handler(request, context)
            return (try WireCoding.encode(response), attachment)
        }
        routes.withLock { $0[method.name] = route }
    }

    /// Sets what `_health` answers.
    public func setServing(_ isServing: Bool) {
        serving.store(isServing, ordering: .relaxed)
    }

    /// What `_describe` answers: the registered methods (reserved ones last) and the topics.
    public var description: ServiceDescription {
        let descriptors = routes.withLock { $0.values.map(\.descriptor) }
            .sorted { ($0.name.hasPrefix("_") ? 1 : 0, $0.name) < ($1.name.hasPrefix("_") ? 1 : 0, $1.name) }
        return ServiceDescription(service: service, methods: descriptors, topics: topics)
    }

    /// Registers with the broker and serves until graceful shutdown. Then it refuses new requests
    /// (`UNAVAILABLE`, so callers can retry elsewhere), finishes those in flight, and leaves.
    /// If the task is cancelled instead, it leaves at once.
    public func run() async throws {
        let workerID = bus.nextEndpointID()
        let inFlight = InFlightCounter()
        let slots = TaskSlots(count: credit)
        // Each request runs as its own task, started right from the I/O thread: one hand-over
        // instead of two through a stream and a consumer loop. These tasks are never
        // cancelled, so taking a slot cannot fail.
        try bus.addWorker(id: workerID, service: service, credit: credit) { [self] request in
            inFlight.begin()
            Task {
                try? await slots.withSlot { await serve(request, workerID: workerID) }
                inFlight.end()
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
                        loop.endpoint(workerID, as: WorkerEndpoint.self)?.startDraining()
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
        try? bus.io.submit { loop in loop.remove(workerID) }
        logger.info("stopped serving")
    }

    private func serve(_ request: InboundRequest, workerID: Int) async {
        let started = ContinuousClock.now
        let (header, payload, attachment) = await respond(to: request)
        let frames = WorkerEndpoint.replyFrames(client: request.client, header: header, payload: payload, attachment: attachment)
        try? bus.io.submit { loop in
            loop.endpoint(workerID, as: WorkerEndpoint.self)?.reply(generation: request.generation, frames: frames)
        }
        if logger.logLevel <= .debug {
            logger.debug("handled", metadata: [
                "method": "\(request.method)", "request": "\(header.id)", "code": "\(header.code.name)",
                "us": "\((ContinuousClock.now - started).wholeMicroseconds)",
            ])
        }
    }

    private func respond(to request: InboundRequest) async -> (ReplyHeader, Data, Data?) {
        let header: RequestHeader
        do {
            header = try RequestHeader.decode(request.header)
        } catch {
            return (ReplyHeader(id: "", error: error), Data(), nil)
        }
        if let deadline = header.deadline, deadline <= Date().unixMilliseconds {
            return (ReplyHeader(id: header.id, error: .deadlineExceeded("the deadline passed before \(service) started the request")), Data(), nil)
        }
        guard let route = routes.withLock({ $0[request.method] }) else {
            let error = BusError.unimplemented("service \(service) has no method '\(request.method)'; _describe lists its methods")
            return (ReplyHeader(id: header.id, error: error), Data(), nil)
        }
        let context = RequestContext(
            requestID: header.id, method: request.method, user: header.user, meta: header.meta,
            idempotencyKey: header.idem, deadline: header.deadline.map { Date(unixMilliseconds: $0) },
            attachment: request.attachment, baseLogger: logger, bus: bus)
        do {
            let (payload, attachment) = try await route.invoke(request.payload, context)
            if let tooLarge = oversized(payload: payload, attachment: attachment, method: request.method) {
                context.logger.warning("reply too large for the broker", metadata: ["error": "\(tooLarge.message)"])
                return (ReplyHeader(id: header.id, error: tooLarge), Data(), nil)
            }
            return (ReplyHeader(id: header.id), payload, attachment)
        } catch {
            return (ReplyHeader(id: header.id, error: replyError(for: error, logger: context.logger)), Data(), nil)
        }
    }

    /// A reply frame larger than the broker accepts would not reach the caller, and the
    /// broker would drop this host's connection with every request in flight on it.
    private func oversized(payload: Data, attachment: Data?, method: String) -> BusError? {
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

/// Counts the requests being handled, and lets the host wait until there are none.
final class InFlightCounter: Sendable {
    private let state = Mutex<(count: Int, waiter: CheckedContinuation<Void, Never>?)>((0, nil))

    func begin() { state.withLock { $0.count += 1 } }

    func end() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.count -= 1
            guard state.count == 0, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once no request is in flight.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                guard state.count > 0 else { return true }
                state.waiter = continuation
                return false
            }
            if idle { continuation.resume() }
        }
    }
}

extension Duration {
    /// The duration in whole microseconds.
    public var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
