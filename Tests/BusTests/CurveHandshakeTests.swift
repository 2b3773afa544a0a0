import Bus
import Foundation
import Synchronization
import TestSupport
import Testing
import Threads
import Wire
import ZMQ

/// A CURVE server of the test's own, on its own thread: a ROUTER with `ZMQ_CURVE_SERVER` and, in
/// the same context, a ZAP handler (RFC 27) that admits the keys of an allowlist and gives each
/// connection its identity as `User-Id`. It answers every StudyBus request with the `User-Id`
/// of the connection the request came on, read from the message's metadata.
final class CurveEchoServer: Sendable {
    /// Every ZAP request: the mechanism and the client's key, and whether it was admitted.
    let handshakes = Mutex<[(mechanism: String, key: String, admitted: Bool)]>([])
    /// Every request that reached the ROUTER, by the `User-Id` it arrived with.
    let requests = Mutex<[String]>([])
    private let keys: CurveKeyPair
    private let allowlist: Allowlist
    private let bound = Mutex<Result<String, ZMQError>?>(nil)
    private let stopping = Atomic<Bool>(false)
    private let ready = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(keys: CurveKeyPair, allowlist: Allowlist) throws {
        self.keys = keys
        self.allowlist = allowlist
        startThread(named: "curve-echo") { [self] in
            blockAllSignalsOnCurrentThread()
            serve()
            done.signal()
        }
        ready.wait()
        _ = try bound.withLock { $0! }.get()
    }

    /// The ROUTER's endpoint.
    var endpoint: String { (try? bound.withLock { $0! }.get()) ?? "" }

    /// A client configuration towards this server with `security`.
    func configuration(_ security: BusSecurity) -> BusConfiguration {
        var configuration = BusConfiguration(source: "curve-test")
        configuration.rpcEndpoint = endpoint
        configuration.security = security
        return configuration
    }

    private func serve() {
        let context: ZMQContext, zap: ZMQSocket, router: ZMQSocket
        do {
            context = try ZMQContext()
            // The ZAP handler is bound before the server socket, so no handshake misses it.
            zap = try ZMQSocket(context: context, type: .router)
            try zap.bind("inproc://zeromq.zap.01")
            router = try ZMQSocket(context: context, type: .router)
            try router.makeCurveServer(secretKey: keys.secretKey.bytes)
            try router.set(.zapDomain, Array("studybus".utf8))
            try router.bind("tcp://127.0.0.1:*")
            bound.withLock { $0 = .success(router.lastEndpoint) }
            ready.signal()
        } catch {
            bound.withLock { $0 = .failure(error) }
            ready.signal()
            return
        }
        let message = ZMQMultipart()
        var poller = ZMQPoller()
        poller.add(zap)
        poller.add(router)
        while !stopping.load(ordering: .relaxed) {
            _ = try? poller.poll(timeoutMs: 20)
            while let request = try? zap.receive(dontWait: true) {
                // routing id, empty, version, request id, domain, address, identity, mechanism, key
                guard request.count >= 9 else { continue }
                let mechanism = String(decoding: request[7], as: UTF8.self)
                let key = CurveKey(bytes: Array(request[8]))
                let identity = key.flatMap { allowlist.identity(of: $0) }
                handshakes.withLock { $0.append((mechanism, key?.z85 ?? "?", identity != nil)) }
                let status = identity == nil ? ["400", "key not in the allowlist"] : ["200", "OK"]
                _ = try? zap.send([request[0], Data(), Data("1.0".utf8), request[3]] + status.map { Data($0.utf8) }
                    + [Data((identity?.description ?? "").utf8), Data()])
            }
            while (try? message.receive(from: router, dontWait: true)) == true {
                // routing id, empty, MDPC01, service, method, header, payload
                guard message.count >= 7 else { continue }
                let userID = message.property(.userID, of: 1) ?? "(none)"
                requests.withLock { $0.append(userID) }
                let id = (try? RequestHeader.decode(message.data(5)).id) ?? ""
                _ = try? router.send([message.data(0), Data(), Data(MDP.client.utf8), message.data(3), ReplyHeader(id: id).encoded(),
                                      (try? WireCoding.encode(userID)) ?? Data()])
            }
        }
        zap.close()
        router.close()
        context.terminate()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        done.wait()
    }
}

@Suite("A real CURVE handshake between our client sockets and a CURVE server, keys from files")
struct CurveHandshakeTests {
    @Test("a client whose key is listed connects encrypted, and the server learns who sent each message")
    func admitted() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let store = try keys.make("store")
        let allowlist = try Allowlist.parse(Allowlist.line(for: store.publicKey, try BusIdentity(role: .service, name: "store")), source: "test")
        let server = try CurveEchoServer(keys: keys.broker, allowlist: allowlist)
        defer { server.stop() }
        let configuration = server.configuration(try BusSecurity.fromEnvironment(keys.environment("store")))

        let reply = try await onOwnThread {
            try withBlockingClient(configuration: configuration) { client in
                try client.callRaw(service: "echo", method: "who", payload: Data("{}".utf8), options: CallOptions(timeout: .seconds(10)))
            }
        }
        #expect(try WireCoding.decode(String.self, from: reply.payload) == "service store")

        let bus = try Bus(configuration: configuration, logger: testLogger("curve-client"))
        let asynchronous = try await bus.callRaw(service: "echo", method: "who", payload: Data(), options: CallOptions(timeout: .seconds(10)))
        #expect(try WireCoding.decode(String.self, from: asynchronous.payload) == "service store")
        await bus.shutdown()

        let handshakes = server.handshakes.withLock { $0 }
        #expect(handshakes.count == 2)
        #expect(handshakes.allSatisfy { $0.mechanism == "CURVE" && $0.key == store.publicKey.z85 && $0.admitted })
    }

    @Test("an unknown key, a client without CURVE and a client that expects another server key get nowhere")
    func refused() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let store = try keys.make("store"), stranger = try keys.make("stranger")
        let allowlist = try Allowlist.parse(Allowlist.line(for: store.publicKey, try BusIdentity(role: .service, name: "store")), source: "test")
        let server = try CurveEchoServer(keys: keys.broker, allowlist: allowlist)
        defer { server.stop() }

        func call(_ security: BusSecurity) async throws -> BusError? {
            try await onOwnThread {
                try withBlockingClient(configuration: server.configuration(security)) { client -> BusError? in
                    do {
                        _ = try client.callRaw(service: "echo", method: "who", payload: Data(), options: CallOptions(timeout: .milliseconds(800)))
                        return nil
                    } catch {
                        return error as? BusError
                    }
                }
            }
        }
        #expect(try await call(keys.security(stranger))?.code == .deadlineExceeded)
        #expect(try await call(.off)?.code == .deadlineExceeded)
        let wrongServer = BusSecurity.curve(CurveClientKeys(keyPair: store, brokerKey: try CurveKeyPair.generate().publicKey))
        #expect(try await call(wrongServer)?.code == .deadlineExceeded)
        // Nothing reached the server from any of them; the listed key still gets through after.
        #expect(server.requests.withLock { $0 }.isEmpty)
        #expect(server.handshakes.withLock { $0 }.contains { $0.key == stranger.publicKey.z85 && !$0.admitted })
        #expect(try await call(keys.security(store)) == nil)
        #expect(server.requests.withLock { $0 } == ["service store"])
    }
}
