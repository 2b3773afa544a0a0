import CZMQ
import Glibc

/// A reusable set of sockets and file descriptors for `zmq_poll`, owned by one thread.
public struct ZMQPoller {
    private var items: [zmq_pollitem_t] = []

    public init() {}

    /// Watches `socket` for incoming messages; returns the item's index.
    @discardableResult
    public mutating func add(_ socket: ZMQSocket) -> Int {
        items.append(zmq_pollitem_t(socket: socket.handle, fd: -1, events: Int16(ZMQ_POLLIN), revents: 0))
        return items.count - 1
    }

    /// Watches a plain file descriptor (an eventfd) for readability; returns the item's index.
    @discardableResult
    public mutating func add(fileDescriptor: Int32) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: Int16(ZMQ_POLLIN), revents: 0))
        return items.count - 1
    }

    /// Forgets every item.
    public mutating func removeAll() { items.removeAll(keepingCapacity: true) }

    /// Waits up to `timeoutMs` (-1 forever, 0 not at all) for any item to become readable.
    /// Returns the number of readable items; interrupted waits return 0.
    @discardableResult
    public mutating func poll(timeoutMs: Int) throws(ZMQError) -> Int {
        let count = items.count
        let result = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, Int32(count), timeoutMs) }
        if result < 0 {
            if zmq_errno() == EINTR { return 0 }
            throw .last("zmq_poll")
        }
        return Int(result)
    }

    /// Whether the item at `index` was readable after the last ``poll(timeoutMs:)``.
    public func isReadable(_ index: Int) -> Bool {
        items[index].revents & Int16(ZMQ_POLLIN) != 0
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

/// Names the calling thread as `top -H`, `perf` and `/proc` show it (the first 15 bytes).
public func nameCurrentThread(_ name: String) {
    studybus_set_thread_name(name)
}
