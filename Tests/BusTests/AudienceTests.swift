import BrokerCore
import Bus
import Foundation
import Synchronization
import TestSupport
import Testing
import Wire
import ZMQ

/// A service with one method of each audience; each reply says who the host saw calling.
struct GuardedContract: ServiceContract {
    static let serviceName = "guarded"
    let forApps = Method<Scope, Seen>(Self.self, "things.app", "Acts for one user.", audience: .app)
    let forServices = Method<Scope, Seen>(Self.self, "things.service", "Service to service.", audience: .service)
    let forOperators = Method<Scope, Seen>(Self.self, "things.operator", "Operators only.", audience: .operator)
    let seen = Topic<Seen>(Self.self, "guarded.seen", "A test event.")
}

let Guarded = GuardedContract()

struct Scope: Codable, Sendable, Equatable {
    /// Asks for every user's data: operators only, checked by the handler.
    var allUsers: Bool?
}

struct Seen: Codable, Sendable, Equatable {
    var user: String?
    var caller: String?
}

/// A broker, the guarded service and a client, each bus with the security given.
struct GuardedWorld: TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let serviceBus: Bus
    let client: Bus
    let hostTask: Task<Void, any Error>
    /// How many handlers ran.
    let handled: Counter

    static func start(keys: TestKeys? = nil, service: BusSecurity = .off, client: BusSecurity = .off, contracts: [any ServiceContract] = []) async throws -> GuardedWorld {
        let (broker, endpoints) = try await startBroker(keys: keys, contracts: contracts)
        let serviceBus = try Bus(configuration: busConfiguration(endpoints, source: "guarded", security: service), logger: testLogger("guarded"))
        let host = ServiceHost(bus: serviceBus, contract: Guarded, logger: testLogger("guarded"))
        let handled = Counter()
        for method in [Guarded.forApps, Guarded.forServices, Guarded.forOperators] {
            host.handle(method) { scope, context in
                if scope.allUsers == true { try context.require(.operator, for: "guarded/\(method.name) with allUsers") }
                handled.add()
                return Seen(user: context.user, caller: context.caller?.description)
            }
        }
        let hostTask = Task { try await host.run() }
        let clientBus = try Bus(configuration: busConfiguration(endpoints, source: "client", security: client), logger: testLogger("client"))
        let world = GuardedWorld(broker: broker, endpoints: endpoints, serviceBus: serviceBus, client: clientBus, hostTask: hostTask, handled: handled)
        try await eventually("guarded serving", timeout: Wait.startup) {
            (try? await clientBus.call(Reserved.health("guarded"), Empty(), options: CallOptions(timeout: .milliseconds(500)))) != nil
        }
        return world
    }

    func call(_ method: Method<Scope, Seen>, as caller: BusIdentity?, user: String? = nil, allUsers: Bool? = nil) async -> Result<Seen, BusError> {
        var options = CallOptions(user: user, timeout: .seconds(10))
        options.claimedCaller = caller
        do {
            return .success(try await client.call(method, Scope(allUsers: allUsers), options: options))
        } catch {
            return .failure(error)
        }
    }

    func stop() async {
        hostTask.cancel()
        _ = try? await hostTask.value
        await client.shutdown()
        await serviceBus.shutdown()
        await broker.stop()
    }
}

final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

extension Result where Failure == BusError {
    var code: StatusCode {
        switch self {
        case .success: .ok
        case .failure(let error): error.code
        }
    }
}

@Suite("Who may call what: each method's audience, enforced by the host from the request's caller")
struct AudienceTests {
    let edge = try! BusIdentity(role: .edge, name: "web")
    let store = try! BusIdentity(role: .service, name: "store")
    let ops = try! BusIdentity(role: .operator, name: nil)
    let alice = try! BusIdentity(role: .user, name: "alice")

    @Test("each role reaches exactly the methods its audience admits; refused requests run nothing")
    func roles() async throws {
        try await withWorld(GuardedWorld.start()) { world in
            let methods = [Guarded.forApps, Guarded.forServices, Guarded.forOperators]
            let expected: [(BusIdentity, [StatusCode])] = [
                (edge, [.ok, .permissionDenied, .permissionDenied]),
                (alice, [.ok, .permissionDenied, .permissionDenied]),
                (store, [.ok, .ok, .permissionDenied]),
                (ops, [.ok, .ok, .ok]),
            ]
            var allowed = 0
            for (caller, codes) in expected {
                for (method, code) in zip(methods, codes) {
                    let outcome = await world.call(method, as: caller, user: caller.role == .user ? nil : "u1")
                    #expect(outcome.code == code, "\(caller) calling \(method.name)")
                    if code == .ok { allowed += 1 }
                }
            }
            #expect(world.handled.value == allowed)

            let denied = await world.call(Guarded.forServices, as: edge, user: "u1")
            guard case .failure(let error) = denied else { Issue.record("edge reached a service method"); return }
            #expect(error.message == "guarded/things.service is for services and operators (audience service); the caller is edge web")
            let operatorOnly = await world.call(Guarded.forOperators, as: store)
            #expect((try? operatorOnly.get()) == nil)
            if case .failure(let error) = operatorOnly { #expect(error.message.contains("is for operators (audience operator); the caller is service store")) }

            // _health and _describe are for anyone.
            var options = CallOptions(timeout: .seconds(10))
            options.claimedCaller = edge
            let health = try await world.client.call(Reserved.health("guarded"), Empty(), options: options)
            #expect(health.status == .serving)
            #expect(try await world.client.call(Reserved.describe("guarded"), Empty(), options: options).service == "guarded")
        }
    }

    @Test("a handler's own check: allUsers only for an operator")
    func handlerCheck() async throws {
        try await withWorld(GuardedWorld.start()) { world in
            let edgeAll = await world.call(Guarded.forApps, as: edge, user: "u1", allUsers: true)
            #expect(edgeAll.code == .permissionDenied)
            if case .failure(let error) = edgeAll { #expect(error.message == "guarded/things.app with allUsers is for operators (audience operator); the caller is edge web") }
            #expect(await world.call(Guarded.forApps, as: store, user: "u1", allUsers: true).code == .permissionDenied)
            #expect(await world.call(Guarded.forApps, as: ops, allUsers: true).code == .ok)
            #expect(await world.call(Guarded.forApps, as: nil, allUsers: true).code == .ok, "the host's security is off: an unidentified caller is an operator")
        }
    }

    @Test("a user key acts for its own user only")
    func userKey() async throws {
        try await withWorld(GuardedWorld.start()) { world in
            let seen = try await world.call(Guarded.forApps, as: alice).get()
            #expect(seen == Seen(user: "alice", caller: "user alice"))
            #expect(try await world.call(Guarded.forApps, as: alice, user: "alice").get().user == "alice")
            let other = await world.call(Guarded.forApps, as: alice, user: "bob")
            #expect(other.code == .permissionDenied)
            if case .failure(let error) = other { #expect(error.message == "the caller is user 'alice' and may not act for user 'bob'") }
            #expect(try await world.call(Guarded.forApps, as: edge, user: "bob").get() == Seen(user: "bob", caller: "edge web"))
        }
    }

    @Test("with the host's own security off, a request without caller is trusted as an operator")
    func openBus() async throws {
        try await withWorld(GuardedWorld.start()) { world in
            for method in [Guarded.forApps, Guarded.forServices, Guarded.forOperators] {
                let seen = try await world.call(method, as: nil, user: "u1").get()
                #expect(seen == Seen(user: "u1", caller: nil))
            }
        }
    }

    @Test("over CURVE through a real broker, the broker stamps each key's caller and the host enforces audiences by it")
    func secureHost() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let service = try keys.service("guarded")
        let user = try keys.user("u1")
        let operatorKey = try keys.operator()
        try await withWorld(GuardedWorld.start(keys: keys, service: service, client: user, contracts: [Guarded])) { world in
            // A user key's claim to be an operator is overridden by what the broker knows.
            #expect(try await world.call(Guarded.forApps, as: ops, user: "u1").get() == Seen(user: "u1", caller: "user u1"))
            #expect(try await world.call(Guarded.forApps, as: nil).get() == Seen(user: "u1", caller: "user u1"), "an absent user is the key's own")
            #expect(await world.call(Guarded.forServices, as: ops, user: "u1").code == .permissionDenied)
            #expect(await world.call(Guarded.forOperators, as: ops, user: "u1").code == .permissionDenied)
            let another = await world.call(Guarded.forApps, as: nil, user: "u2")
            #expect(another.code == .permissionDenied)
            #expect(world.handled.value == 2, "nothing refused ran")

            let operatorBus = try Bus(configuration: busConfiguration(world.endpoints, source: "operator", security: operatorKey), logger: testLogger("operator"))
            var options = CallOptions(user: "u9")
            options.claimedCaller = try BusIdentity(role: .user, name: "u9")
            #expect(try await operatorBus.call(Guarded.forOperators, Scope(allUsers: true), options: options) == Seen(user: "u9", caller: "operator"))
            #expect(try await operatorBus.call(Reserved.describe("guarded"), Empty()).methods.count == 5)

            // Events travel over CURVE too, from the service's publisher to a subscriber allowed them.
            let topic = Guarded.seen
            let collector = EventCollector(try operatorBus.subscribe([topic.name]))
            try await eventually("an event over CURVE") {
                try world.serviceBus.publish(topic, Seen(user: "u1", caller: nil))
                try await Task.sleep(for: .milliseconds(30))
                return !collector.all.isEmpty
            }
            collector.cancel()
            await operatorBus.shutdown()

            // A client without CURVE gets nothing through, and the broker goes on serving.
            let plain = try Bus(configuration: busConfiguration(world.endpoints, source: "plain"), logger: testLogger("plain"))
            await #expect(throws: BusError.self) { try await plain.call(Reserved.health("guarded"), Empty(), options: CallOptions(timeout: .milliseconds(500))) }
            await plain.shutdown()
            #expect(try await world.client.call(Reserved.health("guarded"), Empty()).status == .serving)
        }
    }

    @Test("_describe shows every method's audience")
    func describe() async throws {
        try await withWorld(GuardedWorld.start()) { world in
            let description = try await world.client.call(Reserved.describe("guarded"), Empty())
            let audiences = Dictionary(uniqueKeysWithValues: description.methods.map { ($0.name, $0.audience) })
            #expect(audiences == ["things.app": .app, "things.service": .service, "things.operator": .operator, "_health": .any, "_describe": .any])
            let json = String(decoding: try WireCoding.encode(description), as: UTF8.self)
            #expect(json.contains(#""name":"things.service","summary":"Service to service.","audience":"service""#))
        }
    }

    @Test("the header's last caller is the one read: a client's own caller cannot outrank the broker's")
    func lastCallerWins() async throws {
        try await withWorld(GuardedWorld.start()) { world in
            let client = #"{"id":"a","caller":{"role":"operator"},"caller":{"role":"edge","name":"web"}}"#
            let broker = #"{"id":"b","caller":{"role":"edge","name":"web"},"caller":{"role":"operator"}}"#
            #expect(try RequestHeader.decode(Data(client.utf8)).caller == edge)
            let replies = try await rawRequests(world.endpoints.rpc, [
                ("things.operator", client), ("things.operator", broker),
                ("things.app", #"{"id":"c","caller":{"role":"root"},"caller":{"role":"operator"}}"#),
                ("things.app", #"{"id":"d","caller":"operator"}"#),
            ])
            // A header with a malformed member is refused; the refusal still carries its readable id.
            #expect(replies.sorted { $0.id < $1.id }.map { "\($0.id):\($0.code.rawValue)" } == ["a:7", "b:0", "c:3", "d:3"])
            #expect(world.handled.value == 1)
        }
    }

    /// Sends requests with headers written by hand from a raw DEALER; returns each reply's id and code.
    private func rawRequests(_ endpoint: String, _ requests: [(method: String, header: String)]) async throws -> [(id: String, code: StatusCode)] {
        try await onOwnThread {
            let context = try ZMQContext()
            let socket = try ZMQSocket(context: context, type: .dealer)
            defer {
                socket.close()
                context.terminate()
            }
            try socket.set(.receiveTimeoutMs, 10_000)
            try socket.connect(endpoint)
            for (method, header) in requests {
                try socket.send([Data(), Data(MDP.client.utf8), Data("guarded".utf8), Data(method.utf8), Data(header.utf8), Data("{}".utf8)])
            }
            var replies: [(id: String, code: StatusCode)] = []
            while replies.count < requests.count, let reply = try socket.receive() {
                let header = try ReplyHeader.decode(reply[3])
                replies.append((header.id, header.code))
            }
            return replies
        }
    }
}
