import Foundation
import Wire
import ZMQ

/// Calls that block the calling thread until the reply, for command-line tools, scripts, bulk
/// loads and lockstep callers; a service uses ``Bus`` instead.
///
/// It owns its own connection to the broker, used only by the thread that calls it (it is not
/// `Sendable`), so a call is a send and a receive on that thread: no hand-over to the bus's
/// I/O thread and back, which costs two thread wake-ups per call. ``call(_:_:options:)`` makes
/// one call at a time; ``callEach(_:_:inFlight:options:_:)`` keeps many in flight on the
/// connection. The headers, deadlines, errors and size limits are those of
/// ``Bus/call(_:_:options:)``. With a broker pair it calls the first broker only: it does not
/// fail over.
///
/// Its owner closes it with ``close()`` (or lets ``withBlockingClient(configuration:_:)`` do
/// it): closing terminates its ZeroMQ context, which waits for libzmq's I/O thread, so it is
/// never left to `deinit`.
///
/// ```swift
/// try withBlockingClient(configuration: .fromEnvironment(service: "importer")) { client in
///     let material = try client.call(Store.getMaterial, .init(id: id), options: .init(user: "u1"))
///     try client.callEach(Scheduler.recordReview, reviews, inFlight: 64) { index, outcome in
///         if case .failure(let error) = outcome { print("review \(index): \(error)") }
///     }
/// }
/// ```
public final class BlockingClient {
    public let configuration: BusConfiguration
    private let context: ZMQContext
    /// Read for every call. Exclusivity checks off: the client is not `Sendable`, so one thread
    /// uses it, and no access to this spans a call that touches it again.
    @exclusivity(unchecked) private var state = State()
    private let idPrefix = OutgoingCall.newIDPrefix()
    /// The reply being read: received into the same parts every time.
    private let message = ZMQMultipart()

    private struct State {
        /// The connection to the broker; nil once closed.
        var socket: ZMQSocket?
        /// Calls made so far; numbers the call ids.
        var calls: UInt64 = 0
    }

    /// Connects to the broker of `configuration` (lazily: libzmq connects and reconnects in the
    /// background, so this succeeds whether or not the broker is up yet).
    public init(configuration: BusConfiguration) throws(BusError) {
        self.configuration = configuration
        do {
            context = try ZMQContext()
        } catch {
            throw .internal("cannot create a ZeroMQ context: \(error)")
        }
        var socket: ZMQSocket?
        do {
            socket = try ZMQSocket(context: context, type: .dealer)
            if let socket { try configuration.prepare(socket) }
            try socket?.connect(broker)
            state.socket = socket
        } catch {
            // The context's termination waits for every socket of it to close.
            socket?.close()
            context.terminate()
            throw .unavailable("cannot connect to the broker at \(broker): \(error)")
        }
    }

    deinit {
        assert(state.socket == nil, "a BlockingClient must be closed by its owner (close() or withBlockingClient)")
    }

    /// Closes the connection; later calls fail with `UNAVAILABLE`. Waits until libzmq has let go
    /// of the connection (linger 0, so not for long). Closing again does nothing.
    public func close() {
        guard let socket = state.socket else { return }
        socket.close()
        state.socket = nil
        context.terminate()
    }

    /// Calls `method` with `request` and returns its decoded response.
    /// - Throws: the service's ``BusError``, `DEADLINE_EXCEEDED` if no reply comes in time.
    public func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, options: CallOptions = CallOptions()) throws(BusError) -> Response {
        try exchange(service: method.service, method: method.name, payload: try OutgoingCall.encode(request, for: method.name), options: options)
        // Decoded from the reply part itself, without copying it out first.
        return try OutgoingCall.decode(Response.self, from: message.bytes(4), of: method.service, method.name)
    }

    /// Calls a method by name with a JSON payload; returns the reply if its code is OK.
    public func callRaw(service: String, method: String, payload: Data, options: CallOptions = CallOptions()) throws(BusError) -> RawReply {
        let header = try exchange(service: service, method: method, payload: Array(payload), options: options)
        return RawReply(header: header, message: message)
    }

    /// Sends one request and waits for its OK reply, which is left in `message`.
    @discardableResult
    private func exchange(service: String, method: String, payload: [UInt8], options: CallOptions) throws(BusError) -> ReplyHeader {
        let socket = try openSocket()
        let call = try outgoing(service: service, method: method, payload: payload, options: options)
        do {
            guard try call.send(on: socket) else {
                throw notQueued(service, method)
            }
            while true {
                guard call.deadline > .now else { throw noReply(service, method) }
                // A reply to an earlier call that timed out here may still arrive: skip it.
                guard let header = try receiveReply(on: socket, until: call.deadline), header.id == call.id else { continue }
                if let error = header.error { throw error }
                return header
            }
        } catch let error as BusError {
            throw error
        } catch {
            throw .unavailable("the call to \(service)/\(method) failed on the connection: \(error)")
        }
    }

    /// Calls `method` once for each of `requests`, keeping up to `inFlight` calls outstanding on
    /// the connection at once, and hands each outcome to `handle` as its reply arrives, with
    /// the request's position in `requests`. Pipelined like this, one thread keeps a service
    /// busy (a bulk load, a replay), where one call at a time waits a round trip per request.
    ///
    /// Every call gets its own deadline from `options`; outcomes arrive in reply order, not
    /// request order. `requests` is read as calls are sent, so it may be lazy and long.
    /// - Throws: `UNAVAILABLE` if the client is closed or the connection fails; the outcomes
    ///   of calls, errors included, go to `handle`.
    public func callEach<Requests: Sequence, Response>(
        _ method: Method<Requests.Element, Response>, _ requests: Requests, inFlight: Int = 64, options: CallOptions = CallOptions(),
        _ handle: (Int, Result<Response, BusError>) -> Void
    ) throws(BusError) {
        precondition(inFlight >= 1, "inFlight must be at least 1")
        let socket = try openSocket()
        var pending = PipelinedCalls()
        var unsent = requests.makeIterator()
        var sent = 0, exhausted = false
        do {
            while true {
                while !exhausted && pending.count < inFlight {
                    guard let request = unsent.next() else {
                        exhausted = true
                        break
                    }
                    let index = sent
                    sent += 1
                    let call: OutgoingCall
                    do throws(BusError) {
                        call = try outgoing(service: method.service, method: method.name,
                                            payload: try OutgoingCall.encode(request, for: method.name), options: options)
                    } catch {
                        handle(index, .failure(error))
                        continue
                    }
                    guard try call.send(on: socket) else {
                        handle(index, .failure(notQueued(method.service, method.name)))
                        continue
                    }
                    pending.add(call, index: index)
                }
                for index in pending.removeExpired(now: .now) {
                    handle(index, .failure(noReply(method.service, method.name)))
                }
                guard let deadline = pending.earliestDeadline else {
                    if exhausted { return }
                    continue
                }
                guard let header = try receiveReply(on: socket, until: deadline), let index = pending.remove(header.id) else { continue }
                if let error = header.error {
                    handle(index, .failure(error))
                } else {
                    handle(index, Result { () throws(BusError) in try OutgoingCall.decode(Response.self, from: message.bytes(4), of: method.service, method.name) })
                }
            }
        } catch {
            throw .unavailable("calls to \(method.service)/\(method.name) failed on the connection: \(error)")
        }
    }

    /// The broker it calls: the first of a pair.
    private var broker: String { configuration.rpcEndpoints.first ?? configuration.rpcEndpoint }

    private func notQueued(_ service: String, _ method: String) -> BusError {
        .unavailable("cannot queue the request to \(service)/\(method): no connection to the broker at \(broker)")
    }

    private func noReply(_ service: String, _ method: String) -> BusError {
        .deadlineExceeded("no reply from \(service)/\(method) before the call's deadline")
    }

    private func openSocket() throws(BusError) -> ZMQSocket {
        guard let socket = state.socket else { throw .unavailable("the blocking client is closed") }
        return socket
    }

    private func outgoing(service: String, method: String, payload: [UInt8], options: CallOptions) throws(BusError) -> OutgoingCall {
        state.calls += 1
        return try OutgoingCall(id: idPrefix + String(state.calls), service: service, method: method, payload: payload,
                                options: options, configuration: configuration)
    }

    /// Waits until `deadline` for the next reply on the connection, which it leaves in `message`
    /// and returns the header of; `nil` if none came in time (or it was malformed).
    private func receiveReply(on socket: ZMQSocket, until deadline: ContinuousClock.Instant) throws(ZMQError) -> ReplyHeader? {
        let left = deadline - .now
        guard left > .zero else { return nil }
        // Whole milliseconds, rounded up, so a wait never ends just before the deadline.
        try socket.set(.receiveTimeoutMs, Int32(clamping: (left + .microseconds(999)).wholeMilliseconds))
        guard try message.receive(from: socket, dontWait: false) else { return nil }
        return message.clientReplyHeader
    }
}

/// Calls `body` with a ``BlockingClient`` connected to the broker of `configuration`, on the
/// calling thread, and closes the client when `body` returns or throws (example at
/// ``BlockingClient``).
/// - Throws: what `body` throws; `UNAVAILABLE` or `INTERNAL` if the client cannot be made.
public func withBlockingClient<T>(configuration: BusConfiguration, _ body: (BlockingClient) throws -> T) throws -> T {
    let client = try BlockingClient(configuration: configuration)
    defer { client.close() }
    return try body(client)
}

/// The calls ``BlockingClient/callEach(_:_:inFlight:options:_:)`` has outstanding: each one's
/// position by id, and their deadlines, earliest first. Calls made with the same options get
/// their deadlines nearly in the order they are sent, so a new one goes at or near the end; an
/// absolute deadline (`options.deadline`) converted to the monotonic clock can come out a little
/// earlier for a later call.
private struct PipelinedCalls {
    private var indexByID: [String: Int] = [:]
    /// Deadlines in send order; entries of answered calls stay until they reach the front.
    private var deadlines: [(deadline: ContinuousClock.Instant, id: String)] = []
    private var front = 0

    var count: Int { indexByID.count }

    mutating func add(_ call: OutgoingCall, index: Int) {
        indexByID[call.id] = index
        if front > 1024 && front * 2 > deadlines.count {
            deadlines.removeFirst(front)
            front = 0
        }
        var position = deadlines.endIndex
        while position > front && deadlines[position - 1].deadline > call.deadline { position -= 1 }
        deadlines.insert((call.deadline, call.id), at: position)
    }

    /// The call's position, if it is still outstanding.
    mutating func remove(_ id: String) -> Int? { indexByID.removeValue(forKey: id) }

    /// Forgets the calls whose deadline has passed; returns their positions.
    mutating func removeExpired(now: ContinuousClock.Instant) -> [Int] {
        var expired: [Int] = []
        while front < deadlines.count {
            let (deadline, id) = deadlines[front]
            if indexByID[id] == nil || deadline <= now {
                front += 1
                if let index = indexByID.removeValue(forKey: id) { expired.append(index) }
            } else {
                break
            }
        }
        return expired
    }

    /// The earliest deadline of a call still outstanding (after ``removeExpired(now:)``).
    var earliestDeadline: ContinuousClock.Instant? { front < deadlines.count ? deadlines[front].deadline : nil }
}
