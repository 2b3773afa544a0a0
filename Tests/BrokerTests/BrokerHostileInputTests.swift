import BrokerCore
import Bus
import Foundation
import Synchronization
import TestSupport
import Testing
import Wire
import ZMQ

/// A broker on ephemeral loopback ports with `configure` applied to its configuration, and a
/// heartbeat slow enough that raw workers, which do not beat, stay registered.
func startConfiguredBroker(heartbeatMs: Int = BrokerRoutingTests.silentWorkerHeartbeatMs, _ configure: (inout BrokerConfiguration) -> Void) async throws -> (Broker, Broker.Endpoints) {
    var configuration = BrokerConfiguration()
    configuration.rpcBind = "tcp://127.0.0.1:*"
    configuration.pubBind = "tcp://127.0.0.1:*"
    configuration.subBind = "tcp://127.0.0.1:*"
    configuration.heartbeatInterval = .milliseconds(heartbeatMs)
    configure(&configuration)
    let broker = try Broker(configuration: configuration, logger: testLogger("broker"))
    return (broker, try await broker.start())
}

/// Calls `echo` again and again until stopped, keeping the longest round trip: what an honest
/// caller sees while someone else attacks the broker.
final class RoundTripWatch: Sendable {
    private struct Seen {
        var calls = 0
        var longest = Duration.zero
        var failures: [String] = []
    }

    private let seen = Mutex(Seen())
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ client: Bus) {
        let handle = Task { [weak self] in
            while !Task.isCancelled {
                let started = ContinuousClock.now
                var failure: String?
                do {
                    _ = try await client.call(Echo.echo, EchoRequest(text: "ping"), options: CallOptions(timeout: .seconds(20)))
                } catch {
                    failure = "\(error)"
                }
                let took = ContinuousClock.now - started
                if Task.isCancelled { break }
                self?.seen.withLock { seen in
                    seen.calls += 1
                    seen.longest = max(seen.longest, took)
                    if let failure { seen.failures.append(failure) }
                }
            }
        }
        task.withLock { $0 = handle }
    }

    /// Stops calling; returns the calls made, the longest round trip and the failures.
    func stop() async -> (calls: Int, longest: Duration, failures: [String]) {
        let handle = task.withLock { $0 }
        handle?.cancel()
        await handle?.value
        return seen.withLock { ($0.calls, $0.longest, $0.failures) }
    }
}

@Suite("Hostile peers cannot take the broker down or make it do unbounded work")
struct BrokerHostileInputTests {
    @Test("30,000 subscriptions from one socket, then its close, keep every concurrent call under a second")
    func subscriptionFlood() async throws {
        let (broker, endpoints) = try await startConfiguredBroker(heartbeatMs: 1000) { _ in }
        try await withWorld(EchoWorld.start(broker: broker, endpoints: endpoints, heartbeatMs: 1000)) { world in
            let watch = RoundTripWatch(world.client)
            // No high-water mark: libzmq drops subscriptions a SUB cannot queue, and all must go.
            let flood = try await RawPeer.connect(endpoints.sub, type: .sub, options: [(.sendHighWaterMark, 0)], timeoutMs: 200)
            try await flood.subscribe((0..<30_000).map { "flood.\($0)." })
            // Subscriptions travel in order: once the last one delivers an event, the broker's
            // XPUB has taken in all 30,000.
            try await flood.subscribe([Echo.echoed.name])
            try await eventually("the flooding socket's subscriptions reached the broker") {
                try world.client.publish(Echo.echoed, EchoReply(text: "probe"))
                return await flood.receive() != nil
            }
            await flood.close()
            // The broker learns of the close and takes in 30,000 unsubscriptions; calls go on.
            try await Task.sleep(for: .seconds(3))
            let seen = await watch.stop()
            #expect(seen.failures.isEmpty, "\(seen.failures.prefix(3))")
            #expect(seen.calls > 10)
            #expect(seen.longest < .seconds(1), "longest round trip \(seen.longest) over \(seen.calls) calls")
        }
    }

    @Test("a subscription longer than BROKER_MAX_SUBSCRIPTION_BYTES disconnects its subscriber; one at the limit is served")
    func subscriptionLength() async throws {
        let (broker, endpoints) = try await startConfiguredBroker(heartbeatMs: 1000) { $0.maxSubscriptionBytes = 64 }
        try await withWorld(EchoWorld.start(broker: broker, endpoints: endpoints, heartbeatMs: 1000)) { world in
            let topic = "echo." + String(repeating: "a", count: 300)
            let atLimit = try await RawPeer.connect(endpoints.sub, type: .sub, timeoutMs: 50)
            try await atLimit.subscribe([String(topic.prefix(64))])
            let over = try await RawPeer.connect(endpoints.sub, type: .sub, timeoutMs: 50)
            try await over.subscribe([String(topic.prefix(200))])
            var received = 0
            try await eventually("events reach the subscriber whose prefix is at the limit") {
                try world.client.publish(topic: topic, payload: Data("{}".utf8))
                if await atLimit.receive() != nil { received += 1 }
                return received >= 5
            }
            #expect(await over.receive(timeoutMs: 200) == nil, "the longer subscription never took effect")
            let reply = try await world.client.call(Echo.echo, EchoRequest(text: "still routing"))
            #expect(reply.text == "still routing")
            await atLimit.close()
            await over.close()
        }
    }

    @Test("an event frame over BROKER_MAX_EVENT_BYTES disconnects its publisher and reaches no subscriber; other events flow")
    func oversizedEventFrame() async throws {
        try await withBroker(startConfiguredBroker(heartbeatMs: 1000) { $0.maxEventBytes = 10_000 }) { broker, endpoints in
            let subscriber = try await RawPeer.connect(endpoints.sub, type: .sub, timeoutMs: 100)
            try await subscriber.subscribe(["raw."])
            let rawPublisher = try await RawPeer.connect(endpoints.pub, type: .pub)
            func event(_ topic: String, payloadBytes: Int) -> [Data] {
                [Data(topic.utf8), EventHeader(id: topic, source: "raw", instance: "r", seq: 1, ts: 0).encoded(), Data(count: payloadBytes)]
            }
            // Until the broker has subscribed to the publisher and the subscriber to the broker.
            try await eventually("a small event gets through") {
                try await rawPublisher.send(event("raw.small", payloadBytes: 100))
                return await subscriber.receive() != nil
            }
            while await subscriber.receive() != nil {}
            try await rawPublisher.send(event("raw.big", payloadBytes: 20_000))
            #expect(await subscriber.receive(timeoutMs: 1000) == nil, "the oversized event reached a subscriber")
            let bus = try Bus(configuration: busConfiguration(endpoints, source: "honest"), logger: testLogger("honest"))
            try await eventually("an honest publisher's event gets through") {
                try bus.publish(topic: "raw.fine", payload: Data("{}".utf8))
                return await subscriber.receive()?.first == Data("raw.fine".utf8)
            }
            await bus.shutdown()
            await rawPublisher.close()
            await subscriber.close()
        }
    }

    // MARK: Requests

    @Test("a second request under an id the client has outstanding is INVALID_ARGUMENT; the first is served, credit and queue hold")
    func duplicateRequestIDs() async throws {
        try await withBroker(startConfiguredBroker { $0.maxQueuedPerService = 2 }) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("dup", credit: 2)
            try await waitForWorkers(endpoints, "dup", count: 1)
            let client = try await RawPeer.connect(endpoints.rpc)
            try await client.request("dup", "m", id: "same", deadlineMs: nowMs() + 10_000)
            let first = try #require(await worker.nextRequest())
            #expect(first.header.id == "same")
            // Before, each repeat overwrote the first at the worker and took credit it did not have.
            for _ in 0..<20 { try await client.request("dup", "m", id: "same", deadlineMs: nowMs() + 10_000) }
            for _ in 0..<20 {
                let refused = try #require(await client.reply())
                #expect(refused.header.id == "same" && refused.header.code == .invalidArgument)
                #expect(refused.header.message?.contains("in use") == true)
            }
            #expect(await worker.nextRequest(timeoutMs: 300) == nil, "no repeat reached the worker")

            // The same while the first waits in the queue; another client may use the id.
            try await client.request("dup", "m", id: "other", deadlineMs: nowMs() + 10_000)
            #expect(await worker.nextRequest()?.header.id == "other")
            try await client.request("dup", "m", id: "queued", deadlineMs: nowMs() + 10_000)
            try await client.request("dup", "m", id: "queued", deadlineMs: nowMs() + 10_000)
            let refusedQueued = try #require(await client.reply())
            #expect(refusedQueued.header.id == "queued" && refusedQueued.header.code == .invalidArgument)
            let neighbour = try await RawPeer.connect(endpoints.rpc)
            try await neighbour.request("dup", "m", id: "same", deadlineMs: nowMs() + 10_000)

            // The first is answered as if nothing happened, and its id is free again.
            try await worker.answer(client: first.client, id: "same", payload: #"{"n":1}"#)
            let answer = try #require(await client.reply())
            #expect(answer.header == ReplyHeader(id: "same") && answer.payload == Data(#"{"n":1}"#.utf8))
            #expect(await worker.nextRequest()?.header.id == "queued")
            try await client.request("dup", "m", id: "same", deadlineMs: nowMs() + 10_000)
            // The broker's view once it has read the request: the worker holds two, two wait.
            try await waitForQueue(endpoints, "dup", queued: 2, inFlight: 2)
            for peer in [worker, client, neighbour] { await peer.close() }
        }
    }

    @Test("the bytes waiting in the broker are bounded per client and in all: RESOURCE_EXHAUSTED naming the setting, others served")
    func queuedBytes() async throws {
        try await withBroker(startConfiguredBroker {
            $0.maxQueuedBytesPerClient = 100_000
            $0.maxQueuedBytes = 150_000
        }) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("bytes", credit: 1)
            try await waitForWorkers(endpoints, "bytes", count: 1)
            let text = "\"" + String(repeating: "x", count: 40_000) + "\""
            let greedy = try await RawPeer.connect(endpoints.rpc), second = try await RawPeer.connect(endpoints.rpc)
            let third = try await RawPeer.connect(endpoints.rpc)
            // g0 goes to the worker; g1 and g2 wait (80 kB of greedy's); g3 would make 120 kB.
            for index in 0..<4 { try await greedy.request("bytes", "m", id: "g\(index)", payload: text) }
            let perClient = try #require(await greedy.reply())
            #expect(perClient.header.id == "g3" && perClient.header.code == .resourceExhausted)
            #expect(perClient.header.details?["setting"] == .string("BROKER_MAX_CLIENT_QUEUED_BYTES"))
            #expect(perClient.header.details?["limit"] == .int(100_000))
            // The broker's own view before the other clients come: g0 is with the worker, g1 and g2
            // wait; the worker holds g0 unanswered, so nothing leaves the queue until it answers.
            let first = try #require(await worker.nextRequest())
            #expect(first.header.id == "g0")
            try await waitForQueue(endpoints, "bytes", queued: 2, inFlight: 1)
            // s0 makes 120 kB in all; s1 would make 160 kB, over the broker's 150 kB, and so would t0.
            try await second.request("bytes", "m", id: "s0", payload: text)
            try await second.request("bytes", "m", id: "s1", payload: text)
            try await third.request("bytes", "m", id: "t0", payload: text)
            for (peer, id) in [(second, "s1"), (third, "t0")] {
                let overall = try #require(await peer.reply())
                #expect(overall.header.id == id && overall.header.code == .resourceExhausted, "\(overall.header)")
                #expect(overall.header.details?["setting"] == .string("BROKER_MAX_QUEUED_BYTES"))
            }
            // Everything admitted is served, in order, and the bytes are given back as it leaves.
            try await worker.answer(client: first.client, id: "g0")
            #expect(await greedy.reply()?.header == ReplyHeader(id: "g0"))
            for (peer, id) in [(greedy, "g1"), (greedy, "g2"), (second, "s0")] {
                let request = try #require(await worker.nextRequest())
                #expect(request.header.id == id)
                try await worker.answer(client: request.client, id: id)
                #expect(await peer.reply()?.header == ReplyHeader(id: id))
            }
            try await third.request("bytes", "m", id: "t1", payload: text)
            #expect(await worker.nextRequest()?.header.id == "t1")
            for peer in [worker, greedy, second, third] { await peer.close() }
        }
    }

    @Test("a client that does not read its replies is cut off at the high-water mark; the worker and other clients go on")
    func slowConsumer() async throws {
        try await withBroker(startConfiguredBroker { $0.highWaterMark = 50 }) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc, timeoutMs: 100)
            try await worker.ready("big", credit: 20)
            try await waitForWorkers(endpoints, "big", count: 1)
            // Every answer is 512 kB, so the few replies the socket buffers on both sides hold
            // leave the rest waiting in the broker, until 50 (the high-water mark) wait there.
            let served = Counts()
            let answering = Task {
                let payload = "\"" + String(repeating: "x", count: 512 << 10) + "\""
                while !Task.isCancelled {
                    guard let request = await worker.nextRequest() else { continue }
                    let id = request.header.id
                    served.add(id.hasPrefix("h") ? (Int(id.dropFirst()) ?? 0 >= 400 ? "late" : "hostile") : "honest")
                    try? await worker.answer(client: request.client, id: id, payload: payload)
                }
            }
            let hostile = try await RawPeer.connect(endpoints.rpc, options: [(.receiveHighWaterMark, 10)], timeoutMs: 500)
            for index in 0..<400 { try await hostile.request("big", "m", id: "h\(index)", deadlineMs: nowMs() + 60_000) }
            var last = -1
            try await eventually("the worker stops getting the hostile client's requests") {
                try await Task.sleep(for: .milliseconds(500))
                defer { last = served["hostile"] }
                return served["hostile"] == last
            }
            #expect(served["hostile"] < 400, "the rest of its queued requests were dropped when it was cut off")
            for index in 400..<450 { try await hostile.request("big", "m", id: "h\(index)", deadlineMs: nowMs() + 60_000) }
            try await Task.sleep(for: .seconds(1))
            #expect(served["late"] == 0, "what a cut-off client sends is dropped")

            let honest = try await RawPeer.connect(endpoints.rpc)
            for index in 0..<5 { try await honest.request("big", "m", id: "o\(index)", deadlineMs: nowMs() + 10_000) }
            var answered = 0
            while let reply = await honest.reply(), reply.header.code == .ok { answered += 1 }
            #expect(answered == 5)

            // What waited for the hostile client (libzmq cannot drop it) is there when it reads.
            var unread = 0
            while await hostile.reply() != nil { unread += 1 }
            #expect(unread > 0 && unread < served["hostile"], "read \(unread) of \(served["hostile"]) answered")
            answering.cancel()
            _ = await answering.value
            for peer in [worker, hostile, honest] { await peer.close() }
        }
    }

    @Test("deadlines at the ends of Int64, beyond it or negative, and absurd credits neither trap nor bypass the rules")
    func extremeHeaderNumbers() async throws {
        try await withBroker(startConfiguredBroker { _ in }) { broker, endpoints in
            for credit in ["99999999999999999999999", "-9223372036854775808", "0", "1e9", " 5"] {
                let peer = try await RawPeer.connect(endpoints.rpc)
                try await peer.send([Data(), Data(MDP.worker.utf8), MDP.Command.ready.frame, Data("credit".utf8), Data(credit.utf8)])
                #expect(await peer.receiveSkippingHeartbeats(timeoutMs: 2000)?.last == MDP.Command.disconnect.frame, "credit '\(credit)'")
                await peer.close()
            }
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.send([Data(), Data(MDP.worker.utf8), MDP.Command.ready.frame, Data("far".utf8), Data("9223372036854775807".utf8)])
            try await waitForWorkers(endpoints, "far", count: 1)
            #expect(try await brokerServices(endpoints).first { $0.name == "far" }?.credit == BrokerConfiguration().maxCredit)

            let client = try await RawPeer.connect(endpoints.rpc)
            func send(_ id: String, deadline: String) async throws {
                let header = Data(#"{"id":"\#(id)","deadline":\#(deadline)}"#.utf8)
                try await client.send([Data(), Data(MDP.client.utf8), Data("far".utf8), Data("m".utf8), header, Data("{}".utf8)])
            }
            // Far in the future: routed (or, if the header reader bounds deadlines, refused).
            try await send("max", deadline: "9223372036854775807")
            if let request = await worker.nextRequest(timeoutMs: 1000) { try await worker.answer(client: request.client, id: request.header.id) }
            #expect([.ok, .invalidArgument].contains(try #require(await client.reply()).header.code))
            // In the past, however far: answered at once.
            for (id, deadline) in [("min", "-9223372036854775808"), ("negative", "-1"), ("zero", "0")] {
                try await send(id, deadline: deadline)
                let reply = try #require(await client.reply())
                #expect(reply.header.id == id && [.deadlineExceeded, .invalidArgument].contains(reply.header.code), "deadline \(deadline)")
            }
            // Not an Int64 at all.
            for deadline in ["9223372036854775808", "1e300", "-1e300", "1.5"] {
                try await send("huge", deadline: deadline)
                #expect(try #require(await client.reply()).header.code == .invalidArgument, "deadline \(deadline)")
            }
            let services = try await brokerServices(endpoints)
            #expect(services.first { $0.name == "far" }?.inFlight == 0)
            await worker.close()
            await client.close()
        }
    }

    @Test("a deadline of Int64.max reaches a host whose handler calls on with it: no trap, the downstream call keeps its own timeout")
    func farDeadlinePropagated() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let relayBus = try Bus(configuration: busConfiguration(world.endpoints, source: "relay"), logger: testLogger("relay"))
            let relay = ServiceHost(bus: relayBus, contract: Relay, credit: 4, logger: testLogger("relay"))
            relay.handle(Relay.forward) { request, context in try await context.call(Echo.echo, request) }
            let relayTask = Task { try await relay.run() }
            try await world.waitForService("relay")
            let client = try await RawPeer.connect(world.endpoints.rpc)
            for deadline in ["9223372036854775807", "9007199254740993"] {
                let header = Data(#"{"id":"far","deadline":\#(deadline)}"#.utf8)
                try await client.send([Data(), Data(MDP.client.utf8), Data("relay".utf8), Data("forward".utf8), header, Data(#"{"text":"far"}"#.utf8)])
                let reply = try #require(await client.reply())
                // Served, or refused where the header is read; never a crash.
                #expect(reply.header.code == .ok || reply.header.code == .invalidArgument, "deadline \(deadline): \(reply.header)")
                if reply.header.code == .ok { #expect(try WireCoding.decode(EchoReply.self, from: reply.payload).text == "far") }
            }
            let reply = try await world.client.call(Relay.forward, EchoRequest(text: "still serving"))
            #expect(reply.text == "still serving")
            relayTask.cancel()
            _ = try? await relayTask.value
            await client.close()
            await relayBus.shutdown()
        }
    }

    // MARK: Services

    @Test("the record of a service whose workers left expires; a live service stays")
    func serviceRecordsExpire() async throws {
        let (broker, endpoints) = try await startConfiguredBroker(heartbeatMs: 250) { $0.serviceExpiry = .milliseconds(500) }
        try await withWorld(EchoWorld.start(broker: broker, endpoints: endpoints, heartbeatMs: 250)) { world in
            for index in 0..<50 {
                let peer = try await RawPeer.connect(endpoints.rpc)
                try await peer.ready("gone-\(index)")
                try await peer.send([Data(), Data(MDP.worker.utf8), MDP.Command.disconnect.frame])
                await peer.close()
            }
            try await eventually("the records of the services that left expire") {
                try await brokerServices(endpoints).map(\.name) == ["echo"]
            }
            // One more leaves after those expiries; once its record has expired too, the expiry
            // has run again with the live service in the table.
            let late = try await RawPeer.connect(endpoints.rpc)
            try await late.ready("gone-late")
            try await eventually("the late service registered", timeout: Wait.startup) {
                try await late.heartbeat()  // alive while the test looks
                return try await brokerServices(endpoints).map(\.name).contains("gone-late")
            }
            try await late.send([Data(), Data(MDP.worker.utf8), MDP.Command.disconnect.frame])
            await late.close()
            try await eventually("the late service's record expires") { try await brokerServices(endpoints).map(\.name) == ["echo"] }
            #expect(try await brokerServices(endpoints).first?.workers == 1, "the live service is kept")
        }
    }

    @Test("READY for a new service beyond BROKER_MAX_SERVICES replaces one without workers, or is told DISCONNECT")
    func serviceTableBounded() async throws {
        try await withBroker(startConfiguredBroker { $0.maxServices = 3 }) { broker, endpoints in
            var live: [RawPeer] = []
            for name in ["a", "b", "c"] {
                let peer = try await RawPeer.connect(endpoints.rpc)
                try await peer.ready(name)
                try await waitForWorkers(endpoints, name, count: 1)
                live.append(peer)
            }
            let late = try await RawPeer.connect(endpoints.rpc)
            try await late.ready("d")
            #expect(await late.receiveSkippingHeartbeats(timeoutMs: 2000)?.last == MDP.Command.disconnect.frame)
            #expect(try await brokerServices(endpoints).map(\.name) == ["a", "b", "c"])
            try await live[2].send([Data(), Data(MDP.worker.utf8), MDP.Command.disconnect.frame])
            try await waitForWorkers(endpoints, "c", count: 0)
            let replacing = try await RawPeer.connect(endpoints.rpc)
            try await replacing.ready("d")
            try await waitForWorkers(endpoints, "d", count: 1)
            #expect(try await brokerServices(endpoints).map(\.name) == ["a", "b", "d"])
            for peer in live + [late, replacing] { await peer.close() }
        }
    }
}

/// A service that calls echo on behalf of its caller, with the caller's deadline.
struct RelayContract: ServiceContract {
    static let serviceName = "relay"
    let forward = Method<EchoRequest, EchoReply>(Self.self, "forward", "Calls echo with the request's user and deadline.", audience: .app)
}

let Relay = RelayContract()

/// Counts by key, from any task.
final class Counts: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    func add(_ key: String) { counts.withLock { $0[key, default: 0] += 1 } }
    subscript(key: String) -> Int { counts.withLock { $0[key] ?? 0 } }
}

/// What the broker's `mmi.services` says now.
func brokerServices(_ endpoints: Broker.Endpoints) async throws -> [ServiceStatus] {
    let bus = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("probe"))
    let services = try await bus.call(BrokerProtocol.services, Empty())
    await bus.shutdown()
    return services
}
