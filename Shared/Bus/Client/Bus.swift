import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Traces
import Tracing
import Wire
import ZMQ

/// A process's connection to the StudyBus: calls, events, and the worker connections of the
/// services it hosts, all over sockets owned by one I/O thread.
///
/// ```swift
/// let bus = try Bus(configuration: .fromEnvironment(service: "store"), logger: logger)
/// let reply = try await bus.call(Store.getMaterial, .init(id: id), options: .init(user: "u1"))
/// try bus.publish(Store.materialCreated, material, user: "u1")
/// await bus.shutdown()
/// ```
///
/// As a `Service` it stays up until graceful shutdown and closes after the services that use it
/// (list it first in the `ServiceGroup`).
public final class Bus: Sendable {
    public let configuration: BusConfiguration
    public let logger: Logger
    let io: IOThread
    private let publishQueue: PublishQueue
    private let callIDPrefix: String
    private let callCounter = Atomic<UInt64>(0)
    private let endpointCounter = Atomic<Int>(0)

    /// Connects to the bus described by `configuration`; sockets connect lazily and libzmq
    /// reconnects them, so this succeeds whether or not the broker is up yet.
    public init(configuration: BusConfiguration, logger: Logger = Logger(label: "studybus.bus")) throws(BusError) {
        self.configuration = configuration
        self.logger = logger
        callIDPrefix = OutgoingCall.newIDPrefix()
        let context: ZMQContext
        do {
            context = try ZMQContext()
        } catch {
            throw .internal("cannot create a ZeroMQ context: \(error)")
        }
        let publishQueue = PublishQueue(source: configuration.source, instance: configuration.instance)
        self.publishQueue = publishQueue
        io = try IOThread(name: "studybus-io") { thread in
            IOLoop(thread: thread, context: context, configuration: configuration, publishQueue: publishQueue, logger: logger)
        }
    }

    /// Closes every socket (flushing briefly) and stops the I/O thread. Calls still waiting fail
    /// with `UNAVAILABLE`; anything called afterwards fails at once.
    public func shutdown() async {
        io.requestStop()
        await io.waitUntilFinished()
    }

    func nextEndpointID() -> Int {
        endpointCounter.add(1, ordering: .relaxed).newValue
    }

    // MARK: Calls

    /// Calls `method` with `request` and returns its decoded response.
    ///
    /// Like every call method here it runs on the caller's actor (`nonisolated(nonsending)`):
    /// a call from an actor does not hop to the global executor and back, which costs two
    /// thread wake-ups per call.
    /// - Throws: the service's ``BusError``, `DEADLINE_EXCEEDED` if no reply comes in time,
    ///   `UNAVAILABLE` if no worker serves the method's service.
    nonisolated(nonsending) public func call<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, options: CallOptions = CallOptions()
    ) async throws(BusError) -> Response {
        try await callWithAttachment(method, request, options: options).response
    }

    /// Like ``call(_:_:options:)``, and also returns the reply's attachment frame.
    nonisolated(nonsending) public func callWithAttachment<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, options: CallOptions = CallOptions()
    ) async throws(BusError) -> (response: Response, attachment: Data?) {
        let payload = try OutgoingCall.encode(request, for: method.name)
        let reply = try await call(service: method.service, method: method.name, payload: payload, options: options)
        return (try OutgoingCall.decode(Response.self, from: reply, of: method.service, method.name), reply.attachment)
    }

    /// Calls a method by name with a JSON payload; returns the reply if its code is OK.
    /// - Throws: the reply's status as a ``BusError`` when it is not OK.
    nonisolated(nonsending) public func callRaw(service: String, method: String, payload: Data, options: CallOptions = CallOptions()) async throws(BusError) -> RawReply {
        try await call(service: service, method: method, payload: Array(payload), options: options)
    }

    nonisolated(nonsending) private func call(service: String, method: String, payload: [UInt8], options: CallOptions) async throws(BusError) -> RawReply {
        let id = callIDPrefix + String(callCounter.add(1, ordering: .relaxed).newValue)
        if Spans.isEnabled, case let (span, traced)? = clientSpan(service: service, method: method, options: options) {
            let reply: RawReply
            do {
                reply = try await send(try OutgoingCall(id: id, service: service, method: method, payload: payload, options: traced, configuration: configuration))
            } catch {
                Spans.end(span, code: error.code, message: error.message)
                throw error
            }
            Spans.end(span, code: reply.header.code, message: reply.header.message)
            if let error = reply.header.error { throw error }
            return reply
        }
        let request = try OutgoingCall(id: id, service: service, method: method, payload: payload, options: options, configuration: configuration)
        let reply = try await send(request)
        if let error = reply.header.error { throw error }
        return reply
    }

    /// The client span of a call, a child of the `traceparent` its options carry or else of
    /// ``TraceParent/current`` (a new trace's root without either), and the options with the
    /// span's `traceparent` in `meta`, so that the service's server span is the client span's
    /// child. A call of a reserved method outside a trace gets none (nil): a consumer's
    /// periodic `_events.replay` starts no trace.
    private func clientSpan(service: String, method: String, options: CallOptions) -> (any Span, CallOptions)? {
        let parent = TraceParent.valid(options.meta[TraceParent.key]) ?? TraceParent.current
        if parent == nil && method.hasPrefix("_") { return nil }
        let span = Spans.start("\(service)/\(method)", kind: .client, parent: parent)
        span.attributes["rpc.system"] = "studybus"
        span.attributes["rpc.service"] = service
        span.attributes["rpc.method"] = method
        var options = options
        if let traceparent = Spans.traceparent(of: span) { options.meta[TraceParent.key] = traceparent }
        return (span, options)
    }

    /// Hands the request to the I/O thread and waits for its reply, deadline or cancellation.
    ///
    /// The closure passed to `withTaskCancellationHandler` refers to `isolation`, so it runs on
    /// the caller's actor too; otherwise it would be nonisolated and every call would hop to
    /// the global executor and back.
    private func send(_ request: OutgoingCall, isolation: isolated (any Actor)? = #isolation) async throws(BusError) -> RawReply {
        let io = self.io
        let call = PendingCall(id: request.id, deadline: request.deadline)
        do {
            return try await withTaskCancellationHandler {
                _ = isolation
                return try await withUnsafeThrowingContinuation { continuation in
                    guard call.install(continuation) else { return }
                    do throws(BusError) {
                        try io.submit { loop in loop.clients.send(call, request) }
                    } catch {
                        call.resolve(.failure(error))
                    }
                }
            } onCancel: {
                call.resolve(.failure(.cancelled("the call to \(request.service)/\(request.method) was cancelled")))
                try? io.submit { loop in loop.clients.forget(request.id) }
            }
        } catch let error as BusError {
            throw error
        } catch {
            throw .internal("call to \(request.service)/\(request.method) failed: \(error)")
        }
    }

    // MARK: Events

    /// Publishes `payload` on `topic`, stamped with this process's stream (`source`, `instance`,
    /// `seq`, `ts`).
    public func publish<Payload>(_ topic: Topic<Payload>, _ payload: Payload, user: String? = nil, meta: [String: String] = [:]) throws(BusError) {
        let data: Data
        do {
            data = try WireCoding.encode(payload)
        } catch {
            throw .invalidArgument("cannot encode the \(topic.name) payload: \(error)")
        }
        try publish(topic: topic.name, payload: data, user: user, meta: meta)
    }

    /// Publishes JSON bytes on a topic given by name, on this process's stream.
    /// - Throws: `INVALID_ARGUMENT` for a topic not of the protocol's form (``checkTopic(_:)``),
    ///   `RESOURCE_EXHAUSTED` for a payload (or a header, with `user` and `meta`) larger than the
    ///   broker accepts.
    public func publish(topic: String, payload: Data, user: String? = nil, meta: [String: String] = [:]) throws(BusError) {
        try Self.checkTopic(topic)
        try checkEventSize(topic, bytes: payload.count)
        let mustSend = try publishQueue.stamp(topic: topic, payload: payload, user: user, meta: TraceParent.propagated(into: meta), ts: Date().unixMilliseconds) {
            (bytes: Int) throws(BusError) in try checkEventSize(topic, bytes: bytes)
        }
        if mustSend { try sendPublished() }
    }

    /// Checks a topic's form (wire protocol §3): lowercase words of `a-z 0-9 _ -` joined by dots,
    /// two or more (`timer.completed`), not starting with `bus.`, which is the broker's own.
    /// Subscribers match topics by prefix, so a stray capital or space hides an event from them.
    public static func checkTopic(_ topic: String) throws(BusError) {
        var words = 1, wordLength = 0, valid = !topic.isEmpty
        for byte in topic.utf8 where valid {
            switch byte {
            case UInt8(ascii: "."):
                valid = wordLength > 0
                words += 1
                wordLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                wordLength += 1
            default:
                valid = false
            }
        }
        guard valid, wordLength > 0, words >= 2 else {
            throw .invalidArgument("topic '\(topic.prefix(80))' must be lowercase words of a-z 0-9 _ - joined by dots, such as timer.completed (wire protocol §3)")
        }
        guard !topic.hasPrefix("bus.") else {
            throw .invalidArgument("topic '\(topic.prefix(80))' starts with 'bus.', which is the broker's own")
        }
    }

    /// Publishes an event whose header is already stamped — a durable stream's stored event.
    /// - Throws: `RESOURCE_EXHAUSTED` for a header or payload larger than the broker accepts.
    public func publish(topic: String, header: EventHeader, payload: Data) throws(BusError) {
        let encodedHeader = header.encoded()
        try checkEventSize(topic, bytes: max(encodedHeader.count, payload.count))
        let mustSend = try publishQueue.enqueue(topic: topic, header: encodedHeader, payload: payload)
        if mustSend { try sendPublished() }
    }

    /// Refuses an event frame larger than the broker takes from publishers.
    private func checkEventSize(_ topic: String, bytes: Int) throws(BusError) {
        let limit = min(configuration.maxEventBytes, configuration.maxMessageBytes)
        guard bytes > limit else { return }
        let setting = configuration.maxEventBytes <= configuration.maxMessageBytes ? "BROKER_MAX_EVENT_BYTES" : "BROKER_MAX_MESSAGE_BYTES"
        throw BusError(
            .resourceExhausted,
            "the \(topic) event is \(bytes) bytes, more than the largest event the broker accepts (\(setting) = \(limit)); publish a reference to the data instead of the data",
            details: .object(["bytes": .int(Int64(bytes)), "limit": .int(limit), "setting": .string(setting)]))
    }

    /// Asks the I/O thread to send what waits in the publish queue; called by the publish that
    /// found the queue empty (later ones join the same send).
    private func sendPublished() throws(BusError) {
        do {
            try io.submit { loop in loop.publisher.sendQueued() }
        } catch {
            publishQueue.close()
            throw error
        }
    }

    /// Subscribes to every topic starting with one of `prefixes` (ZeroMQ prefix matching; `""`
    /// is everything). The subscription ends when its iteration ends; the iteration ends when
    /// the bus shuts down.
    public func subscribe(_ prefixes: [String]) throws(BusError) -> EventSubscription {
        let id = nextEndpointID()
        let buffer = SubscriptionBuffer(limit: configuration.subscriptionBufferLimit, byteLimit: configuration.subscriptionBufferBytes)
        let io = self.io
        let logger = self.logger
        buffer.setOnTermination { try? io.submit { loop in loop.remove(id) } }
        let prefixes = prefixes.isEmpty ? [""] : prefixes
        try io.submit { loop in
            do {
                loop.add(try SubscriberEndpoint(prefixes: prefixes, loop: loop, buffer: buffer), id: id)
            } catch {
                logger.error("cannot subscribe", metadata: ["prefixes": "\(prefixes)", "error": "\(error)"])
                buffer.finish()
            }
        }
        return EventSubscription(lifetime: SubscriptionLifetime(buffer: buffer), logger: logger)
    }

    /// Subscribes to one topic with typed payloads.
    public func subscribe<Payload>(_ topic: Topic<Payload>) throws(BusError) -> TypedSubscription<Payload> {
        TypedSubscription(base: try subscribe([topic.name]), topic: topic, logger: logger)
    }

    // MARK: Worker connections (used by ServiceHost)

    /// Registers a worker of `service` with the broker at `endpoint`.
    func addWorker(
        id: Int, service: String, credit: Int, endpoint: String, link: WorkerLink = WorkerLink(),
        deliver: @escaping @Sendable (ArrivingRequest) -> WorkerReply?
    ) throws(BusError) {
        try io.submit { loop in
            loop.add(WorkerEndpoint(service: service, credit: credit, endpoint: endpoint, link: link, loop: loop, deliver: deliver), id: id)
        }
    }
}

extension Bus: Service {
    /// Keeps the connection until graceful shutdown, then closes it.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

extension Bus: EventPublisher {}
