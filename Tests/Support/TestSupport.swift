import BrokerCore
import Bus
import CoreMetrics
import Foundation
import Logging
import Synchronization
import Testing
import Wire

// What every test of a bus service needs: a real broker on ephemeral loopback ports, bus
// configurations pointing at it, waiting on a condition with a deadline, collecting events.

/// Test loggers print nothing unless STUDYBUS_TEST_LOGS is set.
/// `date` written in UTC with a `DateFormatter` pattern (`HH:mm`, `yyyy-MM-dd`), as the flows
/// write reminder times and check-in days.
public func utc(_ format: String, _ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = format
    return formatter.string(from: date)
}

public func testLogger(_ label: String) -> Logger {
    var logger = Logger(label: label) { label -> any LogHandler in
        if ProcessInfo.processInfo.environment["STUDYBUS_TEST_LOGS"] == nil { return SwiftLogNoOpLogHandler() }
        return StreamLogHandler.standardError(label: label)
    }
    logger.logLevel = .debug
    return logger
}

/// The heartbeat interval of the tests' brokers, buses and service processes, in milliseconds.
/// A peer is declared lost after three silent intervals; CI runs every suite of a group in one
/// process on two shared cores, where a thread can wait most of a second for a core, and at
/// 250 ms whole suites failed with "worker lost". Tests of loss detection pass their own.
public let testHeartbeatMs = 1000

/// A real broker on ephemeral loopback ports, with the tests' heartbeat (``testHeartbeatMs``). With
/// `keys`, its sockets are CURVE servers with the broker's pair, admitting the keys of their
/// allowlist (``TestKeys``); the allowlist must exist (make a listed key first). The topics of
/// `contracts` (and echo's) may be published besides StudyBus's.
public func startBroker(
    heartbeatMs: Int = testHeartbeatMs, maxQueue: Int = 10_000, maxMessageBytes: Int64 = 64 << 20, rpc: String = "tcp://127.0.0.1:*",
    pub: String = "tcp://127.0.0.1:*", sub: String = "tcp://127.0.0.1:*", keys: TestKeys? = nil, contracts: [any ServiceContract] = [],
    metrics: (any MetricsFactory)? = nil, console: ConsoleFeed? = nil
) async throws -> (Broker, Broker.Endpoints) {
    var configuration = BrokerConfiguration()
    // The tests' own services publish too.
    configuration.contracts += [Echo] + contracts
    configuration.curveServerKeys = keys?.broker
    configuration.allowlistPath = keys?.allowlistPath
    configuration.maxMessageBytes = maxMessageBytes
    configuration.rpcBind = rpc
    configuration.pubBind = pub
    configuration.subBind = sub
    configuration.heartbeatInterval = .milliseconds(heartbeatMs)
    configuration.maxQueuedPerService = maxQueue
    let broker = try Broker(configuration: configuration, logger: testLogger("broker"), metrics: metrics, console: console)
    return (broker, try await broker.start())
}

/// A client's configuration for the broker at `endpoints`; `security` `.off` unless given
/// (``TestKeys/security(_:)``).
public func busConfiguration(_ endpoints: Broker.Endpoints, source: String = "test", heartbeatMs: Int = testHeartbeatMs, security: BusSecurity = .off) -> BusConfiguration {
    var configuration = BusConfiguration(source: source)
    configuration.security = security
    configuration.rpcEndpoint = endpoints.rpc
    configuration.pubEndpoint = endpoints.pub
    configuration.subEndpoint = endpoints.sub
    configuration.heartbeatInterval = .milliseconds(heartbeatMs)
    configuration.reconnectInitialDelay = .milliseconds(50)
    configuration.reconnectMaximumDelay = .milliseconds(400)
    return configuration
}

/// How long a test waits for a state, named by what the state needs. A wait that runs out is a
/// failure to explain, never a figure to raise until it passes.
public enum Wait {
    /// A state of this process, a broker or a service already running: a call answered, an
    /// event delivered, a row written. The default of ``eventually(_:timeout:_:)``.
    public static let state: Duration = .seconds(5)
    /// A service or a process must start first: a service's migrations and registration, a
    /// service binary, a Python server.
    public static let startup: Duration = .seconds(60)
    /// Real work must be done first: a tool through a real file (ffmpeg, pocketsphinx,
    /// tesseract), a burst of calls through a service binary.
    public static let work: Duration = .seconds(60)
}

/// Retries `condition` every 20 ms until it holds, failing after `timeout` (the failure is
/// recorded where the test waits). The condition is asked once more after the deadline, so a
/// process that was starved of CPU meanwhile still sees what happened.
public func eventually(
    _ what: String, timeout: Duration = Wait.state, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return }
        if ContinuousClock.now >= deadline { break }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("timed out after \(timeout) waiting for: \(what)", sourceLocation: sourceLocation)
    throw BusError.deadlineExceeded("timed out waiting for \(what)")
}

/// Runs `body` with a time limit; the test fails instead of hanging.
public func withTimeout<T: Sendable>(_ limit: Duration = .seconds(20), _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw BusError.deadlineExceeded("test step took longer than \(limit)")
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

/// Collects the events of a subscription in the background.
public final class EventCollector: Sendable {
    private let events = Mutex<[BusEvent]>([])
    private let excluded = Mutex<[BusEvent]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Collects the events of `subscription`; those on `excludedTopic` (a probe's) are kept apart.
    public init(_ subscription: EventSubscription, excluding excludedTopic: String? = nil) {
        let handle = Task { [weak self] in
            for await event in subscription {
                if event.topic == excludedTopic { self?.excluded.withLock { $0.append(event) } } else { self?.events.withLock { $0.append(event) } }
            }
        }
        task.withLock { $0 = handle }
    }

    public var all: [BusEvent] { events.withLock { $0 } }

    public func topics() -> [String] { all.map(\.topic) }

    public func cancel() { task.withLock { $0?.cancel() } }
}

extension EventCollector {
    /// Subscribes `bus` to `prefixes` and returns once the broker forwards events of all of them.
    /// The subscription also takes `echo.probe`, published with a payload of its own until one
    /// comes back: subscriptions travel in order on one connection and the broker filters at its
    /// XPUB only, so the probe's return shows the others are in place. Probes are not collected.
    public static func subscribed(_ bus: Bus, _ prefixes: [String]) async throws -> EventCollector {
        let collector = EventCollector(try bus.subscribe(prefixes + [Echo.probe.name]), excluding: Echo.probe.name)
        let probe = UUID().uuidString
        try await eventually("subscription to \(prefixes) active") {
            try bus.publish(Echo.probe, probe)
            try await Task.sleep(for: .milliseconds(30))
            return collector.excluded.withLock { $0.contains { (try? $0.decode(Echo.probe)) == probe } }
        }
        return collector
    }

    /// Subscribes `bus` to `topic` and returns once the subscription has reached the broker (a
    /// SUB socket's subscription takes a moment to propagate): it publishes `probe` on the topic
    /// until one comes back. The probes are collected too; tell them apart by their payload.
    public static func active<Payload: Equatable>(_ bus: Bus, _ topic: Topic<Payload>, probe: Payload) async throws -> EventCollector {
        let collector = EventCollector(try bus.subscribe([topic.name]))
        try await eventually("subscription to \(topic.name) active") {
            try bus.publish(topic, probe)
            try await Task.sleep(for: .milliseconds(30))
            // Compared decoded: the encoder does not promise one key order.
            return collector.all.contains { (try? $0.decode(topic)) == probe }
        }
        return collector
    }
}

/// The environment a service binary started by a test needs to join the test's broker: the
/// endpoints, the same heartbeat interval as `startBroker` (a broker and its workers must
/// agree on it, or idle workers are expired), and `BUS_SECURITY=off`; merge
/// ``TestKeys/environment(_:)`` over it for a process with keys.
public func serviceEnvironment(_ endpoints: Broker.Endpoints, heartbeatMs: Int = testHeartbeatMs) -> [String: String] {
    ["BUS_RPC": endpoints.rpc, "BUS_PUB": endpoints.pub, "BUS_SUB": endpoints.sub, "BUS_HEARTBEAT_MS": String(heartbeatMs), "BUS_SECURITY": "off"]
}

/// What a test starts and must stop on every path: a broker, service processes or in-process
/// servers, temporary folders. ``withWorld(_:_:)`` stops it however the test ends.
public protocol TestWorld {
    /// Stops everything the world started and removes what it wrote; called exactly once.
    func stop() async
}

/// Runs `body` with a started `world` and stops it, also when `body` throws (an expectation
/// that `#require`s, a deadline): nothing of a failed test outlives it.
///
///     try await withWorld(StoreWorld.start()) { world in
///         _ = try await world.call(Store.createSubject, .init(name: "Biology"))
///     }
public func withWorld<World: TestWorld>(_ world: World, _ body: (World) async throws -> Void) async throws {
    try await running(world, stop: { await $0.stop() }, body)
}

/// Runs `body` with a started broker and its endpoints (``startBroker(heartbeatMs:maxQueue:maxMessageBytes:rpc:pub:sub:keys:contracts:metrics:console:)``),
/// stopping the broker however `body` ends.
public func withBroker(_ started: (Broker, Broker.Endpoints), _ body: (Broker, Broker.Endpoints) async throws -> Void) async throws {
    try await running(started, stop: { await $0.0.stop() }) { try await body($0.0, $0.1) }
}

/// Runs `body` with `world` and then `stop`s it, also when `body` throws (a `defer` cannot
/// await). ``withWorld(_:_:)`` is the usual way in; this one is for parts whose stop is not
/// ``TestWorld/stop()``.
public func running<World>(_ world: World, stop: (World) async -> Void, _ body: (World) async throws -> Void) async throws {
    do {
        try await body(world)
    } catch {
        await stop(world)
        throw error
    }
    await stop(world)
}
