import Bus
import Foundation
import Logging
import ZMQ

/// What a trace needs to know about the request being answered.
typealias TraceContext = (method: String, user: String?, receivedAt: ContinuousClock.Instant, requestBytes: Int)

extension BrokerLoop {
    func readRouter() {
        var frames: [ZMQFrame] = []
        for _ in 0..<Self.readBatch {
            frames.removeAll(keepingCapacity: true)
            do {
                guard try router.receiveFrames(into: &frames, pool: framePool, dontWait: true) else { return }
            } catch {
                logger.warning("receive failed", metadata: ["error": "\(error)"])
                return
            }
            route(frames)
            // Frames kept by a queued request are still referenced there; the rest are done.
            for index in frames.indices where isKnownUniquelyReferenced(&frames[index]) {
                framePool.recycle(frames[index])
            }
        }
    }

    private func route(_ frames: [ZMQFrame]) {
        // [sender identity, empty, protocol, ...]
        guard frames.count >= 3, frames[1].count == 0 else {
            reportMalformed("message without an empty delimiter frame", frames: frames.count)
            return
        }
        if frames[2].equals("MDPC01") {
            handleClient(frames)
        } else if frames[2].equals("MDPW01") {
            handleWorker(frames)
        } else {
            reportMalformed("unknown protocol frame (expected MDPC01 or MDPW01)", frames: frames.count)
        }
    }

    func reportMalformed(_ reason: String, frames: Int) {
        guard let count = malformedReports.occurrence(now: clock.now) else { return }
        logger.warning("dropping malformed message", metadata: ["reason": "\(reason)", "frames": "\(frames)", "count": "\(count)"])
    }

    // MARK: Clients

    private func handleClient(_ frames: [ZMQFrame]) {
        let client = frames[0].data
        let receivedAt = clock.now
        guard frames.count >= 4 else {
            replyError(client, service: "", id: "", .invalidArgument("request has no service frame"), trace: nil)
            return
        }
        let service = frames[3].string
        if service == BrokerProtocol.mmiService || service == BrokerProtocol.mmiServices {
            handleMMI(client: client, service: service, frames: frames, receivedAt: receivedAt)
            return
        }
        // [client, empty, MDPC01, service, method, header, payload?, attachment?]
        guard frames.count >= 6 && frames.count <= 8 else {
            replyError(client, service: service, id: "",
                       .invalidArgument("a request is: empty, MDPC01, service, method, header, payload[, attachment]; got \(frames.count - 1) frames"),
                       trace: nil)
            return
        }
        let header: RequestHeader
        do {
            header = try RequestHeader.decode(frames[5].data)
        } catch {
            replyError(client, service: service, id: "", error, trace: nil)
            return
        }
        let method = frames[4].string
        let requestBytes = frames[5...].reduce(0) { $0 + $1.count }
        let trace: TraceContext = (method, header.user, receivedAt, requestBytes)
        guard !service.isEmpty, service.utf8.count <= 128, !method.isEmpty, method.utf8.count <= 128 else {
            replyError(client, service: service, id: header.id, .invalidArgument("service and method names must be 1 to 128 bytes"), trace: trace)
            return
        }
        if service == BrokerProtocol.serviceName {
            answerOwnMethod(client: client, header: header, method: method, trace: trace)
            return
        }
        guard let record = services[service], !record.workers.isEmpty else {
            replyError(client, service: service, id: header.id, .unavailable("no responders: no worker of service '\(service)' is registered"), trace: trace)
            return
        }
        if let deadline = header.deadline, deadline <= Date().unixMilliseconds {
            replyError(client, service: service, id: header.id, .deadlineExceeded("the request's deadline had already passed when the broker received it"), trace: trace)
            return
        }
        guard record.queue.count < configuration.maxQueuedPerService else {
            replyError(client, service: service, id: header.id,
                       .resourceExhausted("the queue of service '\(service)' is full (\(configuration.maxQueuedPerService) requests waiting)"),
                       trace: trace)
            return
        }
        record.requests += 1
        record.queue.append(QueuedRequest(
            client: client, id: header.id, deadlineMs: header.deadline, methodName: method, user: header.user,
            method: frames[4], header: frames[5], payload: frames.count > 6 ? frames[6] : nil,
            attachment: frames.count > 7 ? frames[7] : nil, receivedAt: receivedAt, requestBytes: requestBytes))
        dispatch(record)
    }

    /// Hands queued requests to workers with free credit, oldest first.
    func dispatch(_ service: ServiceRecord) {
        while !service.queue.isEmpty, let worker = service.workerWithFreeCredit() {
            guard let request = service.queue.popFirst() else { return }
            if let deadline = request.deadlineMs, deadline <= Date().unixMilliseconds {
                replyError(request.client, service: service.name, id: request.id,
                           .deadlineExceeded("the deadline passed while the request waited in the broker for a free worker of \(service.name)"),
                           trace: (request.methodName, request.user, request.receivedAt, request.requestBytes))
                continue
            }
            var parts: [Part] = [
                .bytes(MDP.Frames.empty), .bytes(MDP.Frames.worker), .bytes(MDP.Command.request.frame), .bytes(request.client),
                .bytes(MDP.Frames.empty), .frame(request.method), .frame(request.header), .frame(request.payload ?? ZMQFrame(Data())),
            ]
            if let attachment = request.attachment { parts.append(.frame(attachment)) }
            guard send(to: worker.identity, parts) else {
                // ROUTER_MANDATORY refuses at the identity frame, so nothing of the request moved:
                // put it back first, so that losing the last worker answers it too.
                service.queue.prepend(request)
                removeWorker(worker, reason: "its connection closed")
                continue
            }
            for frame in [request.method, request.header, request.payload, request.attachment] {
                if let frame { framePool.recycle(frame) }
            }
            worker.inFlight[RequestKey(client: request.client, id: request.id)] = InFlightRequest(
                client: request.client, id: request.id, methodName: request.methodName, user: request.user,
                receivedAt: request.receivedAt, requestBytes: request.requestBytes)
        }
    }

    /// Answers a client on the broker's own behalf, with an empty payload.
    func replyError(_ client: Data, service: String, id: String, _ error: BusError, trace: TraceContext?) {
        let header = ReplyHeader(id: id, error: error).encoded()
        send(to: client, [.bytes(MDP.Frames.empty), .bytes(MDP.Frames.client), .bytes(Data(service.utf8)), .bytes(header), .bytes(MDP.Frames.empty)])
        if let trace { traceOwnAnswer(service: service, id: id, code: error.code, trace: trace, replyBytes: header.count) }
    }

    // MARK: Workers

    private func handleWorker(_ frames: [ZMQFrame]) {
        let sender = frames[0].data
        guard frames.count >= 4, frames[3].count == 1,
              let command = frames[3].withUnsafeBytes({ MDP.Command(rawValue: $0[0]) })
        else {
            reportMalformed("worker message without a valid command", frames: frames.count)
            return
        }
        let worker = workers[sender]
        worker?.expiresAt = clock.now + configuration.heartbeatInterval * configuration.heartbeatLiveness
        switch command {
        case .ready:
            handleReady(sender: sender, existing: worker, frames: frames)
        case .reply:
            guard let worker else { return disconnect(sender, reason: "REPLY from an unregistered worker") }
            handleReply(worker: worker, frames: frames)
        case .heartbeat:
            if worker == nil { disconnect(sender, reason: "HEARTBEAT from an unregistered worker") }
        case .disconnect:
            if let worker { removeWorker(worker, reason: "it disconnected") }
        case .request:
            reportMalformed("a worker sent REQUEST", frames: frames.count)
        }
    }

    private func handleReady(sender: Data, existing: WorkerRecord?, frames: [ZMQFrame]) {
        if let existing {
            removeWorker(existing, reason: "it sent READY twice")
            return disconnect(sender, reason: "READY from an already registered worker")
        }
        guard frames.count == 5 || frames.count == 6 else {
            return disconnect(sender, reason: "READY must carry a service name and optionally a credit")
        }
        let name = frames[4].string
        guard !name.isEmpty, name.utf8.count <= 128, !name.hasPrefix("mmi."), name != BrokerProtocol.serviceName else {
            return disconnect(sender, reason: "READY for a reserved or invalid service name '\(name)'")
        }
        var credit = 1
        if frames.count == 6 {
            guard let claimed = Int(frames[5].string), claimed >= 1 else {
                return disconnect(sender, reason: "READY credit must be a positive decimal number")
            }
            credit = min(claimed, configuration.maxCredit)
        }
        let service = services[name] ?? {
            let created = ServiceRecord(name: name)
            services[name] = created
            return created
        }()
        let worker = WorkerRecord(
            identity: sender, service: service, credit: credit,
            expiresAt: clock.now + configuration.heartbeatInterval * configuration.heartbeatLiveness)
        workers[sender] = worker
        service.workers.append(worker)
        logger.info("worker registered", metadata: [
            "service": "\(name)", "worker": "\(worker.hexIdentity)", "credit": "\(credit)", "workers": "\(service.workers.count)",
        ])
        dispatch(service)
    }

    private func handleReply(worker: WorkerRecord, frames: [ZMQFrame]) {
        // [worker, empty, MDPW01, 0x03, client, empty, header, payload, attachment?]
        // A worker whose reply cannot be matched to a request breaks the protocol: forgetting the
        // reply would leave its caller waiting and its credit held, so the worker goes, and the
        // requests it holds are answered "worker lost".
        guard frames.count == 8 || frames.count == 9, frames[5].count == 0 else {
            return rejectReply(worker, "a malformed REPLY (it must be: client, empty, header, payload[, attachment])")
        }
        guard let header = try? ReplyHeader.decode(frames[6].data) else {
            return rejectReply(worker, "a REPLY whose header is not a JSON object with id and code")
        }
        let client = frames[4].data
        guard let request = worker.inFlight.removeValue(forKey: RequestKey(client: client, id: header.id)) else {
            logger.debug("dropping a reply to a request the worker does not hold", metadata: ["request": "\(header.id)"])
            return
        }
        let service = worker.service
        let replyBytes = frames[6...].reduce(0) { $0 + $1.count }
        var parts: [Part] = [.bytes(MDP.Frames.empty), .bytes(MDP.Frames.client), .bytes(Data(service.name.utf8)), .frame(frames[6]), .frame(frames[7])]
        if frames.count == 9 { parts.append(.frame(frames[8])) }
        send(to: client, parts)
        if tracer.isEnabled {
            publishTrace(RPCTrace(
                service: service.name, method: request.methodName, id: request.id, code: header.code.rawValue,
                latencyUs: (clock.now - request.receivedAt).wholeMicroseconds, requestBytes: request.requestBytes,
                replyBytes: replyBytes, user: request.user, fromBroker: false))
        }
        dispatch(service)
    }

    private func rejectReply(_ worker: WorkerRecord, _ what: String) {
        removeWorker(worker, reason: "it sent \(what)")
        disconnect(worker.identity, reason: "it sent \(what)")
    }

    func disconnect(_ identity: Data, reason: String) {
        logger.warning("disconnecting worker", metadata: ["worker": "\(hex(identity))", "reason": "\(reason)"])
        send(to: identity, [.bytes(MDP.Frames.empty), .bytes(MDP.Frames.worker), .bytes(MDP.Command.disconnect.frame)])
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
        for request in worker.inFlight.values {
            replyError(request.client, service: service.name, id: request.id,
                       .unavailable("worker lost: the worker of \(service.name) holding this request went away (\(reason))"),
                       trace: (request.methodName, request.user, request.receivedAt, request.requestBytes))
        }
        worker.inFlight.removeAll()
        if service.workers.isEmpty {
            for request in service.queue.removeAll(where: { _ in true }) {
                replyError(request.client, service: service.name, id: request.id,
                           .unavailable("no responders: the last worker of service '\(service.name)' went away"),
                           trace: (request.methodName, request.user, request.receivedAt, request.requestBytes))
            }
        } else {
            dispatch(service)
        }
    }

    // MARK: What the broker answers itself

    private func handleMMI(client: Data, service: String, frames: [ZMQFrame], receivedAt: ContinuousClock.Instant) {
        // 8/MMI form: [client, empty, MDPC01, mmi.x, body]; StudyBus form adds header and payload.
        var requestHeader: RequestHeader?
        if frames.count >= 6 {
            do {
                requestHeader = try RequestHeader.decode(frames[5].data)
            } catch {
                replyError(client, service: service, id: "", error, trace: nil)
                return
            }
        }
        let replyHeader = requestHeader.map { ReplyHeader(id: $0.id).encoded() }
        let body: Data
        if service == BrokerProtocol.mmiService {
            let name = frames.count >= 5 ? frames[4].string : ""
            let known = name == BrokerProtocol.serviceName || services[name]?.workers.isEmpty == false
            body = Data((known ? "200" : "404").utf8)
        } else {
            let statuses = services.values.sorted { $0.name < $1.name }.map {
                ServiceStatus(name: $0.name, workers: $0.workers.count, credit: $0.totalCredit, inFlight: $0.inFlight,
                              queued: $0.queue.count, requests: $0.requests)
            }
            body = (try? WireCoding.encode(statuses)) ?? Data("[]".utf8)
        }
        var parts: [Part] = [.bytes(MDP.Frames.empty), .bytes(MDP.Frames.client), .bytes(Data(service.utf8))]
        if let replyHeader { parts.append(.bytes(replyHeader)) }
        parts.append(.bytes(body))
        send(to: client, parts)
        guard tracer.isEnabled else { return }
        let trace: TraceContext = (frames.count >= 5 ? frames[4].string : "", requestHeader?.user, receivedAt, frames[4...].reduce(0) { $0 + $1.count })
        traceOwnAnswer(service: service, id: requestHeader?.id ?? "", code: .ok, trace: trace, replyBytes: (replyHeader?.count ?? 0) + body.count)
    }

    /// The `bus.rpc` event of a request the broker answered itself.
    private func traceOwnAnswer(service: String, id: String, code: StatusCode, trace: TraceContext, replyBytes: Int) {
        guard tracer.isEnabled else { return }
        publishTrace(RPCTrace(
            service: service, method: trace.method, id: id, code: code.rawValue,
            latencyUs: (clock.now - trace.receivedAt).wholeMicroseconds, requestBytes: trace.requestBytes,
            replyBytes: replyBytes, user: trace.user, fromBroker: true))
    }

    private func answerOwnMethod(client: Data, header: RequestHeader, method: String, trace: TraceContext) {
        let payload: Data?
        switch method {
        case "_health":
            payload = try? WireCoding.encode(HealthStatus(status: .serving))
        case "_describe":
            let description = ServiceDescription(
                service: BrokerProtocol.serviceName,
                methods: [Reserved.health(BrokerProtocol.serviceName), Reserved.describe(BrokerProtocol.serviceName)],
                topics: [BrokerProtocol.rpc])
            payload = try? WireCoding.encode(description)
        default:
            payload = nil
        }
        guard let payload else {
            replyError(client, service: BrokerProtocol.serviceName, id: header.id,
                       .unimplemented("the broker answers only _health and _describe; mmi.service and mmi.services are services of their own"),
                       trace: trace)
            return
        }
        let replyHeader = ReplyHeader(id: header.id).encoded()
        send(to: client, [.bytes(MDP.Frames.empty), .bytes(MDP.Frames.client), .bytes(Data(BrokerProtocol.serviceName.utf8)), .bytes(replyHeader), .bytes(payload)])
        traceOwnAnswer(service: BrokerProtocol.serviceName, id: header.id, code: .ok, trace: trace, replyBytes: replyHeader.count + payload.count)
    }
}
