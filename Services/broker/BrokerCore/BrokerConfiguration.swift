import Bus
import Foundation
import Wire

/// How the broker binds and behaves. ``fromEnvironment(_:)`` reads `BUS_RPC_BIND`,
/// `BUS_PUB_BIND`, `BUS_SUB_BIND` and the `BROKER_*` variables.
public struct BrokerConfiguration: Sendable {
    /// ROUTER for requests and workers (`BUS_RPC_BIND`).
    public var rpcBind = "tcp://*:5555"
    /// XSUB that publishers connect to (`BUS_PUB_BIND`).
    public var pubBind = "tcp://*:5556"
    /// XPUB that subscribers connect to (`BUS_SUB_BIND`).
    public var subBind = "tcp://*:5557"
    /// Heartbeat interval towards workers (`BUS_HEARTBEAT_MS`, default 2500).
    public var heartbeatInterval: Duration = .milliseconds(MDP.defaultHeartbeatIntervalMs)
    /// Heartbeats a worker may miss before it is removed (`BUS_HEARTBEAT_LIVENESS`, default 3).
    public var heartbeatLiveness = MDP.defaultHeartbeatLiveness
    /// Requests a service may have waiting for a free worker (`BROKER_MAX_QUEUE`, default 10000).
    public var maxQueuedPerService = 10_000
    /// Largest frame a peer may send, in bytes (`BROKER_MAX_MESSAGE_BYTES`, default 64 MiB);
    /// a peer that sends more is disconnected by libzmq.
    public var maxMessageBytes: Int64 = 64 << 20
    /// Messages queued per peer before libzmq drops (events) or refuses (requests) more (`BUS_HWM`).
    public var highWaterMark: Int32 = 100_000
    /// Credit a READY may claim at most; larger claims are capped.
    public var maxCredit = 10_000
    /// The instance name in the broker's own `bus.rpc` events.
    public var instance = BusConfiguration.defaultInstance

    public init() {}

    /// Reads the environment; unset variables keep their defaults.
    /// - Throws: `INVALID_ARGUMENT` naming a variable with a bad value.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(BusError) -> BrokerConfiguration {
        var configuration = BrokerConfiguration()
        if let value = environment["BUS_RPC_BIND"], !value.isEmpty { configuration.rpcBind = value }
        if let value = environment["BUS_PUB_BIND"], !value.isEmpty { configuration.pubBind = value }
        if let value = environment["BUS_SUB_BIND"], !value.isEmpty { configuration.subBind = value }
        if let value = environment["BUS_INSTANCE"], !value.isEmpty { configuration.instance = value }
        func positive(_ name: String) throws(BusError) -> Int? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let number = Int(text), number > 0 else {
                throw .invalidArgument("environment variable \(name) must be a positive integer, got '\(text)'")
            }
            return number
        }
        if let ms = try positive("BUS_HEARTBEAT_MS") { configuration.heartbeatInterval = .milliseconds(ms) }
        if let count = try positive("BUS_HEARTBEAT_LIVENESS") { configuration.heartbeatLiveness = count }
        if let count = try positive("BROKER_MAX_QUEUE") { configuration.maxQueuedPerService = count }
        if let bytes = try positive("BROKER_MAX_MESSAGE_BYTES") { configuration.maxMessageBytes = Int64(bytes) }
        if let count = try positive("BUS_HWM") { configuration.highWaterMark = Int32(clamping: count) }
        return configuration
    }
}
