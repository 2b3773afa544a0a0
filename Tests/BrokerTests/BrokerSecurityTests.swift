import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire
import ZMQ

/// A CURVE broker with an allowlist, and keys of every role made before it starts.
private struct SecureBroker: TestWorld {
    let keys: TestKeys
    let broker: Broker
    let endpoints: Broker.Endpoints
    let operatorKeys: CurveClientKeys
    let echoKeys: CurveClientKeys
    let userKeys: CurveClientKeys
    let edgeKeys: CurveClientKeys

    static func start() async throws -> SecureBroker {
        let keys = try TestKeys()
        func listed(_ security: BusSecurity) -> CurveClientKeys { security.keys! }
        let operatorKeys = listed(try keys.operator())
        let echoKeys = listed(try keys.service("echo"))
        let userKeys = listed(try keys.user("u1"))
        let edgeKeys = listed(try keys.edge())
        // Raw workers here do not send heartbeats: a long interval keeps them registered.
        let (broker, endpoints) = try await startBroker(heartbeatMs: 10_000, keys: keys)
        return SecureBroker(keys: keys, broker: broker, endpoints: endpoints, operatorKeys: operatorKeys, echoKeys: echoKeys, userKeys: userKeys, edgeKeys: edgeKeys)
    }

    func peer(_ keys: CurveClientKeys?, type: ZMQSocketType = .dealer, endpoint: String? = nil, timeoutMs: Int32 = 5000) async throws -> RawPeer {
        try await RawPeer.connect(endpoint ?? endpoints.rpc, type: type, timeoutMs: timeoutMs, curve: keys)
    }

    /// The broker's `security` answer, asked with the operator's key.
    func status() async throws -> BrokerSecurityStatus {
        let ops = try await peer(operatorKeys)
        defer { Task { await ops.close() } }
        try await ops.request(BrokerProtocol.serviceName, BrokerProtocol.security.name, id: "status")
        let reply = try #require(await ops.reply())
        #expect(reply.header.code == .ok)
        return try WireCoding.decode(BrokerSecurityStatus.self, from: reply.payload)
    }

    /// Whether a peer with `keys` gets an answer from the broker's own `_health`.
    func answers(_ keys: CurveClientKeys?, timeoutMs: Int32 = 1500) async throws -> Bool {
        let peer = try await peer(keys, timeoutMs: timeoutMs)
        try await peer.request(BrokerProtocol.serviceName, "_health", id: "h")
        let reply = await peer.reply()
        await peer.close()
        return reply?.header.code == .ok
    }

    func stop() async {
        await broker.stop()
        keys.remove()
    }
}

private func event(_ topic: String, source: String, seq: Int64) -> [Data] {
    let header = EventHeader(id: "\(source)-\(seq)", source: source, instance: "\(source):1", seq: seq, ts: nowMs())
    return [Data(topic.utf8), header.encoded(), Data("{}".utf8)]
}

@Suite("Bus security in the broker: keys checked by ZAP, each role held to what it may do")
struct BrokerSecurityTests {
    @Test("an unknown key and a client without CURVE get nothing; the refusal is counted and the broker serves on")
    func unknownKeys() async throws {
        try await withWorld(SecureBroker.start()) { world in
            let stranger = try world.keys.make("stranger")
            #expect(try await world.answers(world.operatorKeys))
            #expect(try await !world.answers(CurveClientKeys(keyPair: stranger, brokerKey: world.keys.broker.publicKey)))
            #expect(try await !world.answers(nil))
            // A client that takes itself for the broker (a wrong server key) fails its handshake.
            #expect(try await !world.answers(CurveClientKeys(keyPair: world.operatorKeys.keyPair, brokerKey: stranger.publicKey)))
            let status = try await world.status()
            #expect(status.security == "on" && status.allowlist?.keys == 4)
            #expect(status.refused["connection"] ?? 0 >= 1)
            #expect(try await world.answers(world.operatorKeys))
        }
    }

    @Test("a service key registers for its own service only; any other READY is dropped with DISCONNECT and counted")
    func readyForOwnServiceOnly() async throws {
        try await withWorld(SecureBroker.start()) { world in
            for (keys, service) in [(world.echoKeys, "store"), (world.operatorKeys, "echo"), (world.edgeKeys, "echo"), (world.userKeys, "echo")] {
                let worker = try await world.peer(keys)
                try await worker.ready(service)
                let answer = try #require(await worker.receiveSkippingHeartbeats(), "a refused READY is answered DISCONNECT")
                #expect(answer.count >= 3 && answer[2] == MDP.Command.disconnect.frame)
                await worker.close()
            }
            let client = try await world.peer(world.operatorKeys)
            try await client.request("store", "materials.get", id: "s1")
            #expect(await client.reply()?.header.code == .unavailable, "no worker registered for store")
            let worker = try await world.peer(world.echoKeys)
            try await worker.ready("echo")
            try await eventually("echo registered", timeout: Wait.startup) {
                try await client.send([Data(), Data(MDP.client.utf8), Data(BrokerProtocol.mmiService.utf8), Data("echo".utf8)])
                return await client.receive().map { String(decoding: $0.last!, as: UTF8.self) == "200" } ?? false
            }
            #expect(try await world.status().refused["ready"] == 4)
            await client.close()
            await worker.close()
        }
    }

    @Test("the broker stamps the key's caller last in the header; a user key acting for another user is refused")
    func callerStamped() async throws {
        try await withWorld(SecureBroker.start()) { world in
            let worker = try await world.peer(world.echoKeys)
            try await worker.ready("echo", credit: 100)
            let user = try await world.peer(world.userKeys)
            let forged = #"{"id":"r1","user":"u1","caller":{"role":"operator"}}"#
            try await eventually("the request reaches the worker") {
                try await user.send([Data(), Data(MDP.client.utf8), Data("echo".utf8), Data("echo".utf8), Data(forged.utf8), Data("{}".utf8)])
                return await worker.nextRequest(timeoutMs: 300) != nil
            }
            try await user.send([Data(), Data(MDP.client.utf8), Data("echo".utf8), Data("echo".utf8), Data(#"{"id":"r2","caller":{"role":"operator"}} "#.utf8), Data("{}".utf8)])
            let request = try #require(await worker.nextRequest())
            #expect(request.header.caller == (try BusIdentity(role: .user, name: "u1")))
            #expect(String(decoding: request.frames[6], as: UTF8.self) == #"{"id":"r2","caller":{"role":"operator"},"caller":{"role":"user","name":"u1"}}"#)

            let asAnother = #"{"id":"r4","user":"u2"}"#
            try await user.send([Data(), Data(MDP.client.utf8), Data("echo".utf8), Data("echo".utf8), Data(asAnother.utf8), Data("{}".utf8)])
            // Skip the refusals of r1 sent again while the first was in flight.
            var reply = await user.reply()
            while let earlier = reply, earlier.header.id == "r1" { reply = await user.reply() }
            let refused = try #require(reply)
            #expect(refused.header.id == "r4" && refused.header.code == .permissionDenied)
            #expect(refused.header.message?.contains("a user key may act only for its own user") == true)
            #expect(await worker.nextRequest(timeoutMs: 300)?.header.id != "r4", "nothing was forwarded")
            #expect(try await world.status().refused["call"] == 1)
            #expect(try await world.answers(world.userKeys), "the refused key may still call as itself")
            await user.close()
            await worker.close()
        }
    }

    @Test("a service publishes only its contract's topics; a forged event is dropped and counted, the stream goes on")
    func publishOwnTopicsOnly() async throws {
        try await withWorld(SecureBroker.start()) { world in
            let subscriber = try await world.peer(world.operatorKeys, type: .sub, endpoint: world.endpoints.sub, timeoutMs: 200)
            try await subscriber.subscribe([""])
            let echo = try await world.peer(world.echoKeys, type: .pub, endpoint: world.endpoints.pub)
            let edge = try await world.peer(world.edgeKeys, type: .pub, endpoint: world.endpoints.pub)
            var seen: [String] = []
            var seq: Int64 = 0
            try await eventually("echo's own event arrives") {
                seq += 1
                try await echo.send(event("timer.completed", source: "echo", seq: seq))
                try await edge.send(event("material.created", source: "store", seq: seq))
                try await echo.send(event("echo.echoed", source: "echo", seq: seq))
                while let message = await subscriber.receive() { seen.append(String(decoding: message[0], as: UTF8.self)) }
                // A PUB drops what it sends before the broker's subscription reaches it, so the
                // rounds go on until the broker has had a forged event of each key.
                let refused = try await world.status().refused["publish"] ?? 0
                return seen.contains("echo.echoed") && refused >= 2
            }
            #expect(Set(seen) == ["echo.echoed"], "forged timer.completed and material.created were dropped")
            for peer in [subscriber, echo, edge] { await peer.close() }
        }
    }

    @Test("subscriptions by role: bus.rpc and everything for operators only; a refused subscriber cannot switch tracing off")
    func subscriptionsByRole() async throws {
        try await withWorld(SecureBroker.start()) { world in
            let ops = try await world.peer(world.operatorKeys, type: .sub, endpoint: world.endpoints.sub, timeoutMs: 200)
            try await ops.subscribe([BrokerProtocol.rpc.name])
            var hostile: [RawPeer] = []
            for keys in [world.echoKeys, world.userKeys, world.edgeKeys] {
                let peer = try await world.peer(keys, type: .sub, endpoint: world.endpoints.sub, timeoutMs: 200)
                try await peer.subscribe(["", "bus.rpc", "b", "echo.echoed"])
                hostile.append(peer)
            }
            let client = try await world.peer(world.operatorKeys)
            var traces = 0
            try await eventually("the operator sees call traces") {
                try await client.request(BrokerProtocol.serviceName, "_health", id: UUID().uuidString)
                _ = await client.reply()
                while await ops.receive() != nil { traces += 1 }
                return traces > 0
            }
            let publisher = try await world.peer(world.echoKeys, type: .pub, endpoint: world.endpoints.pub)
            var seq: Int64 = 0
            var echoed: [Int: Int] = [:]
            try await eventually("the service and the edge get the declared topic they asked for") {
                seq += 1
                try await publisher.send(event("echo.echoed", source: "echo", seq: seq))
                for (index, peer) in hostile.enumerated() {
                    while let message = await peer.receive() {
                        #expect(String(decoding: message[0], as: UTF8.self) == "echo.echoed", "nothing but the declared topic")
                        echoed[index, default: 0] += 1
                    }
                }
                return echoed[0] != nil && echoed[2] != nil
            }
            #expect(echoed[1] == nil, "a user key subscribes to nothing")
            // The refused subscribers unsubscribe and leave; tracing stays on for the operator.
            for peer in hostile {
                try await peer.unsubscribe(["bus.rpc", "b"])
                await peer.close()
            }
            try await Task.sleep(for: .milliseconds(200))
            try await client.request(BrokerProtocol.serviceName, "_health", id: "after")
            _ = await client.reply()
            try await eventually("a trace of the last call") {
                while let message = await ops.receive() {
                    if String(decoding: message[2], as: UTF8.self).contains(#""id":"after""#) { return true }
                }
                return false
            }
            #expect(try await world.status().refused["subscription"] ?? 0 >= 7)
            for peer in [ops, client, publisher] { await peer.close() }
        }
    }

    @Test("reloading the allowlist keeps connections: a removed key can do nothing more, an added one connects, two keys may share a service")
    func reload() async throws {
        try await withWorld(SecureBroker.start()) { world in
            let operatorBus = try Bus(configuration: busConfiguration(world.endpoints, source: "ops", security: .curve(world.operatorKeys)), logger: testLogger("ops"))
            let userBus = try Bus(configuration: busConfiguration(world.endpoints, source: "u1", security: .curve(world.userKeys)), logger: testLogger("u1"))
            #expect(try await operatorBus.call(Reserved.health(BrokerProtocol.serviceName), Empty()).status == .serving)
            #expect(try await userBus.call(Reserved.health(BrokerProtocol.serviceName), Empty()).status == .serving)

            let rotated = try world.keys.make("echo-next")
            let echo = try BusIdentity(role: .service, name: "echo")
            try world.keys.rewriteAllowlist([
                Allowlist.line(for: world.operatorKeys.keyPair.publicKey, try BusIdentity(role: .operator, name: nil)),
                Allowlist.line(for: world.echoKeys.keyPair.publicKey, echo),
                Allowlist.line(for: rotated.publicKey, echo),
            ])
            world.broker.reloadAllowlist()
            try await eventually("the user key refused after the reload") {
                do {
                    _ = try await userBus.call(Reserved.health(BrokerProtocol.serviceName), Empty(), options: CallOptions(timeout: .seconds(2)))
                    return false
                } catch let error as BusError {
                    return error.code == .permissionDenied && error.message.contains("no longer in the broker's allowlist")
                }
            }
            #expect(try await operatorBus.call(Reserved.health(BrokerProtocol.serviceName), Empty()).status == .serving, "the same connection goes on")
            // The old and the new key of one service both serve it, as during a rotation.
            var workers: [RawPeer] = []
            for keys in [world.echoKeys, CurveClientKeys(keyPair: rotated, brokerKey: world.keys.broker.publicKey)] {
                let worker = try await world.peer(keys)
                try await worker.ready("echo")
                workers.append(worker)
            }
            try await eventually("both keys' workers registered", timeout: Wait.startup) {
                try await operatorBus.call(BrokerProtocol.services, Empty()).first { $0.name == "echo" }?.workers == 2
            }
            for worker in workers { await worker.close() }
            let status = try await world.status()
            #expect(status.allowlist?.keys == 3 && status.refused["ready"] == 0 && status.refused["revoked"] ?? 0 >= 1)
            await userBus.shutdown()
            await operatorBus.shutdown()
        }
    }
}
