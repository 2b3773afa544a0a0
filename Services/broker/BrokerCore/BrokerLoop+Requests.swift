import Bus
import Foundation
import Logging
import Wire
import ZMQ

/// What a trace needs to know about the request being answered.
typealias TraceContext = (method: String, user: String?, receivedAt: ContinuousClock.Instant, requestBytes: Int)

extension BrokerLoop {
    func readRouter() {
        for _ in 0..<Self.readBatch {
            do {
                guard try message.receive(from: router, dontWait: true) else { return }
            } catch {
                logger.warning("receive failed", metadata: ["error": "\(error)"])
                return
            }
            route()
        }
    }

    /// Routes the message just received into `message`.
    private func route() {
        // [sender identity, empty, protocol, ...]
        guard message.count >= 3, message.size(1) == 0 else {
            reportMalformed("message without an empty delimiter frame", frames: message.receivedCount)
            return
        }
        if message.equals(2, MDP.client) {
            handleClient()
        } else if message.equals(2, MDP.worker) {
            handleWorker()
        } else {
            reportMalformed("unknown protocol frame (expected MDPC01 or MDPW01)", frames: message.receivedCount)
        }
    }

    func reportMalformed(_ reason: String, frames: Int) {
        guard let count = malformedReports.occurrence(now: clock.now) else { return }
        logger.warning("dropping malformed message", metadata: ["reason": "\(reason)", "frames": "\(frames)", "count": "\(count)"])
    }

    // MARK: Clients

    private func handleClient() {
        let client = message.data(0)
        // A client cut off for not reading its replies could not be answered anyway.
        if !slowConsumers.isEmpty && slowConsumers.contains(client) { return }
        let receivedAt = clock.now
        guard message.count >= 4 else {
            replyError(client, service: "", id: "", .invalidArgument("request has no service frame"), trace: nil)
            return
        }
        let service = message.string(3)
        if service == BrokerProtocol.mmiService || service == BrokerProtocol.mmiServices {
            handleMMI(client: client, service: service, receivedAt: receivedAt)
            return
        }
        // [client, empty, MDPC01, service, method, header, payload?, attachment?]
        let frames = message.receivedCount
        guard frames >= 6 && frames <= 8 else {
            replyError(client, service: service, id: "",
                       .invalidArgument("a request is: empty, MDPC01, service, method, header, payload[, attachment]; got \(frames - 1) frames"),
                       trace: nil)
            return
        }
        let header: RequestHeader
        do {
            header = try RequestHeader.decode(bytes: message.bytes(5))
        } catch {
            replyError(client, service: service, id: RequestHeader.idOfRefused(bytes: message.bytes(5)) ?? "", error, trace: nil)
            return
        }
        let request = RequestRecord(
            client: client, id: header.id, deadlineMs: header.deadline, methodName: message.string(4), user: header.user,
            receivedAt: receivedAt, requestBytes: message.size(from: 5))
        guard !service.isEmpty, service.utf8.count <= 128, !request.methodName.isEmpty, request.methodName.utf8.count <= 128 else {
            replyError(client, service: service, id: header.id, .invalidArgument("service and method names must be 1 to 128 bytes"), trace: request.trace)
            return
        }
        var caller: BrokerAccess.Key?
        if access != nil {
            guard let key = senderKey() else {
                replyError(client, service: service, id: header.id, .permissionDenied("this connection's key is no longer in the broker's allowlist"), trace: request.trace)
                return
            }
            if let refusal = key.userRefusal(user: header.user) {
                refuse(.call, key: senderUserID ?? "", identity: key.identity, refusal, ["service": "\(service)", "method": "\(request.methodName)"])
                replyError(client, service: service, id: header.id, .permissionDenied("\(refusal): this key is \(key.identity)"), trace: request.trace)
                return
            }
            caller = key
        }
        if service == BrokerProtocol.serviceName {
            answerOwnMethod(client: client, header: header, method: request.methodName, caller: caller?.identity, trace: request.trace)
            return
        }
        if let caller, !stampCaller(caller) {
            replyError(client, service: service, id: header.id, .invalidArgument("the request header must be a JSON object ending with '}'"), trace: request.trace)
            return
        }
        let clientRecord = clients[client]
        if let clientRecord, clientRecord.outstandingIDs.contains(header.id) {
            replyError(client, service: service, id: header.id,
                       .invalidArgument("request id '\(header.id)' is in use by an unanswered request of this connection; outstanding requests need distinct ids"),
                       trace: request.trace)
            return
        }
        guard let record = services[service], !record.workers.isEmpty else {
            replyError(client, service: service, id: header.id, .unavailable("no responders: no worker of service '\(service)' is registered"), trace: request.trace)
            return
        }
        if let deadline = header.deadline, deadline <= Date().unixMilliseconds {
            replyError(client, service: service, id: header.id, .deadlineExceeded("the request's deadline had already passed when the broker received it"), trace: request.trace)
            return
        }
        // The common case: nobody is waiting and a worker has credit, so the request goes straight
        // on from the message it came in.
        if record.queue.isEmpty, let worker = record.workerWithFreeCredit(), forward(message, from: 4, of: request, to: worker) {
            record.requests += 1
            outstanding(request, of: clientRecord)
            return
        }
        guard record.queue.count < configuration.maxQueuedPerService else {
            replyError(client, service: service, id: header.id,
                       .resourceExhausted("the queue of service '\(service)' is full (\(configuration.maxQueuedPerService) requests waiting)"),
                       trace: request.trace)
            return
        }
        let bytes = message.size(from: 4)
        if let refusal = queuedBytesRefusal(adding: bytes, clientHas: clientRecord?.queuedBytes ?? 0) {
            replyError(client, service: service, id: header.id, refusal, trace: request.trace)
            return
        }
        record.requests += 1
        let parts = ZMQMultipart(capacity: 4)
        message.move(4..<message.count, to: parts)
        outstanding(request, of: clientRecord).queuedBytes += bytes
        queuedBytes += bytes
        record.queue.append(QueuedRequest(record: request, parts: parts, bytes: bytes))
        dispatch(record)
    }

    /// Writes `caller` into the header of the request in `message` (part 5), as its last
    /// member, so that whatever `caller` the client wrote is overridden (Addition 10). Returns
    /// false when the header does not end with `}`.
    private func stampCaller(_ caller: BrokerAccess.Key) -> Bool {
        guard let stamped = RequestHeader.stamping(message.bytes(5), with: caller.callerMember) else { return false }
        message.replace(5, with: stamped)
        return true
    }

    /// Why `bytes` more of a client that has `clientHas` waiting may not wait in the broker, if
    /// they may not. A request is never refused for its size alone: the first of a client
    /// passes the client's limit, the first of all passes the overall one.
    private func queuedBytesRefusal(adding bytes: Int, clientHas: Int) -> BusError? {
        func refusal(_ whose: String, has: Int, limit: Int, setting: String) -> BusError {
            BusError(.resourceExhausted,
                     "\(whose) \(has) bytes of requests waiting in the broker for free workers; \(bytes) more would pass \(setting) = \(limit)",
                     details: .object(["bytes": .int(Int64(bytes)), "queuedBytes": .int(Int64(has)), "limit": .int(Int64(limit)), "setting": .string(setting)]))
        }
        if clientHas > 0 && clientHas + bytes > configuration.maxQueuedBytesPerClient {
            return refusal("this client has", has: clientHas, limit: configuration.maxQueuedBytesPerClient, setting: "BROKER_MAX_CLIENT_QUEUED_BYTES")
        }
        if queuedBytes > 0 && queuedBytes + bytes > configuration.maxQueuedBytes {
            return refusal("all clients have", has: queuedBytes, limit: configuration.maxQueuedBytes, setting: "BROKER_MAX_QUEUED_BYTES")
        }
        return nil
    }

    /// Records `request` as outstanding for its client (whose record is `existing`, if it has
    /// one) and returns the client's record.
    @discardableResult
    private func outstanding(_ request: RequestRecord, of existing: ClientRecord?) -> ClientRecord {
        let record = existing ?? {
            let created = ClientRecord()
            clients[request.client] = created
            return created
        }()
        record.outstandingIDs.insert(request.id)
        return record
    }

    /// `request` is answered (or will never be): its id is free again for its client.
    func finished(_ request: RequestRecord) {
        guard let record = clients[request.client] else { return }
        record.outstandingIDs.remove(request.id)
        if record.outstandingIDs.isEmpty { clients[request.client] = nil }
    }

    /// `request` left its queue: its bytes no longer count.
    func unqueued(_ request: QueuedRequest) {
        queuedBytes -= request.bytes
        clients[request.record.client]?.queuedBytes -= request.bytes
    }

    /// Answers a request that was admitted (in flight or queued) on the broker's own behalf.
    func fail(_ request: RequestRecord, service: String, _ error: BusError) {
        finished(request)
        replyError(request.client, service: service, id: request.id, error, trace: request.trace)
    }

    /// Hands queued requests to workers with free credit, oldest first.
    func dispatch(_ service: ServiceRecord) {
        while !service.queue.isEmpty, let worker = service.workerWithFreeCredit() {
            guard let request = service.queue.popFirst() else { return }
            if let deadline = request.record.deadlineMs, deadline <= Date().unixMilliseconds {
                unqueued(request)
                fail(request.record, service: service.name,
                     .deadlineExceeded("the deadline passed while the request waited in the broker for a free worker of \(service.name)"))
                continue
            }
            if forward(request.parts, from: 0, of: request.record, to: worker) {
                unqueued(request)
            } else {
                // Put it back first, so that losing the last worker answers it too.
                service.queue.prepend(request)
                removeWorker(worker, reason: Self.unreachableWorker)
            }
        }
    }

    static let unreachableWorker = "its connection closed, or it does not read what it is sent"

    /// Sends a request to `worker` as `[empty, MDPW01, REQUEST, client, empty, method, header,
    /// payload, attachment?]`, moving its parts from `parts` (method first at `first`), and
    /// records it as held by the worker. Returns `false` if the worker's connection is gone:
    /// ROUTER_MANDATORY refuses at the identity frame, so nothing of the request moved.
    private func forward(_ parts: ZMQMultipart, from first: Int, of request: RequestRecord, to worker: WorkerRecord) -> Bool {
        let sent = send(to: worker.identity) { () throws(ZMQError) in
            try router.send(MDP.Frames.empty, more: true)
            try router.send(MDP.Frames.worker, more: true)
            try router.send(MDP.Command.request.frame, more: true)
            try router.send(request.client, more: true)
            try router.send(MDP.Frames.empty, more: true)
            try parts.send(first, on: router, more: true)
            try parts.send(first + 1, on: router, more: true)
            // A request without a payload part gets an empty one: a worker's REQUEST always has it.
            let hasAttachment = parts.count > first + 3
            if parts.count > first + 2 { try parts.send(first + 2, on: router, more: hasAttachment) } else { try router.send(MDP.Frames.empty, more: false) }
            if hasAttachment { try parts.send(first + 3, on: router, more: false) }
        }
        if sent { worker.inFlight[request.key] = request }
        return sent
    }

    /// Answers a client on the broker's own behalf, with an empty payload.
    func replyError(_ client: Data, service: String, id: String, _ error: BusError, trace: TraceContext?) {
        let header = ReplyHeader(id: id, error: error).encoded()
        send(to: client, [MDP.Frames.empty, MDP.Frames.client, Data(service.utf8), header, MDP.Frames.empty])
        metrics?.answered(service: service, known: services[service] != nil, code: error.code)
        if let trace { traceOwnAnswer(service: service, id: id, code: error.code, trace: trace, replyBytes: header.count) }
    }

    // MARK: Workers

    private func handleWorker() {
        let sender = message.data(0)
        guard message.count >= 4, message.size(3) == 1, let command = MDP.Command(rawValue: message.bytes(3)[0]) else {
            reportMalformed("worker message without a valid command", frames: message.receivedCount)
            return
        }
        let worker = workers[sender]
        // With security on, the key of the connection: one that is no longer listed may do nothing.
        var key: BrokerAccess.Key?
        if access != nil {
            key = senderKey()
            guard key != nil else {
                if let worker { removeWorker(worker, reason: "its key is no longer in the allowlist") }
                return disconnect(sender, reason: "its key is no longer in the allowlist")
            }
        }
        worker?.expiresAt = clock.now + workerLiveness
        switch command {
        case .ready:
            handleReady(sender: sender, existing: worker, key: key)
        case .reply:
            guard let worker else { return disconnect(sender, reason: "REPLY from an unregistered worker") }
            handleReply(worker: worker)
        case .heartbeat:
            if worker == nil { disconnect(sender, reason: "HEARTBEAT from an unregistered worker") }
        case .disconnect:
            if let worker { removeWorker(worker, reason: "it disconnected") }
        case .request:
            reportMalformed("a worker sent REQUEST", frames: message.receivedCount)
        }
    }

    /// `key`: the connection's, with security on.
    private func handleReady(sender: Data, existing: WorkerRecord?, key: BrokerAccess.Key?) {
        if let existing {
            removeWorker(existing, reason: "it sent READY twice")
            return disconnect(sender, reason: "READY from an already registered worker")
        }
        guard message.receivedCount == 5 || message.receivedCount == 6 else {
            return disconnect(sender, reason: "READY must carry a service name and optionally a credit")
        }
        let name = message.string(4)
        guard !name.isEmpty, name.utf8.count <= 128, !name.hasPrefix("mmi."), name != BrokerProtocol.serviceName else {
            return disconnect(sender, reason: "READY for a reserved or invalid service name '\(name)'")
        }
        if let key, let refusal = key.readyRefusal(service: name) {
            refuse(.ready, key: senderUserID ?? "", identity: key.identity, refusal, ["service": "\(Self.printable(Data(name.utf8)))"])
            return disconnect(sender, reason: refusal)
        }
        var credit = 1
        if message.count == 6 {
            guard let claimed = Int(message.string(5)), claimed >= 1 else {
                return disconnect(sender, reason: "READY credit must be a positive decimal number")
            }
            credit = min(claimed, configuration.maxCredit)
        }
        guard let service = services[name] ?? newService(name) else {
            return disconnect(sender, reason: "READY for a new service '\(name)' while the broker keeps \(services.count) services, all with workers (BROKER_MAX_SERVICES)")
        }
        let worker = WorkerRecord(identity: sender, service: service, credit: credit, expiresAt: clock.now + workerLiveness)
        workers[sender] = worker
        service.workers.append(worker)
        logger.info("worker registered", metadata: [
            "service": "\(name)", "worker": "\(worker.hexIdentity)", "credit": "\(credit)", "workers": "\(service.workers.count)",
        ])
        dispatch(service)
        if workers[sender] === worker { probe(worker, now: clock.now) }
    }

    /// A record for a new service; at the limit it replaces the record of the service that has
    /// been without workers longest, or, when every service has workers, there is none.
    private func newService(_ name: String) -> ServiceRecord? {
        if services.count >= configuration.maxServices {
            let idle = services.values.lazy.compactMap { service in service.idleSince.map { (service, $0) } }
            guard let (oldest, _) = idle.min(by: { $0.1 < $1.1 }) else { return nil }
            services[oldest.name] = nil
        }
        let created = ServiceRecord(name: name)
        services[name] = created
        return created
    }

    private func handleReply(worker: WorkerRecord) {
        // [worker, empty, MDPW01, 0x03, client, empty, header, payload, attachment?]
        // A worker whose reply cannot be matched to a request breaks the protocol: forgetting the
        // reply would leave its caller waiting and its credit held, so the worker goes, and the
        // requests it holds are answered "worker lost".
        let frames = message.receivedCount
        guard frames == 8 || frames == 9, message.size(5) == 0 else {
            return rejectReply(worker, "a malformed REPLY (it must be: client, empty, header, payload[, attachment])")
        }
        guard let header = try? ReplyHeader.decode(bytes: message.bytes(6)) else {
            return rejectReply(worker, "a REPLY whose header is not a JSON object with id and code")
        }
        let client = message.data(4)
        if takeProbeAnswer(from: worker, client: client, header: header) { return }
        guard let request = worker.inFlight.removeValue(forKey: RequestKey(client: client, id: header.id)) else {
            logger.debug("dropping a reply to a request the worker does not hold", metadata: ["request": "\(header.id)"])
            return
        }
        finished(request)
        let service = worker.service
        let replyBytes = message.size(from: 6)
        send(to: client) { () throws(ZMQError) in
            try router.send(MDP.Frames.empty, more: true)
            try router.send(MDP.Frames.client, more: true)
            try router.send(service.name, more: true)
            try message.send(6, on: router, more: true)
            try message.send(7, on: router, more: frames == 9)
            if frames == 9 { try message.send(8, on: router, more: false) }
        }
        callFinished(service: service.name, id: request.id, code: header.code, trace: request.trace, replyBytes: replyBytes, fromBroker: false)
        dispatch(service)
    }

    private func rejectReply(_ worker: WorkerRecord, _ what: String) {
        removeWorker(worker, reason: "it sent \(what)")
        disconnect(worker.identity, reason: "it sent \(what)")
    }

    func disconnect(_ identity: Data, reason: String) {
        logger.warning("disconnecting worker", metadata: ["worker": "\(hex(identity))", "reason": "\(reason)"])
        send(to: identity, [MDP.Frames.empty, MDP.Frames.worker, MDP.Command.disconnect.frame])
    }

    /// Forgets a worker; the requests it held are answered UNAVAILABLE ("worker lost"), and if it
    /// was the service's last worker, so are the requests still queued.
    func removeWorker(_ worker: WorkerRecord, reason: String) {
        guard workers.removeValue(forKey: worker.identity) != nil else { return }
        let service = worker.service
        service.workers.removeAll { $0 === worker }
        logger.warning("worker removed", metadata: [
            "service": "\(service.name)", "worker": "\(worker.hexIdentity)", "reason": "\(reason)",
            "lostRequests": "\(worker.inFlight.count)", "workers": "\(service.workers.count)",
        ])
        let lost = worker.inFlight.values
        worker.inFlight.removeAll()
        for request in lost {
            fail(request, service: service.name, .unavailable("worker lost: the worker of \(service.name) holding this request went away (\(reason))"))
        }
        if service.workers.isEmpty {
            for request in service.queue.removeAll(where: { _ in true }) {
                unqueued(request)
                fail(request.record, service: service.name, .unavailable("no responders: the last worker of service '\(service.name)' went away"))
            }
        } else {
            dispatch(service)
        }
    }

    // MARK: What the broker answers itself

    private func handleMMI(client: Data, service: String, receivedAt: ContinuousClock.Instant) {
        // 8/MMI form: [client, empty, MDPC01, mmi.x, body]; StudyBus form adds header and payload.
        var requestHeader: RequestHeader?
        if message.count >= 6 {
            do {
                requestHeader = try RequestHeader.decode(bytes: message.bytes(5))
            } catch {
                replyError(client, service: service, id: RequestHeader.idOfRefused(bytes: message.bytes(5)) ?? "", error, trace: nil)
                return
            }
        }
        let replyHeader = requestHeader.map { ReplyHeader(id: $0.id).encoded() }
        let body: Data
        if service == BrokerProtocol.mmiService {
            let name = message.count >= 5 ? message.string(4) : ""
            let known = name == BrokerProtocol.serviceName || services[name]?.workers.isEmpty == false
            body = Data((known ? "200" : "404").utf8)
        } else {
            body = (try? WireCoding.encode(serviceStatuses())) ?? Data("[]".utf8)
        }
        var parts = [MDP.Frames.empty, MDP.Frames.client, Data(service.utf8)]
        if let replyHeader { parts.append(replyHeader) }
        parts.append(body)
        send(to: client, parts)
        guard tracer.isEnabled || console != nil else { return }
        let trace: TraceContext = (message.count >= 5 ? message.string(4) : "", requestHeader?.user, receivedAt, message.size(from: 4))
        traceOwnAnswer(service: service, id: requestHeader?.id ?? "", code: .ok, trace: trace, replyBytes: (replyHeader?.count ?? 0) + body.count)
    }

    /// The `bus.rpc` event (and the console's count) of a request the broker answered itself;
    /// a service it keeps no record of counts as `_unknown` for the console, whose methods stay
    /// a bounded set that way.
    private func traceOwnAnswer(service: String, id: String, code: StatusCode, trace: TraceContext, replyBytes: Int) {
        let known = services[service] != nil || service == BrokerProtocol.serviceName || service.hasPrefix("mmi.")
        callFinished(service: service, id: id, code: code, trace: trace, replyBytes: replyBytes, fromBroker: true,
                     countedAs: known ? nil : MethodKey(service: BrokerMetrics.unknownService, method: "*"))
    }

    private func answerOwnMethod(client: Data, header: RequestHeader, method: String, caller: BusIdentity?, trace: TraceContext) {
        let payload: Data?
        switch method {
        case BrokerProtocol.security.name:
            if let caller, caller.role != .operator {
                replyError(client, service: BrokerProtocol.serviceName, id: header.id,
                           .permissionDenied("broker.\(BrokerProtocol.security.name) is for operators; this key is \(caller)"), trace: trace)
                return
            }
            payload = try? WireCoding.encode(securityStatus)
        case "_health":
            payload = try? WireCoding.encode(HealthStatus(status: .serving, build: BuildInfo.stamp))
        case "_describe":
            let description = ServiceDescription(
                service: BrokerProtocol.serviceName,
                methods: [Reserved.health(BrokerProtocol.serviceName), Reserved.describe(BrokerProtocol.serviceName), BrokerProtocol.security],
                topics: [BrokerProtocol.rpc], build: BuildInfo.stamp)
            payload = try? WireCoding.encode(description)
        default:
            payload = nil
        }
        guard let payload else {
            replyError(client, service: BrokerProtocol.serviceName, id: header.id,
                       .unimplemented("the broker answers only _health, _describe and security; mmi.service and mmi.services are services of their own"),
                       trace: trace)
            return
        }
        let replyHeader = ReplyHeader(id: header.id).encoded()
        send(to: client, [MDP.Frames.empty, MDP.Frames.client, Data(BrokerProtocol.serviceName.utf8), replyHeader, payload])
        traceOwnAnswer(service: BrokerProtocol.serviceName, id: header.id, code: .ok, trace: trace, replyBytes: replyHeader.count + payload.count)
    }
}
