import Foundation
import Glibc
import Wire
import ZMQ

/// Where the bus is and how a process behaves on it. ``fromEnvironment(service:_:)`` reads the
/// variables every StudyBus process understands (`BUS_RPC`, `BUS_PUB`, `BUS_SUB`, `BUS_SECURITY`, …).
public struct BusConfiguration: Sendable {
    /// The broker's request/reply endpoint (`BUS_RPC`), or the endpoints of a broker pair
    /// separated by commas, the preferred broker first (``rpcEndpoints``).
    public var rpcEndpoint = "tcp://127.0.0.1:5555"
    /// Where publishers connect (`BUS_PUB`); a comma-separated list for a broker pair.
    public var pubEndpoint = "tcp://127.0.0.1:5556"
    /// Where subscribers connect (`BUS_SUB`); a comma-separated list for a broker pair.
    public var subEndpoint = "tcp://127.0.0.1:5557"

    /// The most brokers one setting may list: a pair, or a pair and a spare.
    public static let maximumBrokers = 3

    /// The brokers workers register with and clients call, preferred first.
    public var rpcEndpoints: [String] { Self.endpoints(in: rpcEndpoint) }
    /// The brokers events are published to: every one of them gets every event.
    public var pubEndpoints: [String] { Self.endpoints(in: pubEndpoint) }
    /// The brokers subscribers take events from; an event seen through several is delivered once.
    public var subEndpoints: [String] { Self.endpoints(in: subEndpoint) }

    /// The name events are published under (`source`), e.g. `timer-ticker`.
    public var source: String
    /// This process's name in event headers (`instance`): host name and pid.
    public var instance: String
    /// Deadline of calls that set none (`BUS_CALL_TIMEOUT_MS`, default 30 s).
    public var defaultTimeout: Duration = .seconds(30)
    /// Worker heartbeat interval (`BUS_HEARTBEAT_MS`, default 2500 ms as in 7/MDP).
    public var heartbeatInterval: Duration = .milliseconds(MDP.defaultHeartbeatIntervalMs)
    /// Heartbeats that may be missed before the broker is considered lost (`BUS_HEARTBEAT_LIVENESS`).
    public var heartbeatLiveness = MDP.defaultHeartbeatLiveness
    /// First delay before a worker reconnects after losing the broker; doubles up to the maximum.
    public var reconnectInitialDelay: Duration = .milliseconds(100)
    /// Longest delay between reconnect attempts.
    public var reconnectMaximumDelay: Duration = .seconds(5)
    /// How long sockets may keep flushing queued messages when the bus shuts down.
    public var shutdownLinger: Duration = .milliseconds(500)
    /// Messages a socket queues before libzmq drops (PUB/SUB) or refuses (DEALER) more (`BUS_HWM`).
    public var highWaterMark: Int32 = 100_000
    /// Events a subscription buffers in memory for a slow consumer before dropping (seen as a
    /// gap). `BUS_HWM` sets it too: both bound how far a consumer may fall behind.
    public var subscriptionBufferLimit = 100_000
    /// Bytes of events a subscription buffers for a slow consumer before dropping
    /// (`BUS_SUBSCRIPTION_BUFFER_BYTES`, default 64 MiB); an event always fits an empty buffer.
    public var subscriptionBufferBytes = 64 << 20
    /// The largest frame the broker accepts (`BROKER_MAX_MESSAGE_BYTES`, default 64 MiB, the
    /// broker's own setting). The broker disconnects a peer that sends more, so a service that
    /// could send a bigger frame (`_backup`) refuses instead, with an error naming the limit.
    /// Set it the same for the broker and every service.
    public var maxMessageBytes: Int64 = 64 << 20
    /// CurveZMQ on every socket towards the broker (`BUS_SECURITY`, `BUS_KEY`, `BUS_BROKER_KEY`).
    /// On by default when read from the environment; a configuration built in code (tests,
    /// tools that embed the bus) starts `.off` and sets keys itself.
    public var security = BusSecurity.off
    /// The largest event frame the broker accepts (`BROKER_MAX_EVENT_BYTES`, default 4 MiB, the
    /// broker's own setting; never more than `maxMessageBytes`). The broker disconnects a
    /// publisher that sends more, losing what else it had in flight, so a larger event is
    /// refused before it is sent.
    public var maxEventBytes: Int64 = 4 << 20

    public init(source: String, instance: String? = nil) {
        self.source = source
        self.instance = instance ?? BusConfiguration.defaultInstance
    }

    /// `hostname:pid`, the spec's "host or container name plus pid".
    public static var defaultInstance: String {
        "\(hostName):\(getpid())"
    }

    /// The machine's (or container's) host name.
    public static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads the standard variables; unset ones keep their defaults. Security is on unless
    /// `BUS_SECURITY=off`, and then `BUS_KEY` and `BUS_BROKER_KEY` must name usable key files.
    /// - Throws: `INVALID_ARGUMENT` naming a variable whose value is not a positive number, or an
    ///   endpoint list that ``checkEndpointList(_:_:)`` refuses;
    ///   `FAILED_PRECONDITION` naming a key variable that is missing or whose file is unusable.
    public static func fromEnvironment(
        service: String, _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(BusError) -> BusConfiguration {
        var configuration = BusConfiguration(source: service)
        if let value = environment["BUS_RPC"], !value.isEmpty {
            try checkEndpointList("BUS_RPC", value)
            configuration.rpcEndpoint = value
        }
        if let value = environment["BUS_PUB"], !value.isEmpty {
            try checkEndpointList("BUS_PUB", value)
            configuration.pubEndpoint = value
        }
        if let value = environment["BUS_SUB"], !value.isEmpty {
            try checkEndpointList("BUS_SUB", value)
            configuration.subEndpoint = value
        }
        if let value = environment["BUS_INSTANCE"], !value.isEmpty { configuration.instance = value }
        func positive(_ name: String) throws(BusError) -> Int? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let number = Int(text), number > 0 else {
                throw .invalidArgument("environment variable \(name) must be a positive integer, got '\(text)'")
            }
            return number
        }
        if let ms = try positive("BUS_CALL_TIMEOUT_MS") { configuration.defaultTimeout = .milliseconds(ms) }
        if let ms = try positive("BUS_HEARTBEAT_MS") { configuration.heartbeatInterval = .milliseconds(ms) }
        if let count = try positive("BUS_HEARTBEAT_LIVENESS") { configuration.heartbeatLiveness = count }
        if let count = try positive("BUS_HWM") {
            configuration.highWaterMark = Int32(clamping: count)
            configuration.subscriptionBufferLimit = count
        }
        if let bytes = try positive("BROKER_MAX_MESSAGE_BYTES") { configuration.maxMessageBytes = Int64(bytes) }
        configuration.security = try BusSecurity.fromEnvironment(environment)
        if let bytes = try positive("BROKER_MAX_EVENT_BYTES") { configuration.maxEventBytes = Int64(bytes) }
        if let bytes = try positive("BUS_SUBSCRIPTION_BUFFER_BYTES") { configuration.subscriptionBufferBytes = bytes }
        return configuration
    }

    /// Sets up a socket towards the broker before it connects: high-water marks, CURVE when
    /// security is on, TCP keepalive, and ZMTP heartbeats at the bus's heartbeat interval, so that a
    /// connection whose far end vanished is closed and made again after the liveness the
    /// workers use (`heartbeatInterval × heartbeatLiveness`), on every socket, event sockets
    /// included.
    func prepare(_ socket: ZMQSocket) throws(ZMQError) {
        try socket.set(.sendHighWaterMark, highWaterMark)
        try socket.set(.receiveHighWaterMark, highWaterMark)
        try security.apply(to: socket)
        try socket.setHeartbeat(interval: heartbeatInterval, timeout: heartbeatInterval * heartbeatLiveness)
        // And TCP keepalive below the idle cut of the networks between us and the broker (a
        // swarm's overlay drops connections idle for 900 s), for a heartbeat set very long:
        // probes after 300 s of silence, every 60 s.
        try socket.set(.tcpKeepalive, 1)
        try socket.set(.tcpKeepaliveIdle, 300)
        try socket.set(.tcpKeepaliveInterval, 60)
    }
}

extension BusConfiguration {
    /// The endpoints of a comma-separated list, trimmed, empty items left out.
    static func endpoints(in list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Checks an endpoint setting: one to ``maximumBrokers`` distinct ZeroMQ endpoints separated
    /// by commas, each `tcp://HOST:PORT`, `ipc://PATH` or `inproc://NAME`.
    /// - Throws: `INVALID_ARGUMENT` naming the variable and the item that is wrong.
    static func checkEndpointList(_ name: String, _ value: String) throws(BusError) {
        let items = value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard items.count <= maximumBrokers else {
            throw .invalidArgument("environment variable \(name) lists \(items.count) brokers; at most \(maximumBrokers) are allowed")
        }
        for item in items {
            let shown = "'\(item.prefix(100))'"
            if item.isEmpty { throw .invalidArgument("environment variable \(name) has an empty endpoint; separate brokers with single commas") }
            if item.hasPrefix("tcp://") {
                let address = item.dropFirst("tcp://".count)
                guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
                      let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port)
                else {
                    throw .invalidArgument("environment variable \(name): endpoint \(shown) must be tcp://HOST:PORT with a port from 1 to 65535")
                }
            } else if !(item.hasPrefix("ipc://") || item.hasPrefix("inproc://")) || item.hasSuffix("//") {
                throw .invalidArgument("environment variable \(name): endpoint \(shown) must be tcp://HOST:PORT, ipc://PATH or inproc://NAME")
            }
        }
        guard Set(items).count == items.count else {
            throw .invalidArgument("environment variable \(name) lists the same broker twice")
        }
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded up; saturated at the ends of Int64.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return milliseconds.addingSaturating((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}

extension Int64 {
    /// `self + other`, or the nearest end of Int64 when that overflows.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other < 0 ? .min : .max
    }
}
