import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

@Suite("Broker routing and the replies it gives itself (wire protocol §2.5)")
struct BrokerRoutingTests {
    /// Raw workers in these tests never send heartbeats, and the broker drops a worker after three
    /// silent intervals: a long interval keeps them registered however loaded the machine is.
    /// The test of a dying worker needs the broker to notice a lost peer quickly, and the fuzz
    /// test's Swift worker expects the broker's heartbeats at its own pace: those keep 1 s.
    static let silentWorkerHeartbeatMs = 10_000

    @Test("a request for a service without workers is UNAVAILABLE: no responders")
    func noResponders() async throws {
        try await withBroker(startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs)) { broker, endpoints in
            let client = try await RawPeer.connect(endpoints.rpc)
            try await client.request("nosuch", "m", id: "r1")
            let reply = try #require(await client.reply())
            #expect(reply.header.id == "r1")
            #expect(reply.header.code == .unavailable)
            #expect(reply.header.message?.contains("no responders") == true)
            #expect(reply.payload.isEmpty)
            await client.close()
        }
    }

    @Test("a request whose deadline passes while queued is answered DEADLINE_EXCEEDED by the broker")
    func deadlineInQueue() async throws {
        try await withBroker(startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs)) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("slow", credit: 1)
            let client = try await RawPeer.connect(endpoints.rpc)
            try await waitForWorkers(endpoints, "slow", count: 1)
            try await client.request("slow", "hold", id: "first", deadlineMs: nowMs() + 10_000)
            #expect(await worker.nextRequest()?.header.id == "first")
            let sent = ContinuousClock.now
            try await client.request("slow", "hold", id: "second", deadlineMs: nowMs() + 150)
            let reply = try #require(await client.reply())
            #expect(reply.header.id == "second")
            #expect(reply.header.code == .deadlineExceeded)
            #expect(reply.header.message?.contains("waited in the broker") == true)
            #expect(ContinuousClock.now - sent >= .milliseconds(140))
            await worker.close()
            await client.close()
        }
    }

    @Test("a request to a full queue is RESOURCE_EXHAUSTED")
    func queueFull() async throws {
        try await withBroker(startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs, maxQueue: 2)) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("busy", credit: 1)
            try await waitForWorkers(endpoints, "busy", count: 1)
            let client = try await RawPeer.connect(endpoints.rpc)
            for index in 1...4 { try await client.request("busy", "m", id: "r\(index)", deadlineMs: nowMs() + 10_000) }
            let reply = try #require(await client.reply())
            #expect(reply.header.id == "r4")
            #expect(reply.header.code == .resourceExhausted)
            #expect(reply.header.message?.contains("queue") == true)
            await worker.close()
            await client.close()
        }
    }

    @Test("when the worker holding a request dies, the caller gets UNAVAILABLE: worker lost")
    func workerDiesHoldingRequest() async throws {
        try await withBroker(startBroker(heartbeatMs: 1000)) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("fragile", credit: 4)
            try await waitForWorkers(endpoints, "fragile", count: 1)
            let client = try await RawPeer.connect(endpoints.rpc)
            try await client.request("fragile", "m", id: "held", deadlineMs: nowMs() + 10_000)
            #expect(await worker.nextRequest()?.header.id == "held")
            await worker.close()  // the connection drops without a DISCONNECT, as when a process is killed
            let reply = try #require(await client.reply())
            #expect(reply.header.id == "held")
            #expect(reply.header.code == .unavailable)
            #expect(reply.header.message?.contains("worker lost") == true)
            await client.close()
        }
    }

    @Test("a worker that sends DISCONNECT while holding requests loses them to UNAVAILABLE")
    func workerDisconnects() async throws {
        try await withBroker(startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs)) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("leaving", credit: 2)
            try await waitForWorkers(endpoints, "leaving", count: 1)
            let client = try await RawPeer.connect(endpoints.rpc)
            try await client.request("leaving", "m", id: "a", deadlineMs: nowMs() + 10_000)
            _ = await worker.nextRequest()
            try await worker.send([Data(), Data(MDP.worker.utf8), MDP.Command.disconnect.frame])
            let reply = try #require(await client.reply())
            #expect(reply.header.code == .unavailable)
            await worker.close()
            await client.close()
        }
    }

    @Test("requests spread over a service's workers by free credit")
    func spreadByCredit() async throws {
        try await withBroker(startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs)) { broker, endpoints in
            let first = try await RawPeer.connect(endpoints.rpc), second = try await RawPeer.connect(endpoints.rpc)
            try await first.ready("spread", credit: 2)
            try await second.ready("spread", credit: 2)
            try await waitForWorkers(endpoints, "spread", count: 2)
            let client = try await RawPeer.connect(endpoints.rpc)
            for index in 1...4 { try await client.request("spread", "m", id: "r\(index)", deadlineMs: nowMs() + 10_000) }
            let atFirst = [await first.nextRequest(), await first.nextRequest()].compactMap { $0 }
            let atSecond = [await second.nextRequest(), await second.nextRequest()].compactMap { $0 }
            #expect(atFirst.count == 2 && atSecond.count == 2)
            #expect(Set((atFirst + atSecond).map(\.header.id)) == ["r1", "r2", "r3", "r4"])
            for peer in [first, second, client] { await peer.close() }
        }
    }

    @Test("a plain 7/MDP worker (READY without credit) holds one request at a time")
    func plainMDPWorkerHasCreditOne() async throws {
        try await withPlainWorker("plain") { worker, client in
            try await client.request("plain", "m", id: "one", deadlineMs: nowMs() + 10_000)
            try await client.request("plain", "m", id: "two", deadlineMs: nowMs() + 10_000)
            let first = try #require(await worker.nextRequest())
            #expect(await worker.nextRequest(timeoutMs: 500) == nil, "a second request must wait for the first reply")
            try await worker.answer(client: first.client, id: "one", payload: #"{"n":1}"#, attachment: Data([0, 1, 2]))
            let reply = try #require(await client.reply())
            #expect(reply.header == ReplyHeader(id: "one"))
            #expect(reply.payload == Data(#"{"n":1}"#.utf8))
            #expect(reply.frames.count == 6 && reply.frames[5] == Data([0, 1, 2]))
            #expect(await worker.nextRequest()?.header.id == "two")
        }
    }

    @Test("requests that wait in the queue reach the worker with their parts intact: payload, attachment, or no payload at all")
    func queuedRequestsKeepTheirParts() async throws {
        try await withPlainWorker("queued") { worker, client in
            let attachment = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            func request(_ id: String, _ rest: [Data]) -> [Data] {
                [Data(), Data(MDP.client.utf8), Data("queued".utf8), Data("m.\(id)".utf8), RequestHeader(id: id, deadline: nowMs() + 10_000).encoded()] + rest
            }
            // The worker holds one request at a time, so the second and third wait in the queue.
            try await client.send(request("first", [Data(#"{"n":1}"#.utf8)]))
            try await client.send(request("second", [Data(#"{"n":2}"#.utf8), attachment]))
            try await client.send(request("third", []))
            var received: [[Data]] = []
            for id in ["first", "second", "third"] {
                let next = try #require(await worker.nextRequest())
                #expect(next.header.id == id && next.method == "m.\(id)")
                received.append(next.frames)
                try await worker.answer(client: next.client, id: id)
            }
            #expect(received[0].count == 8 && received[0][7] == Data(#"{"n":1}"#.utf8))
            #expect(received[1].count == 9 && received[1][7] == Data(#"{"n":2}"#.utf8) && received[1][8] == attachment)
            #expect(received[2].count == 8 && received[2][7].isEmpty, "a request without payload reaches the worker with an empty one")
            for id in ["first", "second", "third"] { #expect(await client.reply()?.header.id == id) }
        }
    }

    /// A broker with one plain 7/MDP worker of `service` (READY without credit: one request at
    /// a time) and a client, all stopped after `body`.
    private func withPlainWorker(_ service: String, _ body: (_ worker: RawPeer, _ client: RawPeer) async throws -> Void) async throws {
        let (broker, endpoints) = try await startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs)
        let worker = try await RawPeer.connect(endpoints.rpc)
        try await worker.ready(service)
        try await waitForWorkers(endpoints, service, count: 1)
        let client = try await RawPeer.connect(endpoints.rpc)
        let outcome: Result<Void, any Error>
        do { outcome = .success(try await body(worker, client)) } catch { outcome = .failure(error) }
        await worker.close()
        await client.close()
        await broker.stop()
        try outcome.get()
    }

    @Test("headers that are not JSON objects and requests with missing frames are INVALID_ARGUMENT")
    func malformedRequests() async throws {
        try await withBroker(startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs)) { broker, endpoints in
            let client = try await RawPeer.connect(endpoints.rpc)
            try await client.send([Data(), Data(MDP.client.utf8), Data("svc".utf8), Data("m".utf8), Data("[1,2]".utf8), Data()])
            #expect(await client.reply()?.header.code == .invalidArgument)
            try await client.send([Data(), Data(MDP.client.utf8), Data("svc".utf8), Data("m".utf8), Data("{not json".utf8), Data()])
            #expect(await client.reply()?.header.code == .invalidArgument)
            try await client.send([Data(), Data(MDP.client.utf8), Data("svc".utf8)])
            let missing = try #require(await client.reply())
            #expect(missing.header.code == .invalidArgument)
            #expect(missing.header.message?.contains("frames") == true)
            try await client.send([Data(), Data(MDP.client.utf8), Data("svc".utf8), Data("m".utf8), Data(#"{"id":""}"#.utf8), Data()])
            #expect(await client.reply()?.header.message?.contains("'id'") == true)
            // More frames than the broker keeps of a message: still counted, all of them.
            try await client.send([Data(), Data(MDP.client.utf8), Data("svc".utf8), Data("m".utf8), RequestHeader(id: "many").encoded()]
                                  + Array(repeating: Data("x".utf8), count: 15))
            let tooMany = try #require(await client.reply())
            #expect(tooMany.header.code == .invalidArgument)
            #expect(tooMany.header.message?.contains("got 20 frames") == true)
            await client.close()
        }
    }

    @Test("mmi.service answers 200 or 404 in both the 8/MMI and the StudyBus form; mmi.services lists counts")
    func serviceDiscovery() async throws {
        try await withBroker(startBroker(heartbeatMs: Self.silentWorkerHeartbeatMs)) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("known", credit: 3)
            try await waitForWorkers(endpoints, "known", count: 1)
            let client = try await RawPeer.connect(endpoints.rpc)
            try await client.send(["", "MDPC01", "mmi.service", "known"])
            #expect(await client.receive() == ["", "MDPC01", "mmi.service", "200"].map { Data($0.utf8) })
            try await client.send(["", "MDPC01", "mmi.service", "unknown"])
            #expect(await client.receive()?.last == Data("404".utf8))
            try await client.request("mmi.service", "known", id: "q")
            let typed = try #require(await client.reply())
            #expect(typed.header == ReplyHeader(id: "q") && typed.payload == Data("200".utf8))
            try await client.request("mmi.services", "list", id: "s")
            let list = try WireCoding.decode([ServiceStatus].self, from: try #require(await client.reply()).payload)
            #expect(list.map { ServiceStatus(name: $0.name, workers: $0.workers, credit: $0.credit, inFlight: $0.inFlight, queued: $0.queued, requests: $0.requests) }
                    == [ServiceStatus(name: "known", workers: 1, credit: 3, inFlight: 0, queued: 0, requests: 0)])
            // The worker, which has not answered the broker's _health (Addition 19).
            #expect(list.first?.instances?.map { [$0.credit, $0.inFlight] } == [[3, 0]] && list.first?.instances?.first?.build == nil)
            await worker.close()
            await client.close()
        }
    }

    @Test("hundreds of random multi-frame messages neither crash nor stall the broker")
    func fuzz() async throws {
        let (broker, endpoints) = try await startBroker(heartbeatMs: 1000)
        var generator = SystemRandomNumberGenerator()
        let prefixes: [[Data]] = [
            [], [Data()], [Data(), Data(MDP.client.utf8)], [Data(), Data(MDP.worker.utf8)],
            [Data(), Data(MDP.worker.utf8), MDP.Command.ready.frame], [Data(), Data(MDP.worker.utf8), MDP.Command.reply.frame],
            [Data(), Data(MDP.worker.utf8), MDP.Command.heartbeat.frame], [Data(), Data(MDP.worker.utf8), Data([0x09])],
            [Data(), Data(MDP.client.utf8), Data("mmi.service".utf8)], [Data(), Data(MDP.client.utf8), Data("broker".utf8)],
        ]
        var peers: [RawPeer] = []
        for _ in 0..<8 { peers.append(try await RawPeer.connect(endpoints.rpc, timeoutMs: 10)) }
        for index in 0..<800 {
            var frames = prefixes.randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 0...9, using: &generator) {
                let length = [0, 1, 2, 6, 40, 300].randomElement(using: &generator)!
                frames.append(Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }))
            }
            if index % 7 == 0 { frames.append(Data(#"{"id":"x","deadline":"soon","meta":{"a":1}}"#.utf8)) }
            if frames.isEmpty { frames = [Data([0xFF])] }
            try await peers[index % peers.count].send(frames)
        }
        for peer in peers {
            while await peer.receive() != nil {}
            await peer.close()
        }
        try await withWorld(EchoWorld.start(broker: broker, endpoints: endpoints, heartbeatMs: 1000)) { world in
            let reply = try await world.client.call(Echo.echo, EchoRequest(text: "still routing"), options: CallOptions(timeout: .seconds(5)))
            #expect(reply.text == "still routing")
        }
    }
}

/// Waits until the broker reports `count` workers for `service`.
/// Waits until the broker's `mmi.services` shows `service` with `queued` requests waiting and
/// `inFlight` held by its workers: the broker's own view, not the time it might take.
func waitForQueue(_ endpoints: Broker.Endpoints, _ service: String, queued: Int, inFlight: Int) async throws {
    let bus = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("probe"))
    try await eventually("\(service): \(queued) queued, \(inFlight) in flight") {
        let status = (try? await bus.call(BrokerProtocol.services, Empty()))?.first { $0.name == service }
        return status?.queued == queued && status?.inFlight == inFlight
    }
    await bus.shutdown()
}

func waitForWorkers(_ endpoints: Broker.Endpoints, _ service: String, count: Int) async throws {
    let bus = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("probe"))
    try await eventually("\(count) worker(s) of \(service)") {
        let services = (try? await bus.call(BrokerProtocol.services, Empty())) ?? []
        return services.first { $0.name == service }?.workers == count
    }
    await bus.shutdown()
}
