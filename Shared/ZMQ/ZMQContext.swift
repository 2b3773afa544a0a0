import CZMQ

/// A libzmq context. libzmq documents contexts as thread-safe; sockets made from it are not.
///
/// Terminate it explicitly with ``terminate()`` after every socket is closed — never from a
/// `deinit`, because `zmq_ctx_term` blocks until all sockets are closed.
public final class ZMQContext: @unchecked Sendable {
    // @unchecked: the only state is the libzmq context pointer, which libzmq makes thread-safe.
    let handle: UnsafeMutableRawPointer

    /// Creates a context with `ioThreads` libzmq I/O threads.
    public init(ioThreads: Int32 = 1) throws(ZMQError) {
        guard let handle = zmq_ctx_new() else { throw .last("zmq_ctx_new") }
        zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads)
        // Never block process exit on unsent messages; every socket also sets LINGER 0.
        zmq_ctx_set(handle, ZMQ_BLOCKY, 0)
        self.handle = handle
    }

    /// Terminates the context; call once, after every socket made from it is closed.
    public func terminate() {
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    /// The libzmq version, as `major.minor.patch`.
    public static var libraryVersion: String {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }
}
