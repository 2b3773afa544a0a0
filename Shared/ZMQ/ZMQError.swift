import CZMQ

/// A libzmq call failed; carries the `errno` libzmq reported and the operation that failed.
public struct ZMQError: Error, CustomStringConvertible, Sendable {
    /// The `errno` value (`zmq_errno()`) at the time of the failure.
    public let code: Int32
    /// What was being done, e.g. `connect tcp://127.0.0.1:5555`.
    public let operation: String

    /// The `errno` libzmq uses when a non-blocking call would block.
    public static let wouldBlock = EAGAIN
    /// The `errno` libzmq uses for an interrupted call.
    public static let interrupted = EINTR
    /// The `errno` libzmq uses once its context is terminated.
    public static let terminated = ETERM
    /// The `errno` a ROUTER with `ZMQ_ROUTER_MANDATORY` uses for an unknown peer.
    public static let hostUnreachable = EHOSTUNREACH

    static func last(_ operation: @autoclosure () -> String) -> ZMQError {
        ZMQError(code: zmq_errno(), operation: operation())
    }

    public var description: String {
        "\(operation): \(String(cString: zmq_strerror(code)))"
    }
}
