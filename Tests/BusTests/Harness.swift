import BrokerCore
import Bus
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

/// A contract for the tests' own echo service.
struct EchoRequest: Codable, Sendable, Equatable {
    var text: String
    var delayMs: Int?
}

struct EchoReply: Codable, Sendable, Equatable {
    var text: String
    var user: String?
    var attachmentBytes: Int?
    var idem: String?
    var traceparent: String?
}

struct FailRequest: Codable, Sendable {
    enum Kind: String, WireEnum { case notFound, convertible, opaque, slow }
    var kind: Kind
}

struct TestServiceError: BusErrorConvertible {
    var busError: BusError { .failedPrecondition("converted from the service's own error type") }
}

struct OpaqueError: Error {}

struct EchoContract: ServiceContract {
    static let serviceName = "echo"
    let echo = Method<EchoRequest, EchoReply>("echo", "echo", "Returns the text, the caller's user and the attachment size.")
    let fail = Method<FailRequest, Empty>("echo", "fail", "Throws the kind of error asked for.")
    let echoed = Topic<EchoReply>("echo.echoed", "Published for every echo.")
}

let Echo = EchoContract()

/// Tracks how many handlers run at once.
final class ConcurrencyGauge: Sendable {
    private let state = Mutex((current: 0, maximum: 0, total: 0))
    func enter() { state.withLock { $0.current += 1; $0.total += 1; $0.maximum = max($0.maximum, $0.current) } }
    func leave() { state.withLock { $0.current -= 1 } }
    var maximum: Int { state.withLock { $0.maximum } }
    var total: Int { state.withLock { $0.total } }
}

/// Registers the echo service's handlers on `host`.
func registerEcho(on host: ServiceHost, gauge: ConcurrencyGauge = ConcurrencyGauge()) {
    host.handle(Echo.echo) { request, context in
        gauge.enter()
        defer { gauge.leave() }
        if let delay = request.delayMs { try await Task.sleep(for: .milliseconds(delay)) }
        return EchoReply(text: request.text, user: context.user, attachmentBytes: context.attachment?.count,
                         idem: context.idempotencyKey, traceparent: context.meta["traceparent"])
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
struct EchoWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let serviceBus: Bus
    let host: ServiceHost
    let client: Bus
    let hostTask: Task<Void, any Error>
    let gauge: ConcurrencyGauge

    static func start(credit: Int = 16) async throws -> EchoWorld {
        let (broker, endpoints) = try await startBroker()
        let serviceBus = try Bus(configuration: busConfiguration(endpoints, source: "echo"), logger: testLogger("echo"))
        let host = ServiceHost(bus: serviceBus, contract: Echo, credit: credit, logger: testLogger("echo"))
        let gauge = ConcurrencyGauge()
        registerEcho(on: host, gauge: gauge)
        let hostTask = Task { try await host.run() }
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        let world = EchoWorld(broker: broker, endpoints: endpoints, serviceBus: serviceBus, host: host, client: client, hostTask: hostTask, gauge: gauge)
        try await world.waitForService("echo")
        return world
    }

    /// Waits until the broker knows a worker of `service`.
    func waitForService(_ service: String) async throws {
        try await eventually("service \(service) registered") {
            let reply = try? await client.callRaw(service: BrokerProtocol.mmiService, method: service, payload: Data())
            return reply.map { String(decoding: $0.payload, as: UTF8.self) == "200" } ?? false
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

