import Bus
import Foundation
import Logging
import Wire
import ZMQ

/// The broker's state and its single synchronous poll loop. Lives on the broker thread only.
final class BrokerLoop {
    let configuration: BrokerConfiguration
    let logger: Logger
    let clock = ContinuousClock()
    private let context: ZMQContext
    let router: ZMQSocket
    private let xsub: ZMQSocket
    let xpub: ZMQSocket
    /// The ZAP handler (RFC 27) that checks each CURVE handshake against the allowlist; nil
    /// while security is off.
    let zap: ZMQSocket?
    private let forwardFrame = ZMQFrame(Data())
    /// The message being routed: received into, and sent on from, the same parts every time.
    let message = ZMQMultipart()
    /// How long a worker may stay silent before it is removed.
    let workerLiveness: Duration

    // The routing state is read and changed for every message. Its dynamic exclusivity checks
    // are off: only the broker thread touches it, and no access to one of these spans a call
    // that touches the same one again (the static checks still apply).
    @exclusivity(unchecked) var services: [String: ServiceRecord] = [:]
    @exclusivity(unchecked) var workers: [Data: WorkerRecord] = [:]
    @exclusivity(unchecked) var tracer: RPCTracer
    /// Clients with requests not answered yet.
    @exclusivity(unchecked) var clients: [Data: ClientRecord] = [:]
    /// Bytes of requests waiting in service queues, all clients together.
    @exclusivity(unchecked) var queuedBytes = 0
    @exclusivity(unchecked) var slowConsumers = SlowConsumers()
    /// Who may do what: nil while security is off, when every peer may do everything.
    @exclusivity(unchecked) var access: BrokerAccess?
    @exclusivity(unchecked) var refusals = Refusals()
    /// Clients cut off during the current pass of the loop, whose queued requests are dropped
    /// after it (not while the code that found them is walking a queue).
    private var clientsCutOff: [Data] = []
    private var nextHeartbeat: ContinuousClock.Instant
    /// The broker's `_health` questions to workers so far (their ids).
    var probesSent = 0
    var malformedReports = RateLimitedReport(interval: .seconds(1))
    private var slowConsumerReports = RateLimitedReport(interval: .seconds(1))
    let startedAt = Date()

    static let readBatch = 256
    /// How often queued requests are checked for passed deadlines.
    static let queueSweepInterval: Duration = .milliseconds(10)
    /// A subscription travels as one frame: the prefix after a one-byte subscribe flag (ZMTP
    /// 3.0) or after the ten bytes that name a SUBSCRIBE command (ZMTP 3.1, libzmq 4.3).
    static let subscriptionFrameOverhead = 10
    /// The largest CURVE handshake command a client sends (INITIATE with its metadata), with room.
    static let curveHandshakeBytes = 1024

    /// The endpoints actually bound (ports resolved), in connectable form.
    let boundEndpoints: Broker.Endpoints

    let metrics: BrokerMetrics?
    /// What the operator console shows; nil when it is off (no monitoring port).
    let console: ConsoleRecorder?

    init(
        configuration: BrokerConfiguration, access: BrokerAccess?, logger: Logger, metrics: BrokerMetrics? = nil, console: ConsoleFeed? = nil
    ) throws(ZMQError) {
        self.configuration = configuration
        self.access = access
        self.logger = logger
        self.metrics = metrics
        self.console = console.map { ConsoleRecorder(feed: $0, now: ContinuousClock.now) }
        tracer = RPCTracer(instance: configuration.instance)
        workerLiveness = configuration.peerLiveness
        context = try ZMQContext()
        var opened: [ZMQSocket] = []
        do {
            // Bound before the CURVE servers, so that no handshake finds no handler: libzmq
            // admits every key when nothing listens here.
            var zap: ZMQSocket?
            if configuration.curveServerKeys != nil {
                let handler = try ZMQSocket(context: context, type: .router)
                opened.append(handler)
                try handler.bind(Self.zapEndpoint)
                zap = handler
            }
            self.zap = zap

            let router = try ZMQSocket(context: context, type: .router)
            opened.append(router)
            try router.set(.routerMandatory, 1)
            try router.set(.sendHighWaterMark, configuration.highWaterMark)
            try router.set(.receiveHighWaterMark, configuration.highWaterMark)
            try router.setMaxMessageSize(configuration.maxMessageBytes)
            try Self.prepare(router, configuration)
            try router.bind(configuration.rpcBind)

            let xsub = try ZMQSocket(context: context, type: .xsub)
            opened.append(xsub)
            try xsub.set(.receiveHighWaterMark, configuration.highWaterMark)
            try xsub.setMaxMessageSize(min(configuration.maxEventBytes, configuration.maxMessageBytes))
            try Self.prepare(xsub, configuration)
            try xsub.bind(configuration.pubBind)
            // Take every event from every publisher; the XPUB side filters per subscriber.
            try xsub.send(Data([1]), more: false)

            let xpub = try ZMQSocket(context: context, type: .xpub)
            opened.append(xpub)
            try xpub.set(.sendHighWaterMark, configuration.highWaterMark)
            // What comes in here is subscriptions: a longer one disconnects its subscriber
            // before libzmq adds it to its trie.
            // Under CURVE the handshake's INITIATE (about 300 bytes) passes the same limit, so
            // it is at least `curveHandshakeBytes` there.
            let subscriptionLimit = configuration.maxSubscriptionBytes + Self.subscriptionFrameOverhead
            try xpub.setMaxMessageSize(Int64(configuration.curveServerKeys == nil ? subscriptionLimit : max(subscriptionLimit, Self.curveHandshakeBytes)))
            // With security on, the broker admits each subscription itself, by its sender's key.
            if configuration.curveServerKeys != nil { try xpub.set(.xpubManual, 1) }
            try Self.prepare(xpub, configuration)
            try xpub.bind(configuration.subBind)

            self.router = router
            self.xsub = xsub
            self.xpub = xpub
        } catch {
            for socket in opened { socket.close() }
            context.terminate()
            throw error
        }
        boundEndpoints = Broker.Endpoints(
            rpc: Self.connectable(router.lastEndpoint), pub: Self.connectable(xsub.lastEndpoint),
            sub: Self.connectable(xpub.lastEndpoint))
        nextHeartbeat = clock.now + configuration.heartbeatInterval
    }

    /// Where libzmq sends a context's ZAP requests (RFC 27).
    static let zapEndpoint = "inproc://zeromq.zap.01"
    static let zapDomain = "studybus"

    /// Sets ZMTP heartbeats on `socket`, and makes it a CURVE server when the broker has keys;
    /// the ZAP handler checks each handshake.
    private static func prepare(_ socket: ZMQSocket, _ configuration: BrokerConfiguration) throws(ZMQError) {
        // A peer whose host vanished is dropped after the workers' liveness, on every socket: a
        // subscriber's would otherwise hold up to a high-water mark of events until TCP gives up.
        try socket.setHeartbeat(interval: configuration.heartbeatInterval, timeout: configuration.peerLiveness)
        guard let keys = configuration.curveServerKeys else { return }
        try socket.makeCurveServer(secretKey: keys.secretKey.bytes)
        try socket.set(.zapDomain, Array(zapDomain.utf8))
    }

    /// `tcp://0.0.0.0:5555` becomes `tcp://127.0.0.1:5555`, which a local client can connect to.
    static func connectable(_ endpoint: String) -> String {
        endpoint.replacingOccurrences(of: "://0.0.0.0:", with: "://127.0.0.1:")
            .replacingOccurrences(of: "://[::]:", with: "://127.0.0.1:")
    }

    /// Runs until `stopRequested` answers true after a wake-up of `wakeup`; reloads the
    /// allowlist when `takeReloadRequest` answers true after one.
    func run(wakeup: EventFD, stopRequested: () -> Bool, takeReloadRequest: () -> Bool) {
        var poller = ZMQPoller()
        poller.add(router)
        poller.add(xsub)
        poller.add(xpub)
        poller.add(fileDescriptor: wakeup.fileDescriptor)
        if let zap { poller.add(zap) }
        logger.info("broker listening", metadata: [
            "rpc": "\(boundEndpoints.rpc)", "pub": "\(boundEndpoints.pub)", "sub": "\(boundEndpoints.sub)",
            "heartbeatMs": "\(configuration.heartbeatInterval.components.seconds * 1000 + configuration.heartbeatInterval.components.attoseconds / 1_000_000_000_000_000)",
            "libzmq": "\(ZMQContext.libraryVersion)",
            "curve": "\(configuration.curveServerKeys.map { "on, public key \($0.publicKey)" } ?? "off")",
        ])
        if let access {
            logger.info("bus security on: admitting the keys of the allowlist", metadata: ["allowlist": "\(access.path)", "keys": "\(access.keyCount)"])
        }
        while !stopRequested() {
            let now = clock.now
            var timeout = nextHeartbeat > now ? nextHeartbeat - now : .zero
            if services.values.contains(where: { !$0.queue.isEmpty }) {
                timeout = min(timeout, Self.queueSweepInterval)
            }
            do {
                try poller.poll(timeoutMs: Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
            } catch {
                logger.critical("poll failed; broker stopping", metadata: ["error": "\(error)"])
                break
            }
            if poller.isReadable(3) {
                wakeup.drain()
                if takeReloadRequest() { reloadAllowlist() }
            }
            if zap != nil && poller.isReadable(4) { answerHandshakes() }
            if poller.isReadable(0) { readRouter() }
            if poller.isReadable(1) { forwardEvents() }
            if poller.isReadable(2) { readSubscriptions() }
            let afterPoll = clock.now
            if afterPoll >= nextHeartbeat {
                heartbeat(now: afterPoll)
                nextHeartbeat = afterPoll + configuration.heartbeatInterval
            }
            sweepQueueDeadlines()
            dropQueuedRequestsOfCutOffClients()
            console?.flush(now: afterPoll, services: serviceStatuses)
        }
        shutdown()
    }

    private func shutdown() {
        for worker in Array(workers.values) {
            send(to: worker.identity, [MDP.Frames.empty, MDP.Frames.worker, MDP.Command.disconnect.frame])
        }
        for service in services.values {
            for request in service.queue.removeAll(where: { _ in true }) {
                replyError(request.record.client, service: service.name, id: request.record.id, .unavailable("the broker is shutting down"), trace: nil)
            }
        }
        router.close()
        xsub.close()
        xpub.close()
        zap?.close()
        context.terminate()
        logger.info("broker stopped")
    }

    // MARK: Sending

    /// Sends a message through the ROUTER to `identity`: the identity frame, then what `body`
    /// sends. Never blocks: a peer that is gone or not reading loses the message. Returns
    /// whether the message went out.
    ///
    /// A peer is "not reading" when `highWaterMark` messages already wait for it (libzmq counts
    /// messages, not bytes, and with ROUTER_MANDATORY refuses the next with EAGAIN). A worker
    /// in that state is removed by the caller; a client is cut off as a slow consumer.
    @discardableResult
    func send(to identity: Data, _ body: () throws(ZMQError) -> Void) -> Bool {
        if !slowConsumers.isEmpty && slowConsumers.contains(identity) { return false }
        do {
            guard try router.send(identity, more: true, dontWait: true) else {
                if workers[identity] == nil { cutOff(identity) }
                return false
            }
            try body()
            return true
        } catch where error.code == ZMQError.hostUnreachable {
            return false
        } catch {
            logger.warning("cannot send to peer", metadata: ["peer": "\(hex(identity))", "error": "\(error)"])
            return false
        }
    }

    /// Sends `parts`, each copied, to `identity`.
    @discardableResult
    func send(to identity: Data, _ parts: [Data]) -> Bool {
        send(to: identity) { () throws(ZMQError) in
            for (index, part) in parts.enumerated() { try router.send(part, more: index < parts.count - 1) }
        }
    }

    func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// Cuts off a client that does not read its replies, as NATS does a slow consumer: for a
    /// while (``SlowConsumers``) nothing more is sent to it and what it sends is dropped, and its
    /// queued requests are dropped after this pass of the loop. libzmq cannot close one
    /// connection of a ROUTER, so the replies already queued towards it stay until it reads
    /// them or disconnects; what it has in flight at workers is answered there and dropped here.
    private func cutOff(_ client: Data) {
        guard slowConsumers.cutOff(client, now: clock.now) else { return }
        clientsCutOff.append(client)
        guard let count = slowConsumerReports.occurrence(now: clock.now) else { return }
        logger.warning("cut off a client that does not read its replies (slow consumer)", metadata: [
            "client": "\(hex(client))", "unreadReplies": "\(configuration.highWaterMark)", "clients": "\(count)",
            "total": "\(slowConsumers.total)",
        ])
    }

    private func dropQueuedRequestsOfCutOffClients() {
        guard !clientsCutOff.isEmpty else { return }
        let cut = Set(clientsCutOff)
        clientsCutOff.removeAll()
        for service in services.values where !service.queue.isEmpty {
            for request in service.queue.removeAll(where: { cut.contains($0.record.client) }) {
                unqueued(request)
                finished(request.record)
            }
        }
    }

    /// Every service with its workers, as `mmi.services` and the console list them.
    func serviceStatuses() -> [ServiceStatus] {
        services.values.sorted { $0.name < $1.name }.map(\.status)
    }

    /// A request was answered (by a worker, or by the broker itself when `fromBroker`): the
    /// console counts it, and while someone listens it becomes a `bus.rpc` event and a line of
    /// the console's tail. The console counts it under `countedAs` when given (a service the
    /// broker keeps no record of), else under its service and method.
    func callFinished(
        service: String, id: String, code: StatusCode, trace: TraceContext, replyBytes: Int, fromBroker: Bool, countedAs: MethodKey? = nil
    ) {
        guard tracer.isEnabled || console != nil else { return }
        let latencyUs = (clock.now - trace.receivedAt).wholeMicroseconds
        console?.count(countedAs ?? MethodKey(service: service, method: trace.method), code: code, latencyUs: latencyUs)
        let tailWanted = console?.tailWanted == true
        guard tracer.isEnabled || tailWanted else { return }
        let record = RPCTrace(
            service: service, method: trace.method, id: id, code: code.rawValue, latencyUs: latencyUs, requestBytes: trace.requestBytes,
            replyBytes: replyBytes, user: trace.user, fromBroker: fromBroker)
        if tracer.isEnabled {
            for (index, frame) in tracer.event(record).enumerated() {
                _ = try? xpub.send(frame, more: index < 2, dontWait: true)
            }
        }
        if tailWanted { console?.record(record) }
    }

    // MARK: Events

    private func forwardEvents() {
        let frame = forwardFrame
        var forwarded = 0
        defer { metrics?.forwarded(events: forwarded) }
        // The console's tail copies the start of each event's frames, only while someone reads it.
        let copying = console?.tailWanted == true
        var copied: [Data] = []
        var truncated = false
        func keep(_ frame: ZMQFrame) {
            guard copying && copied.count < 3 else { return }
            let limit = ConsoleRecorder.limit(ofFrame: copied.count)
            truncated = truncated || frame.count > limit
            copied.append(frame.withUnsafeBytes { Data($0.prefix(limit)) })
        }
        for _ in 0..<Self.readBatch {
            do {
                guard try xsub.receive(into: frame, flags: ZMQSocket.dontWait) else { return }
                var more = xsub.frameHasMore(frame)
                if access != nil && !mayPublish(frame) {
                    while more {
                        _ = try xsub.receive(into: frame, flags: 0)
                        more = xsub.frameHasMore(frame)
                    }
                    continue
                }
                keep(frame)
                try xpub.send(frame: frame, more: more)
                while more {
                    _ = try xsub.receive(into: frame, flags: 0)
                    more = xsub.frameHasMore(frame)
                    keep(frame)
                    try xpub.send(frame: frame, more: more)
                }
                if copying {
                    console?.recordEvent(copied, truncated: truncated)
                    copied.removeAll(keepingCapacity: true)
                    truncated = false
                }
                forwarded += 1
            } catch {
                logger.warning("event forwarding failed", metadata: ["error": "\(error)"])
                return
            }
        }
    }

    private func readSubscriptions() {
        let frame = forwardFrame
        for _ in 0..<Self.readBatch {
            do {
                guard try xpub.receive(into: frame, flags: ZMQSocket.dontWait) else { return }
            } catch {
                logger.warning("subscription receive failed", metadata: ["error": "\(error)"])
                return
            }
            let wasEnabled = tracer.isEnabled
            if access == nil {
                frame.withUnsafeBytes { tracer.apply(subscriptionMessage: $0, from: .trusted) }
            } else {
                admitSubscription(frame)
            }
            if tracer.isEnabled != wasEnabled {
                logger.info(tracer.isEnabled ? "bus.rpc tracing on (a subscriber listens)" : "bus.rpc tracing off")
            }
        }
    }

    // MARK: Timers

    private func heartbeat(now: ContinuousClock.Instant) {
        for worker in Array(workers.values) {
            if worker.expiresAt < now {
                removeWorker(worker, reason: "no heartbeat for \(configuration.heartbeatLiveness) intervals")
                continue
            }
            let delivered = send(to: worker.identity, [MDP.Frames.empty, MDP.Frames.worker, MDP.Command.heartbeat.frame])
            if !delivered && workers[worker.identity] != nil {
                removeWorker(worker, reason: Self.unreachableWorker)
            }
        }
        expireServices(now: now)
        probeWorkers(now: now)
        metrics?.sample(services)
        slowConsumers.forget(cutOffBefore: now - SlowConsumers.memory)
    }

    /// Forgets services that have had no worker for `serviceExpiry` (their queue is empty:
    /// the last worker leaving answered it), so that READY and DISCONNECT under ever new names
    /// do not grow the table.
    private func expireServices(now: ContinuousClock.Instant) {
        let expired = services.values.filter { service in
            service.idleSince.map { now - $0 >= configuration.serviceExpiry } ?? false
        }
        for service in expired where service.queue.isEmpty { services[service.name] = nil }
    }

    private func sweepQueueDeadlines() {
        let nowMs = Date().unixMilliseconds
        for service in services.values where !service.queue.isEmpty {
            let expired = service.queue.removeAll { ($0.record.deadlineMs ?? .max) <= nowMs }
            for request in expired {
                unqueued(request)
                fail(request.record, service: service.name,
                     .deadlineExceeded("the deadline passed while the request waited in the broker for a free worker of \(service.name)"))
            }
        }
    }
}
