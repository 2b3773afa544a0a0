import Foundation
import Logging
import Synchronization
import Wire
import ZMQ

/// One call waiting for its reply. Whichever comes first — the reply, the local deadline, the
/// caller's cancellation, the bus shutting down — resolves it; the others find it resolved.
/// Because the state machine guarantees a single resume, the continuation can be unchecked.
final class PendingCall: Sendable {
    private enum State {
        case created
        case waiting(UnsafeContinuation<RawReply, any Error>)
        case resolved(Result<RawReply, BusError>)
        case delivered
    }

    let id: String
    /// When the caller stops waiting, on the monotonic clock.
    let deadline: ContinuousClock.Instant
    private let state = Mutex(State.created)

    init(id: String, deadline: ContinuousClock.Instant) {
        self.id = id
        self.deadline = deadline
    }

    /// Whether a reply, deadline, cancellation or shutdown has already settled the call.
    var isSettled: Bool {
        state.withLock { state in
            switch state {
            case .created, .waiting: false
            case .resolved, .delivered: true
            }
        }
    }

    /// Installs the caller's continuation. Returns `false` (after resuming it) if the call was
    /// resolved before the caller got here, e.g. cancelled.
    func install(_ continuation: UnsafeContinuation<RawReply, any Error>) -> Bool {
        let early = state.withLock { state -> Result<RawReply, BusError>? in
            if case .resolved(let result) = state {
                state = .delivered
                return result
            }
            state = .waiting(continuation)
            return nil
        }
        guard let early else { return true }
        continuation.resume(with: early.mapError { $0 as any Error })
        return false
    }

    /// Resolves the call once; later resolutions are ignored.
    func resolve(_ result: Result<RawReply, BusError>) {
        let continuation = state.withLock { state -> UnsafeContinuation<RawReply, any Error>? in
            switch state {
            case .created:
                state = .resolved(result)
                return nil
            case .waiting(let continuation):
                state = .delivered
                return continuation
            case .resolved, .delivered:
                return nil
            }
        }
        continuation?.resume(with: result.mapError { $0 as any Error })
    }
}

/// The process's calls to its brokers: one ``ClientEndpoint`` per broker of
/// ``BusConfiguration/rpcEndpoints``. Each call goes to the first broker not lost; with one
/// broker, always to it, as before there could be more.
final class BrokerClients {
    /// In the order of the setting: the first is preferred while it answers.
    let endpoints: [ClientEndpoint]

    init(loop: IOLoop) {
        let brokers = loop.configuration.rpcEndpoints
        let watched = brokers.count > 1
        endpoints = brokers.map { ClientEndpoint(loop: loop, endpoint: $0, watchesLiveness: watched) }
    }

    /// Sends `call` through the first broker not lost, or fails it at once when every broker is.
    func send(_ call: PendingCall, _ request: OutgoingCall) {
        guard let endpoint = endpoints.first(where: { !$0.isLost }) else {
            call.resolve(.failure(.unavailable("no broker answers (BUS_RPC lists \(endpoints.map(\.endpoint).joined(separator: ", "))); retry later")))
            return
        }
        endpoint.send(call, request)
    }

    /// Forgets a call its caller gave up on, on whichever broker it went to.
    func forget(_ id: String) {
        for endpoint in endpoints { endpoint.forget(id) }
    }
}

/// A DEALER to one broker for outgoing calls, on the I/O thread. Many calls share it; replies
/// are matched by header `id`, and each call's deadline is enforced here even if nothing ever
/// answers.
///
/// With more than one broker, the endpoint also watches its broker's liveness: when nothing has
/// come from it for a heartbeat interval it asks the broker's own `_health`, and when nothing
/// has come for the liveness (`heartbeatInterval × heartbeatLiveness`) the broker is lost: the
/// calls waiting on it fail with `UNAVAILABLE` at once, since the broker that held them may
/// never answer, and new calls go to another broker until this one answers again.
final class ClientEndpoint: LoopEndpoint {
    /// The broker's request/reply endpoint.
    let endpoint: String
    /// Changed for every call. Exclusivity checks off, as for the loop's own state (see IOLoop):
    /// only the I/O thread touches it, and no access spans another.
    @exclusivity(unchecked) private var state: ClientState
    /// Whether the broker answers; nil with a single broker, which is never given up on.
    @exclusivity(unchecked) private var watch: BrokerLiveness?
    private let configuration: BusConfiguration
    private let logger: Logger
    private let probeIDPrefix = "probe-" + OutgoingCall.newIDPrefix()
    private var probesSent: UInt64 = 0
    /// The reply being read: received into the same parts every time.
    private let message = ZMQMultipart()

    init(loop: IOLoop, endpoint: String, watchesLiveness: Bool) {
        self.endpoint = endpoint
        configuration = loop.configuration
        logger = loop.logger
        var socket: ZMQSocket?
        do {
            socket = try loop.makeSocket(.dealer, connectTo: endpoint)
        } catch {
            loop.logger.error("cannot connect the bus client", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
        }
        state = ClientState(socket: socket)
        if watchesLiveness {
            watch = BrokerLiveness(now: loop.clock.now, interval: configuration.heartbeatInterval,
                                      liveness: configuration.heartbeatInterval * configuration.heartbeatLiveness)
        }
    }

    var socket: ZMQSocket? { state.socket }

    /// Whether the broker has been silent past its liveness (only when several are configured).
    var isLost: Bool { watch?.isLost ?? false }

    /// Sends a request and remembers the call until its reply or deadline.
    func send(_ call: PendingCall, _ request: OutgoingCall) {
        guard let socket = state.socket else {
            call.resolve(.failure(.unavailable("the bus client has no connection to the broker")))
            return
        }
        do {
            guard try request.send(on: socket) else {
                call.resolve(.failure(.resourceExhausted("too many requests are queued towards the broker")))
                return
            }
        } catch {
            call.resolve(.failure(.unavailable("cannot send to the broker: \(error)")))
            return
        }
        state.sent(call)
    }

    /// Forgets a call its caller gave up on.
    func forget(_ id: String) {
        _ = state.removeCall(id)
    }

    var nextDeadline: ContinuousClock.Instant? {
        guard let check = watch?.nextCheck else { return state.nextDeadline() }
        guard let callDeadline = state.nextDeadline() else { return check }
        return min(check, callDeadline)
    }

    func timerFired(now: ContinuousClock.Instant, loop: IOLoop) {
        while let call = state.removeExpired(now: now) {
            call.resolve(.failure(.deadlineExceeded("no reply before the call's deadline")))
        }
        guard var watching = watch else { return }
        defer { watch = watching }
        switch watching.timerFired(now: now) {
        case .lost:
            let calls = state.removeAll()
            logger.warning("lost the broker (no answer); calls go to another broker", metadata: [
                "broker": "\(endpoint)", "silentForMs": "\(watching.liveness.wholeMilliseconds)", "failedCalls": "\(calls.count)",
            ])
            for call in calls {
                call.resolve(.failure(.unavailable(
                    "the broker at \(endpoint) was lost before the reply came; the call may have been applied: retry with the same idempotency key")))
            }
            sendProbe()
        case .probe:
            sendProbe()
        case .none:
            break
        }
    }

    /// Asks the broker's own `_health`, so that a live broker says something within the interval.
    private func sendProbe() {
        guard let socket = state.socket else { return }
        probesSent += 1
        var options = CallOptions()
        options.timeout = configuration.heartbeatInterval * configuration.heartbeatLiveness
        guard let probe = try? OutgoingCall(id: probeIDPrefix + String(probesSent), service: BrokerProtocol.serviceName, method: "_health",
                                            payload: [], options: options, configuration: configuration)
        else { return }
        // Dropped when the socket would block: a broker that far behind is not answering anyway.
        _ = try? probe.send(on: socket)
    }

    func readable(_ loop: IOLoop) {
        guard let socket = state.socket else { return }
        for _ in 0..<IOLoop.readBatch {
            do {
                guard try message.receive(from: socket, dontWait: true) else { return }
            } catch {
                loop.logger.warning("bus client receive failed", metadata: ["error": "\(error)"])
                return
            }
            if watch?.heard(now: loop.clock.now) == true {
                logger.info("the broker answers again", metadata: ["broker": "\(endpoint)"])
            }
            guard let reply = RawReply(message) else {
                loop.logger.warning("dropping a malformed reply from the broker", metadata: ["frames": "\(message.receivedCount)"])
                continue
            }
            state.removeCall(reply.header.id)?.resolve(.success(reply))
        }
    }

    func close(loop: IOLoop) {
        let (socket, calls) = state.close()
        for call in calls {
            call.resolve(.failure(.unavailable("the bus connection shut down before the reply arrived")))
        }
        socket?.close()
    }
}

/// Whether a client's broker answers, without the I/O: it must say something (a reply, or the
/// answer to a `_health` probe) at least once per liveness.
struct BrokerLiveness {
    enum TimerAction {
        /// Silent for a heartbeat interval: ask the broker.
        case probe
        /// Silent for the liveness: the broker is lost (reported once; probing goes on).
        case lost
        case none
    }

    let interval: Duration
    let liveness: Duration
    private var lastHeard: ContinuousClock.Instant
    private var nextProbe: ContinuousClock.Instant
    private(set) var isLost = false

    /// A broker not heard yet: it has its liveness from `now` to answer.
    init(now: ContinuousClock.Instant, interval: Duration, liveness: Duration) {
        self.interval = interval
        self.liveness = liveness
        lastHeard = now
        nextProbe = now
    }

    var nextCheck: ContinuousClock.Instant {
        isLost ? nextProbe : min(nextProbe, lastHeard + liveness)
    }

    /// Something came from the broker. Returns true when it was lost until now.
    mutating func heard(now: ContinuousClock.Instant) -> Bool {
        lastHeard = now
        nextProbe = now + interval
        defer { isLost = false }
        return isLost
    }

    mutating func timerFired(now: ContinuousClock.Instant) -> TimerAction {
        if !isLost, now >= lastHeard + liveness {
            isLost = true
            nextProbe = now + interval
            return .lost
        }
        guard now >= nextProbe else { return .none }
        nextProbe = now + interval
        return .probe
    }
}

/// The client's socket and the calls sent on it that wait for a reply, by id and by deadline.
struct ClientState {
    /// The DEALER; nil if it could not be made, and once closed.
    private(set) var socket: ZMQSocket?
    private var pending: [String: PendingCall] = [:]
    /// Deadlines of the calls sent. A settled call's entry stays until it reaches the top, or
    /// until the heap is rebuilt from the calls still pending, once most of it is settled ones.
    private var deadlines = MinHeap<ContinuousClock.Instant, PendingCall>()

    init(socket: ZMQSocket?) {
        self.socket = socket
    }

    /// The request of `call` went out.
    mutating func sent(_ call: PendingCall) {
        pending[call.id] = call
        // Calls mostly settle long before their deadline: rebuilt, the heap holds only live ones,
        // so its size follows the calls in flight, not the call rate times the timeout.
        if deadlines.count >= 2 * pending.count + 1024 {
            deadlines = MinHeap(pending.values.map { ($0.deadline, $0) })
        }
        deadlines.insert(call.deadline, call)
    }

    /// The call with this id, no longer waiting here (its reply came, or its caller gave up).
    mutating func removeCall(_ id: String) -> PendingCall? {
        pending.removeValue(forKey: id)
    }

    /// The earliest deadline of a call not settled yet; drops settled calls' entries on the way.
    mutating func nextDeadline() -> ContinuousClock.Instant? {
        while let top = deadlines.minimum, top.value.isSettled {
            deadlines.removeMinimum()
        }
        return deadlines.minimum?.key
    }

    /// A call whose deadline has come by `now`, no longer waiting here; nil when there is none.
    mutating func removeExpired(now: ContinuousClock.Instant) -> PendingCall? {
        guard let top = deadlines.minimum, top.key <= now else { return nil }
        deadlines.removeMinimum()
        pending.removeValue(forKey: top.value.id)
        return top.value
    }

    /// Every call still waiting, no longer waiting here (their broker was lost).
    mutating func removeAll() -> [PendingCall] {
        defer {
            pending.removeAll()
            deadlines.removeAll()
        }
        return Array(pending.values)
    }

    /// Closes for good; returns the socket to close and the calls still waiting, to fail.
    mutating func close() -> (socket: ZMQSocket?, calls: [PendingCall]) {
        let closing = (socket, Array(pending.values))
        socket = nil
        pending.removeAll()
        deadlines.removeAll()
        return closing
    }
}
