import Foundation
import Logging
import Synchronization
import Wire
import ZMQ

/// Something on the I/O thread that owns a socket: the client, a service's worker connection,
/// the publisher, a subscription.
protocol LoopEndpoint: AnyObject {
    /// The socket to poll; `nil` while the endpoint waits to reconnect.
    var socket: ZMQSocket? { get }
    /// Reads what is waiting on the socket.
    func readable(_ loop: IOLoop)
    /// When ``timerFired(now:loop:)`` should next run, if ever.
    var nextDeadline: ContinuousClock.Instant? { get }
    /// Runs the endpoint's timed work (heartbeats, deadlines, reconnects).
    func timerFired(now: ContinuousClock.Instant, loop: IOLoop)
    /// Closes the endpoint for good (bus shutdown or removal); fails what still waits on it.
    func close(loop: IOLoop)
}

/// The state owned by the I/O thread: the context, the endpoints, the poll set. Never leaves
/// that thread.
final class IOLoop {
    let context: ZMQContext
    let configuration: BusConfiguration
    let logger: Logger
    let clock = ContinuousClock()
    private unowned let thread: IOThread
    // Read and changed on every pass of the loop, as each endpoint's state is for every message.
    // Swift's dynamic exclusivity checks on these would be a large share of the work of a
    // message, so they are off: each lives on the I/O thread only, and no access to it spans a
    // call that touches it again (the compiler's static checks still apply).
    @exclusivity(unchecked) private var registry = Registry()
    private var lazyClients: BrokerClients?
    private var lazyPublisher: PublisherEndpoint?
    private let publishQueue: PublishQueue

    /// Messages read from one socket per wake-up before the others get a turn.
    static let readBatch = 512

    private struct Registry {
        var endpoints: [Int: any LoopEndpoint] = [:]
        /// The endpoints in a stable array, rebuilt when one is added or removed.
        var list: [any LoopEndpoint] = []
        /// Whether the poll set must be rebuilt before the next poll.
        var pollSetChanged = true
    }

    init(thread: IOThread, context: ZMQContext, configuration: BusConfiguration, publishQueue: PublishQueue, logger: Logger) {
        self.thread = thread
        self.publishQueue = publishQueue
        self.context = context
        self.configuration = configuration
        self.logger = logger
    }

    /// The process's client connections, one per broker, made on first use.
    var clients: BrokerClients {
        if let lazyClients { return lazyClients }
        let clients = BrokerClients(loop: self)
        lazyClients = clients
        // Negative ids are the loop's own endpoints; the publisher has -2.
        for (index, endpoint) in clients.endpoints.enumerated() { add(endpoint, id: index == 0 ? -1 : -10 - index) }
        return clients
    }

    /// The process's one publisher connection, made on first use.
    var publisher: PublisherEndpoint {
        if let lazyPublisher { return lazyPublisher }
        let publisher = PublisherEndpoint(loop: self, queue: publishQueue)
        lazyPublisher = publisher
        add(publisher, id: -2)
        return publisher
    }

    func add(_ endpoint: any LoopEndpoint, id: Int) {
        registry.endpoints[id] = endpoint
        registry.list = Array(registry.endpoints.values)
        registry.pollSetChanged = true
    }

    func endpoint<T: LoopEndpoint>(_ id: Int, as type: T.Type) -> T? {
        registry.endpoints[id] as? T
    }

    func remove(_ id: Int) {
        guard let endpoint = registry.endpoints.removeValue(forKey: id) else { return }
        registry.list = Array(registry.endpoints.values)
        endpoint.close(loop: self)
        registry.pollSetChanged = true
    }

    /// Call when an endpoint replaced or dropped its socket.
    func socketsChanged() { registry.pollSetChanged = true }

    func run() {
        var poller = ZMQPoller()
        var polled: [any LoopEndpoint] = []
        var commands: [LoopCommand] = []
        while true {
            let keepRunning = thread.takeCommands(into: &commands)
            for command in commands { command(self) }
            commands.removeAll(keepingCapacity: true)
            guard keepRunning else { break }

            if registry.pollSetChanged {
                poller.removeAll()
                poller.add(fileDescriptor: thread.wakeup.fileDescriptor)
                polled = registry.list.filter { $0.socket != nil }
                for endpoint in polled { poller.add(endpoint.socket!) }
                registry.pollSetChanged = false
            }

            var timeoutMs = -1
            let now = clock.now
            for endpoint in registry.list {
                guard let deadline = endpoint.nextDeadline else { continue }
                let wait = deadline <= now ? 0 : Int((deadline - now).wholeMilliseconds)
                timeoutMs = timeoutMs < 0 ? wait : min(timeoutMs, wait)
            }

            let blocking = timeoutMs != 0 && thread.prepareToSleep()
            do {
                defer { if blocking { thread.awoke() } }
                try poller.poll(timeoutMs: blocking ? timeoutMs : 0)
            } catch {
                logger.critical("bus I/O poll failed; stopping the bus connection", metadata: ["error": "\(error)"])
                thread.requestStop()
                continue
            }
            if poller.isReadable(0) { thread.wakeup.drain() }
            if !registry.pollSetChanged {
                for (index, endpoint) in polled.enumerated() where poller.isReadable(index + 1) {
                    endpoint.readable(self)
                }
            }
            let afterPoll = clock.now
            for endpoint in registry.list {
                if let deadline = endpoint.nextDeadline, deadline <= afterPoll {
                    endpoint.timerFired(now: afterPoll, loop: self)
                }
            }
        }
        for endpoint in registry.endpoints.values { endpoint.close(loop: self) }
        registry.endpoints.removeAll()
        context.terminate()
        thread.wakeup.close()
    }

    /// Makes a socket with the bus's common options (CURVE towards the broker with security on).
    func makeSocket(_ type: ZMQSocketType, connectTo endpoint: String) throws(ZMQError) -> ZMQSocket {
        try makeSocket(type, connectTo: [endpoint])
    }

    /// Makes a socket connected to every one of `endpoints` (a publisher or subscriber of a
    /// broker pair).
    func makeSocket(_ type: ZMQSocketType, connectTo endpoints: [String]) throws(ZMQError) -> ZMQSocket {
        let socket = try ZMQSocket(context: context, type: type)
        do {
            try configuration.prepare(socket)
            for endpoint in endpoints { try socket.connect(endpoint) }
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Closes `socket`, letting it flush queued messages for at most the shutdown linger.
    func closeFlushing(_ socket: ZMQSocket) {
        try? socket.set(ZMQIntOption.linger, Int32(clamping: configuration.shutdownLinger.wholeMilliseconds))
        socket.close()
    }
}
