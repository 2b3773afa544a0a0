import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

/// What the broker does with workers that break the rules of 7/MDP and of our extensions.
@Suite("Broker rules for workers: heartbeats, READY, REPLY, limits")
struct BrokerWorkerRulesTests {
    /// Whether `peer` is told DISCONNECT by the broker within a second.
    private func isDisconnected(_ peer: RawPeer) async -> Bool {
        await peer.receiveSkippingHeartbeats(timeoutMs: 1000)?.last == MDP.Command.disconnect.frame
    }

    private func brokerServices(_ endpoints: Broker.Endpoints) async throws -> [ServiceStatus] {
        let bus = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("probe"))
        defer { Task { await bus.shutdown() } }
        return try await bus.call(BrokerProtocol.services, Empty())
    }

    @Test("a worker that stays connected but stops heartbeating expires; its request is answered worker lost; one that heartbeats stays")
    func silentWorkerExpires() async throws {
        try await withBroker(startBroker(heartbeatMs: 1000)) { broker, endpoints in
            let silent = try await RawPeer.connect(endpoints.rpc)
            let live = try await RawPeer.connect(endpoints.rpc)
            try await silent.ready("quiet", credit: 1)
            try await live.ready("chatty", credit: 1)
            try await waitForWorkers(endpoints, "quiet", count: 1)
            let client = try await RawPeer.connect(endpoints.rpc)
            try await client.request("quiet", "m", id: "held", deadlineMs: nowMs() + 10_000)
            #expect(await silent.nextRequest()?.header.id == "held")

            // Three intervals of silence (3 s) and the broker gives up on the worker; the other,
            // beating every 100 ms, stays however slow the machine. The request's own deadline is
            // 10 s away: an answer "worker lost" (not DEADLINE_EXCEEDED) means the worker expired.
            for _ in 0..<40 {
                try await live.heartbeat()
                try await Task.sleep(for: .milliseconds(100))
            }
            let reply = try #require(await client.reply())
            #expect(reply.header.id == "held" && reply.header.code == .unavailable)
            #expect(reply.header.message?.contains("worker lost") == true)
            let services = try await brokerServices(endpoints)
            #expect(services.first { $0.name == "quiet" }?.workers ?? 0 == 0)
            #expect(services.first { $0.name == "chatty" }?.workers == 1)
            for peer in [silent, live, client] { await peer.close() }
        }
    }

    @Test("a REPLY the broker cannot match (bad header, wrong frames) removes the worker: its callers get worker lost, not silence")
    func malformedReplyRemovesWorker() async throws {
        try await withBroker(startBroker(heartbeatMs: BrokerRoutingTests.silentWorkerHeartbeatMs)) { broker, endpoints in
            for (name, reply) in [
                ("bad-header", { (client: Data) in [Data(), Data(MDP.worker.utf8), MDP.Command.reply.frame, client, Data(), Data("[1]".utf8), Data("{}".utf8)] }),
                ("no-payload", { (client: Data) in [Data(), Data(MDP.worker.utf8), MDP.Command.reply.frame, client, Data(), ReplyHeader(id: "a").encoded()] }),
            ] {
                let worker = try await RawPeer.connect(endpoints.rpc)
                try await worker.ready(name, credit: 2)
                try await waitForWorkers(endpoints, name, count: 1)
                let client = try await RawPeer.connect(endpoints.rpc)
                try await client.request(name, "m", id: "a", deadlineMs: nowMs() + 10_000)
                try await client.request(name, "m", id: "b", deadlineMs: nowMs() + 10_000)
                let first = try #require(await worker.nextRequest())
                _ = await worker.nextRequest()
                try await worker.send(reply(first.client))
                let answers = [await client.reply(timeoutMs: 2000), await client.reply(timeoutMs: 2000)].compactMap { $0 }
                #expect(Set(answers.map(\.header.id)) == ["a", "b"], "\(name): both callers are answered")
                #expect(answers.allSatisfy { $0.header.code == .unavailable && $0.header.message?.contains("worker lost") == true })
                #expect(answers.allSatisfy { $0.header.message?.contains("REPLY") == true }, "\(name): the reason names the bad REPLY")
                #expect(await isDisconnected(worker), "\(name): the worker is told DISCONNECT")
                await worker.close()
                await client.close()
            }
        }
    }

    @Test("READY twice, READY for a reserved name and a credit beyond the cap: DISCONNECT or the cap")
    func readyRules() async throws {
        try await withBroker(startBroker(heartbeatMs: BrokerRoutingTests.silentWorkerHeartbeatMs)) { broker, endpoints in
            let twice = try await RawPeer.connect(endpoints.rpc)
            try await twice.ready("echo-twice", credit: 1)
            try await waitForWorkers(endpoints, "echo-twice", count: 1)
            try await twice.ready("echo-twice", credit: 1)
            #expect(await isDisconnected(twice))
            try await waitForWorkers(endpoints, "echo-twice", count: 0)

            for reserved in ["mmi.service", "broker", ""] {
                let peer = try await RawPeer.connect(endpoints.rpc)
                try await peer.ready(reserved, credit: 1)
                #expect(await isDisconnected(peer), "READY for '\(reserved)'")
                await peer.close()
            }

            let greedy = try await RawPeer.connect(endpoints.rpc)
            try await greedy.ready("greedy", credit: 50_000)
            try await waitForWorkers(endpoints, "greedy", count: 1)
            #expect(try await brokerServices(endpoints).first { $0.name == "greedy" }?.credit == BrokerConfiguration().maxCredit)
            for peer in [twice, greedy] { await peer.close() }
        }
    }

    @Test("a frame over BROKER_MAX_MESSAGE_BYTES is not routed, and the broker goes on serving")
    func maximumMessageSize() async throws {
        try await withBroker(startBroker(heartbeatMs: BrokerRoutingTests.silentWorkerHeartbeatMs, maxMessageBytes: 10_000)) { broker, endpoints in
            let worker = try await RawPeer.connect(endpoints.rpc)
            try await worker.ready("sized", credit: 4)
            try await waitForWorkers(endpoints, "sized", count: 1)
            let big = try await RawPeer.connect(endpoints.rpc)
            try await big.request("sized", "m", id: "big", deadlineMs: nowMs() + 10_000, payload: "\"" + String(repeating: "x", count: 20_000) + "\"")
            #expect(await worker.nextRequest(timeoutMs: 1000) == nil, "the oversized request never reaches the worker")
            let small = try await RawPeer.connect(endpoints.rpc)
            try await small.request("sized", "m", id: "small", deadlineMs: nowMs() + 10_000)
            let request = try #require(await worker.nextRequest())
            #expect(request.header.id == "small")
            try await worker.answer(client: request.client, id: "small")
            #expect(await small.reply()?.header == ReplyHeader(id: "small"))
            for peer in [worker, big, small] { await peer.close() }
        }
    }
}
