import CZMQ
import Glibc

/// A reusable set of sockets and file descriptors to wait on, owned by one thread.
///
/// It does what `zmq_poll` does with fewer system calls. `zmq_poll` asks every socket for its
/// events before and after it blocks, and each asking reads the socket's command mailbox with a
/// `poll` of its own (and a `getpid`); it also polls once without waiting before it polls with
/// the timeout: nine calls per wake-up for the broker's three sockets. Here a socket is asked
/// only if something happened on it since it last reported nothing waiting (see
/// ``ZMQSocket/mayHaveEvents``), and otherwise its `ZMQ_FD` is polled with the raw descriptors in
/// one `poll`: a socket whose descriptor fires is reported readable, and reading it (which
/// processes its commands) finds the messages or `EAGAIN`.
public struct ZMQPoller {
    /// Each item's socket; nil for a plain descriptor.
    private var sockets: [ZMQSocket?] = []
    private var descriptors: [pollfd] = []
    private var readable: [Bool] = []

    public init() {}

    /// Watches `socket` for incoming messages; returns the item's index.
    @discardableResult
    public mutating func add(_ socket: ZMQSocket) -> Int {
        sockets.append(socket)
        descriptors.append(pollfd(fd: socket.eventDescriptor, events: Int16(POLLIN), revents: 0))
        readable.append(false)
        return sockets.count - 1
    }

    /// Watches a plain file descriptor (an eventfd) for readability; returns the item's index.
    @discardableResult
    public mutating func add(fileDescriptor: Int32) -> Int {
        sockets.append(nil)
        descriptors.append(pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0))
        readable.append(false)
        return sockets.count - 1
    }

    /// Forgets every item.
    public mutating func removeAll() {
        sockets.removeAll(keepingCapacity: true)
        descriptors.removeAll(keepingCapacity: true)
        readable.removeAll(keepingCapacity: true)
    }

    /// Waits up to `timeoutMs` (-1 forever, 0 not at all) for any item to become readable.
    /// Returns the number of readable items; interrupted waits return 0.
    @discardableResult
    public mutating func poll(timeoutMs: Int) throws(ZMQError) -> Int {
        var count = 0
        for index in sockets.indices {
            readable[index] = false
            guard let socket = sockets[index], socket.mayHaveEvents else { continue }
            if try socket.hasMessageWaiting() {
                readable[index] = true
                count += 1
            }
        }
        // A socket has a message: take it now; descriptors are looked at on the next wait.
        guard count == 0 else { return count }
        let result = descriptors.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), Int32(clamping: timeoutMs)) }
        if result < 0 {
            if errno == EINTR { return 0 }
            throw ZMQError(code: errno, operation: "poll")
        }
        for index in descriptors.indices where descriptors[index].revents != 0 {
            readable[index] = true
            count += 1
        }
        return count
    }

    /// Whether the item at `index` was readable after the last ``poll(timeoutMs:)``.
    public func isReadable(_ index: Int) -> Bool {
        readable[index]
    }
}

/// A non-blocking eventfd: the way other threads wake a thread that waits in `zmq_poll`.
public struct EventFD: Sendable {
    /// The descriptor; add it to a ``ZMQPoller``.
    public let fileDescriptor: Int32

    public init() throws(ZMQError) {
        let fd = studybus_eventfd_create()
        guard fd >= 0 else { throw ZMQError(code: errno, operation: "eventfd") }
        fileDescriptor = fd
    }

    /// Makes the descriptor readable (safe from any thread).
    public func signal() { _ = studybus_eventfd_signal(fileDescriptor) }

    /// Resets the descriptor after it became readable.
    public func drain() { _ = studybus_eventfd_drain(fileDescriptor) }

    /// Closes the descriptor.
    public func close() { _ = Glibc.close(fileDescriptor) }
}

/// Blocks every signal on the calling thread, so that only the threads Swift's runtime and
/// swift-service-lifecycle own receive SIGTERM and SIGINT.
public func blockAllSignalsOnCurrentThread() {
    studybus_block_all_signals()
}
