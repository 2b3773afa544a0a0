import BrokerCore
import Bus
import Foundation
import Synchronization
import Testing
import Wire

// "echo": a small service for testing the bus itself — echoes text, user, attachment size and
// header fields, throws the error asked for, and publishes `echo.echoed`.

/// A contract for the tests' own echo service.
public struct EchoRequest: Codable, Sendable, Equatable {
    public var text: String
    public var delayMs: Int?
    public init(text: String, delayMs: Int? = nil) {
        self.text = text
        self.delayMs = delayMs
    }
}

public struct EchoReply: Codable, Sendable, Equatable {
    public var text: String
    public var user: String?
    public var attachmentBytes: Int?
    public var idem: String?
    public var traceparent: String?
    /// The name of the thread that answered (set by `upper` only).
    public var thread: String?
    public init(text: String, user: String? = nil, attachmentBytes: Int? = nil, idem: String? = nil, traceparent: String? = nil, thread: String? = nil) {
        self.text = text
        self.user = user
        self.attachmentBytes = attachmentBytes
        self.idem = idem
        self.traceparent = traceparent
        self.thread = thread
    }
}

public struct FailRequest: Codable, Sendable {
    public enum Kind: String, WireEnum { case notFound, convertible, opaque, slow }
    public var kind: Kind
    public init(kind: Kind) { self.kind = kind }
}

public struct TestServiceError: BusErrorConvertible {
    public var busError: BusError { .failedPrecondition("converted from the service's own error type") }
}

public struct OpaqueError: Error {}

public struct EchoContract: ServiceContract {
    public static let serviceName = "echo"
    public let echo = Method<EchoRequest, EchoReply>(Self.self, "echo", "Returns the text, the caller's user and the attachment size.", audience: .app)
    public let fail = Method<FailRequest, Empty>(Self.self, "fail", "Throws the kind of error asked for.", audience: .app)
    public let upper = Method<EchoRequest, EchoReply>(Self.self, "upper", "Returns the text in capitals, on the bus's I/O thread; an empty text is INVALID_ARGUMENT.", audience: .app)
    public let echoed = Topic<EchoReply>(Self.self, "echo.echoed", "Published for every echo.")
    public let probe = Topic<String>(Self.self, "echo.probe", "Published by tests until their own subscription returns it (EventCollector.subscribed).")
}

public let Echo = EchoContract()

/// Tracks how many handlers run at once.
public final class ConcurrencyGauge: Sendable {
    public init() {}
    private let state = Mutex((current: 0, maximum: 0, total: 0))
    public func enter() { state.withLock { $0.current += 1; $0.total += 1; $0.maximum = max($0.maximum, $0.current) } }
    public func leave() { state.withLock { $0.current -= 1 } }
    public var current: Int { state.withLock { $0.current } }
    public var maximum: Int { state.withLock { $0.maximum } }
    public var total: Int { state.withLock { $0.total } }
}

/// Registers the echo service's handlers on `host`.
public func registerEcho(on host: ServiceHost, gauge: ConcurrencyGauge = ConcurrencyGauge()) {
    host.handle(Echo.echo) { request, context in
        gauge.enter()
        defer { gauge.leave() }
        if let delay = request.delayMs { try await Task.sleep(for: .milliseconds(delay)) }
        return EchoReply(text: request.text, user: context.user, attachmentBytes: context.attachment?.count,
                         idem: context.idempotencyKey, traceparent: context.meta["traceparent"])
    }
    host.handleOnIOThread(Echo.upper) { request, context in
        guard !request.text.isEmpty else { throw BusError.invalidArgument("field 'text' must not be empty") }
        // The thread's name as the OS has it (what top and perf show).
        let thread = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
        return EchoReply(text: request.text.uppercased(), user: context.user, thread: thread)
    }
    host.handle(Echo.fail) { request, _ in
        switch request.kind {
        case .notFound: throw BusError.notFound("material m1 not found")
        case .convertible: throw TestServiceError()
        case .opaque: throw OpaqueError()
        case .slow:
            try await Task.sleep(for: .seconds(30))
            return Empty()
        }
    }
}

/// A broker, a bus for the service, the echo host running, and a separate client bus.
public struct EchoWorld: TestWorld {
    public let broker: Broker
    public let endpoints: Broker.Endpoints
    public let serviceBus: Bus
    public let host: ServiceHost
    public let client: Bus
    public let hostTask: Task<Void, any Error>
    public let gauge: ConcurrencyGauge
    /// Keys made for this world alone, removed when it stops.
    var ownKeys: TestKeys?

    /// With `keys`, the broker, the service and the client use CURVE (keys `echo`, listed as
    /// `service echo`, and `client`, listed as an operator). Without, they do too when
    /// `STUDYBUS_TEST_BUS_SECURITY=on`: scripts/test runs the call tests once more that way.
    public static func start(credit: Int = 16, keys: TestKeys? = nil) async throws -> EchoWorld {
        let ownKeys = keys == nil && ProcessInfo.processInfo.environment["STUDYBUS_TEST_BUS_SECURITY"] == "on" ? try TestKeys() : nil
        let keys = keys ?? ownKeys
        // The keys are listed before the broker reads the allowlist.
        let securities = try keys.map { (try $0.service("echo"), try $0.operator("client")) }
        let (broker, endpoints) = try await startBroker(keys: keys)
        var world = try await start(broker: broker, endpoints: endpoints, credit: credit, security: securities)
        world.ownKeys = ownKeys
        return world
    }

    /// The echo service and a client on an already running broker (stopped with the world).
    public static func start(
        broker: Broker, endpoints: Broker.Endpoints, credit: Int = 16, heartbeatMs: Int = testHeartbeatMs, security: (service: BusSecurity, client: BusSecurity)? = nil
    ) async throws -> EchoWorld {
        let serviceSecurity = security?.service ?? .off
        let clientSecurity = security?.client ?? .off
        let serviceBus = try Bus(configuration: busConfiguration(endpoints, source: "echo", heartbeatMs: heartbeatMs, security: serviceSecurity),
                                 logger: testLogger("echo"))
        let host = ServiceHost(bus: serviceBus, contract: Echo, credit: credit, logger: testLogger("echo"))
        let gauge = ConcurrencyGauge()
        registerEcho(on: host, gauge: gauge)
        let hostTask = Task { try await host.run() }
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client", heartbeatMs: heartbeatMs, security: clientSecurity),
                             logger: testLogger("client"))
        let world = EchoWorld(broker: broker, endpoints: endpoints, serviceBus: serviceBus, host: host, client: client, hostTask: hostTask, gauge: gauge)
        try await world.waitForService("echo")
        return world
    }

    /// Waits until the broker knows a worker of `service`.
    public func waitForService(_ service: String) async throws {
        try await eventually("service \(service) registered", timeout: Wait.startup) {
            let reply = try? await client.callRaw(service: BrokerProtocol.mmiService, method: service, payload: Data())
            return reply.map { String(decoding: $0.payload, as: UTF8.self) == "200" } ?? false
        }
    }

    public func stop() async {
        hostTask.cancel()
        _ = try? await hostTask.value
        await client.shutdown()
        await serviceBus.shutdown()
        await broker.stop()
        ownKeys?.remove()
    }
}

