import Foundation
import ZMQ

/// Calls that block the calling thread until the reply, for command-line tools, scripts and
/// lockstep callers; a service uses ``Bus`` instead.
///
/// It owns its own connection to the broker, used only by the thread that calls it (it is not
/// `Sendable`), so a call is a send and a receive on that thread: no hand-over to the bus's
/// I/O thread and back, which costs two thread wake-ups per call. One call at a time; the
/// headers, deadlines, errors and size limits are those of ``Bus/call(_:_:options:)``.
///
/// ```swift
/// let client = try BlockingClient(configuration: .fromEnvironment(service: "importer"))
/// let material = try client.call(Store.getMaterial, .init(id: id), options: .init(user: "u1"))
/// ```
public final class BlockingClient {
    public let configuration: BusConfiguration
    private let context: ZMQContext
    private var socket: ZMQSocket?
    private let idPrefix = OutgoingCall.newIDPrefix()
    private var callCount: UInt64 = 0

    /// Connects to the broker of `configuration` (lazily: libzmq connects and reconnects in the
    /// background, so this succeeds whether or not the broker is up yet).
    public init(configuration: BusConfiguration) throws(BusError) {
        self.configuration = configuration
        do {
            context = try ZMQContext()
        } catch {
            throw .internal("cannot create a ZeroMQ context: \(error)")
        }
        do {
            let socket = try ZMQSocket(context: context, type: .dealer)
            try socket.set(.sendHighWaterMark, configuration.highWaterMark)
            try socket.set(.receiveHighWaterMark, configuration.highWaterMark)
            try socket.connect(configuration.rpcEndpoint)
            self.socket = socket
        } catch {
            context.terminate()
            throw .unavailable("cannot connect to the broker at \(configuration.rpcEndpoint): \(error)")
        }
    }

    deinit { close() }

    /// Closes the connection; later calls fail with `UNAVAILABLE`.
    public func close() {
        guard let socket else { return }
        socket.close()
        self.socket = nil
        context.terminate()
    }

    /// Calls `method` with `request` and returns its decoded response.
    /// - Throws: the service's ``BusError``, `DEADLINE_EXCEEDED` if no reply comes in time.
    public func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, options: CallOptions = CallOptions()) throws(BusError) -> Response {
        let reply = try callRaw(service: method.service, method: method.name, payload: try OutgoingCall.encode(request, for: method.name), options: options)
        return try OutgoingCall.decode(Response.self, from: reply, of: method.service, method.name)
    }

    /// Calls a method by name with a JSON payload; returns the reply if its code is OK.
    public func callRaw(service: String, method: String, payload: Data, options: CallOptions = CallOptions()) throws(BusError) -> RawReply {
        guard let socket else { throw .unavailable("the blocking client is closed") }
        callCount += 1
        let call = try OutgoingCall(id: idPrefix + String(callCount), service: service, method: method, payload: payload,
                                    options: options, configuration: configuration)
        do {
            guard try socket.send(call.frames, dontWait: true) else {
                throw BusError.unavailable("cannot queue the request to \(service)/\(method): no connection to the broker at \(configuration.rpcEndpoint)")
            }
            while true {
                let left = call.deadline - .now
                guard left > .zero else { throw BusError.deadlineExceeded("no reply from \(service)/\(method) before the call's deadline") }
                // Whole milliseconds, rounded up, so a wait never ends just before the deadline.
                try socket.set(.receiveTimeoutMs, Int32(clamping: (left + .microseconds(999)).wholeMilliseconds))
                guard let frames = try socket.receive() else { continue }
                // A reply to an earlier call that timed out here may still arrive: skip it.
                guard let reply = RawReply(frames: frames), reply.header.id == call.id else { continue }
                if let error = reply.header.error { throw error }
                return reply
            }
        } catch let error as BusError {
            throw error
        } catch {
            throw .unavailable("the call to \(service)/\(method) failed on the connection: \(error)")
        }
    }
}
