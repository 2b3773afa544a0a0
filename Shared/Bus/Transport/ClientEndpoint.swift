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

/// The process's DEALER to the broker for outgoing calls, on the I/O thread. Many calls share it;
/// replies are matched by header `id`, and each call's deadline is enforced here even if nothing
/// ever answers.
final class ClientEndpoint: LoopEndpoint {
    /// Changed for every call. Exclusivity checks off, as for the loop's own state (see IOLoop):
    /// only the I/O thread touches it, and no access spans another.
    @exclusivity(unchecked) private var state: ClientState
    /// The reply being read: received into the same parts every time.
    private let message = ZMQMultipart()

    init(loop: IOLoop) {
        var socket: ZMQSocket?
        do {
            socket = try loop.makeSocket(.dealer, connectTo: loop.configuration.rpcEndpoint)
        } catch {
            loop.logger.error("cannot connect the bus client", metadata: ["endpoint": "\(loop.configuration.rpcEndpoint)", "error": "\(error)"])
        }
        state = ClientState(socket: socket)
    }

    var socket: ZMQSocket? { state.socket }

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

    var nextDeadline: ContinuousClock.Instant? { state.nextDeadline() }

    func timerFired(now: ContinuousClock.Instant, loop: IOLoop) {
        while let call = state.removeExpired(now: now) {
            call.resolve(.failure(.deadlineExceeded("no reply before the call's deadline")))
        }
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

    /// Closes for good; returns the socket to close and the calls still waiting, to fail.
    mutating func close() -> (socket: ZMQSocket?, calls: [PendingCall]) {
        let closing = (socket, Array(pending.values))
        socket = nil
        pending.removeAll()
        deadlines.removeAll()
        return closing
    }
}
