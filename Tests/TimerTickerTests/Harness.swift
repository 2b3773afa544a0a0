import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import ServiceLifecycle
import Storage
import TestSupport
import Testing
import TimerTickerCore
import Wire

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appending(path: "timer-ticker-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A timer-ticker server running in this process on a real broker, and a client bus.
final class TimerWorld: Sendable, TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let directory: URL
    let client: Bus
    let serviceBus: Bus
    let server: TimerTickerService
    let tasks: [Task<Void, any Error>]

    var databaseURL: URL { directory.appending(path: "timer-ticker.sqlite") }

    private init(
        broker: Broker, endpoints: Broker.Endpoints, directory: URL, client: Bus, serviceBus: Bus, server: TimerTickerService, firing: Bool
    ) {
        self.broker = broker
        self.endpoints = endpoints
        self.directory = directory
        self.client = client
        self.serviceBus = serviceBus
        self.server = server
        // Without firing, the completion writer (which starts the engine's thread) never runs, as
        // if the process died before any timer came due.
        tasks = server.services.filter { firing || String(describing: type(of: $0)) != "CompletionWriter" }.map { service in
            Task { try await service.run() }
        }
    }

    static func start(
        settings: (inout TimerTickerConfiguration) -> Void = { _ in }, wallClock: any WallClock = SystemWallClock(),
        directory: URL? = nil, broker existing: (Broker, Broker.Endpoints)? = nil, firing: Bool = true
    ) async throws -> TimerWorld {
        let (broker, endpoints) = if let existing { existing } else { try await startBroker() }
        let directory = try directory ?? temporaryDirectory()
        var configuration = TimerTickerConfiguration(databaseURL: directory.appending(path: "timer-ticker.sqlite"))
        configuration.wallClock = wallClock
        settings(&configuration)
        let server = try TimerTickerService(context: ServiceContext(
            configuration: configuration, logger: testLogger("timer-ticker"), busConfiguration: busConfiguration(endpoints, source: "timer-ticker")))
        let serviceBus = server.owner.bus
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        let world = TimerWorld(broker: broker, endpoints: endpoints, directory: directory, client: client, serviceBus: serviceBus, server: server, firing: firing)
        try await eventually("timer-ticker serves", timeout: Wait.startup) { (try? await client.call(Reserved.health("timer-ticker"), Empty())) != nil }
        return world
    }

    /// Calls a method as `user`.
    func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String? = "u1", idem: String? = nil) async throws(BusError) -> Response {
        try await client.call(method, request, options: CallOptions(user: user, idempotencyKey: idem))
    }

    /// The error a call fails with (nil if it succeeds).
    func failure<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String? = "u1") async -> BusError? {
        do {
            _ = try await call(method, request, user: user)
            return nil
        } catch {
            return error
        }
    }

    /// Stops the server (as a graceful shutdown would) and the broker, and removes the data
    /// directory.
    func stop() async { await stop(keepBroker: false) }

    /// Stops the server (as a graceful shutdown would) and, unless `keepBroker` (a restart
    /// follows), the broker, and removes the data directory.
    func stop(keepBroker: Bool) async {
        for task in tasks.reversed() {
            task.cancel()
            _ = try? await task.value
        }
        await client.shutdown()
        await serviceBus.shutdown()
        if !keepBroker {
            await broker.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }
}

/// Every stored event of a service's durable stream, through `_events.replay`, page by page.
func replayAll(_ bus: Bus, service: String = "timer-ticker") async throws -> [StoredEvent] {
    var events: [StoredEvent] = []
    var after: Int64 = 0
    while true {
        let page = try await bus.call(Reserved.eventsReplay(service), ReplayRequest(after: after, limit: 1000))
        events += page.events
        guard let last = page.events.last, last.header.seq < page.lastSeq else { return events }
        after = last.header.seq
    }
}

extension StoredEvent {
    /// The payload decoded as `topic`'s type.
    func decode<Payload>(_ topic: Topic<Payload>) throws -> Payload {
        try WireCoding.decode(Payload.self, from: payload.jsonData)
    }
}
