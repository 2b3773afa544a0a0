import Bus
import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import UnixSignals
import Wire

/// How the broker binds and behaves, from `BUS_RPC_BIND`, `BUS_PUB_BIND`, `BUS_SUB_BIND`,
/// `BUS_HEARTBEAT_*`, `BUS_HWM` and the `BROKER_*` variables.
public struct BrokerConfiguration: ServiceConfiguration {
    public static let serviceName = BrokerProtocol.serviceName

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
    /// How long a peer may stay silent before it counts as gone: a worker is removed, any
    /// connection closed (ZMTP heartbeats).
    var peerLiveness: Duration { heartbeatInterval * heartbeatLiveness }
    /// Requests a service may have waiting for a free worker (`BROKER_MAX_QUEUE`, default 10000).
    public var maxQueuedPerService = 10_000
    /// Bytes of one client's requests that may wait in the broker for free workers
    /// (`BROKER_MAX_CLIENT_QUEUED_BYTES`, default 256 MiB); a client with nothing waiting may
    /// always queue one request.
    public var maxQueuedBytesPerClient = 256 << 20
    /// Bytes of all clients' requests that may wait in the broker (`BROKER_MAX_QUEUED_BYTES`,
    /// default 1 GiB).
    public var maxQueuedBytes = 1 << 30
    /// Largest frame a peer may send, in bytes (`BROKER_MAX_MESSAGE_BYTES`, default 64 MiB);
    /// a peer that sends more is disconnected by libzmq.
    public var maxMessageBytes: Int64 = 64 << 20
    /// Messages queued per peer before libzmq drops (events) or refuses (requests) more (`BUS_HWM`).
    /// A client with this many replies unread is cut off as a slow consumer.
    public var highWaterMark: Int32 = 100_000
    /// Largest frame a publisher may send, in bytes (`BROKER_MAX_EVENT_BYTES`, default 4 MiB;
    /// never more than `maxMessageBytes`); a publisher that sends more is disconnected by
    /// libzmq. With `highWaterMark` it bounds what the broker holds for one slow subscriber,
    /// and what one event costs it per subscriber.
    public var maxEventBytes: Int64 = 4 << 20
    /// Longest subscription prefix, in bytes (`BROKER_MAX_SUBSCRIPTION_BYTES`, default 256); a
    /// subscriber that sends a longer one is disconnected by libzmq.
    public var maxSubscriptionBytes = 256
    /// Services the broker keeps records of (`BROKER_MAX_SERVICES`, default 1000). A READY for
    /// a new service beyond it replaces the record of a service without workers, or is refused.
    public var maxServices = 1000
    /// How long the record of a service without workers is kept, for `mmi.services`
    /// (`BROKER_SERVICE_EXPIRY_SECONDS`, default 300).
    public var serviceExpiry: Duration = .seconds(300)
    /// Credit a READY may claim at most; larger claims are capped.
    public var maxCredit = 10_000
    /// The instance name in the broker's own `bus.rpc` events.
    public var instance = BusConfiguration.defaultInstance
    /// The broker's own key pair: with it, its three sockets are CURVE servers. From `BUS_KEY`
    /// while `BUS_SECURITY` is on (read with the bus settings every process reads).
    public var curveServerKeys: CurveKeyPair?
    /// The keys the broker admits and the role of each (`BUS_ALLOWLIST`); required with
    /// `curveServerKeys`. SIGHUP reads it again.
    public var allowlistPath: String?
    /// The contracts whose topics services may publish and others subscribe to, with
    /// security on: every StudyBus service's.
    public var contracts: [any ServiceContract] = Catalog.contracts
    /// A file with the operator token the console's API requires (`BROKER_CONSOLE_TOKEN_FILE`);
    /// unset, the console relies on the monitoring port being reachable by operators only.
    public var consoleTokenFile: String?

    public init() {}

    /// Reads the environment; unset variables keep their defaults.
    /// - Throws: `INVALID_ARGUMENT` naming a variable with a bad value.
    public init(environment: Environment) throws(BusError) {
        rpcBind = environment.string("BUS_RPC_BIND", default: rpcBind)
        pubBind = environment.string("BUS_PUB_BIND", default: pubBind)
        subBind = environment.string("BUS_SUB_BIND", default: subBind)
        instance = environment.string("BUS_INSTANCE", default: instance)
        heartbeatInterval = .milliseconds(try environment.int("BUS_HEARTBEAT_MS", default: MDP.defaultHeartbeatIntervalMs, in: 1...Int(Int32.max)))
        heartbeatLiveness = try environment.int("BUS_HEARTBEAT_LIVENESS", default: heartbeatLiveness, in: 1...1000)
        maxQueuedPerService = try environment.int("BROKER_MAX_QUEUE", default: maxQueuedPerService, in: 1...Int(Int32.max))
        maxMessageBytes = Int64(try environment.int("BROKER_MAX_MESSAGE_BYTES", default: Int(maxMessageBytes), in: 1...Int(Int32.max)))
        highWaterMark = Int32(try environment.int("BUS_HWM", default: Int(highWaterMark), in: 1...Int(Int32.max)))
        maxQueuedBytesPerClient = try environment.int("BROKER_MAX_CLIENT_QUEUED_BYTES", default: maxQueuedBytesPerClient, in: 1...(1 << 40))
        maxQueuedBytes = try environment.int("BROKER_MAX_QUEUED_BYTES", default: maxQueuedBytes, in: 1...(1 << 40))
        maxEventBytes = Int64(try environment.int("BROKER_MAX_EVENT_BYTES", default: Int(maxEventBytes), in: 1024...Int(Int32.max)))
        maxSubscriptionBytes = try environment.int("BROKER_MAX_SUBSCRIPTION_BYTES", default: maxSubscriptionBytes, in: 64...65_536)
        maxServices = try environment.int("BROKER_MAX_SERVICES", default: maxServices, in: 1...1_000_000)
        serviceExpiry = .seconds(try environment.int("BROKER_SERVICE_EXPIRY_SECONDS", default: 300, in: 1...86_400 * 365))
        allowlistPath = environment.values["BUS_ALLOWLIST"].flatMap { $0.isEmpty ? nil : $0 }
        consoleTokenFile = environment.optionalString("BROKER_CONSOLE_TOKEN_FILE")
    }

    public static let usage = """
        USAGE: broker

        The StudyBus broker: 7/MDP request routing, the XSUB/XPUB event proxy, bus.rpc call traces.
        Configured by environment variables:
          BUS_RPC_BIND                   ROUTER for requests and workers            (default tcp://*:5555)
          BUS_PUB_BIND                   XSUB publishers connect to                 (default tcp://*:5556)
          BUS_SUB_BIND                   XPUB subscribers connect to                (default tcp://*:5557)
          BUS_HEARTBEAT_MS               worker heartbeat interval                  (default 2500)
          BUS_HEARTBEAT_LIVENESS         heartbeats missed before removal           (default 3)
          BUS_HWM                        messages queued per peer, unread replies   (default 100000)
          BROKER_MAX_QUEUE               requests waiting per service               (default 10000)
          BROKER_MAX_CLIENT_QUEUED_BYTES bytes of one client's requests waiting     (default 268435456)
          BROKER_MAX_QUEUED_BYTES        bytes of all requests waiting              (default 1073741824)
          BROKER_MAX_MESSAGE_BYTES       largest frame accepted                     (default 67108864)
          BROKER_MAX_EVENT_BYTES         largest event frame accepted               (default 4194304)
          BROKER_MAX_SUBSCRIPTION_BYTES  longest subscription prefix                (default 256)
          BROKER_MAX_SERVICES            services kept                              (default 1000)
          BROKER_SERVICE_EXPIRY_SECONDS  how long a service without workers is kept (default 300)
          BUS_SECURITY                   on|off: CURVE on every socket              (default on)
          BUS_KEY, BUS_BROKER_KEY        the broker's secret and public key files
          BUS_ALLOWLIST                  the keys admitted and their roles; SIGHUP rereads it
          METRICS_ADDRESS                the monitoring port: /metrics, /healthz, /readyz, /console
          BROKER_CONSOLE_TOKEN_FILE      the operator token the console's API requires (default: none)
          LOG_LEVEL, LOG_FORMAT          info|debug|…, text|json
        Exit status: 0 after SIGTERM or SIGINT, 1 on a runtime error, 2 on a configuration error.
        """
}

/// The broker as a process: its thread runs for the life of the service group.
public final class BrokerService: StudyBusService {
    public let broker: Broker

    public init(context: ServiceContext<BrokerConfiguration>) throws {
        var configuration = context.configuration
        configuration.curveServerKeys = context.busConfiguration.security.keys?.keyPair
        // The console lives on the monitoring port: without one there is no console to feed.
        let monitoring = context.monitoring
        let console = monitoring.isEnabled ? ConsoleFeed() : nil
        broker = try Broker(configuration: configuration, logger: context.logger, metrics: monitoring.factory, console: console)
        if let console {
            let token = try configuration.consoleTokenFile.map { file throws(BusError) in try ConsoleToken(file: file) }
            let server = ConsoleServer(feed: console, token: token)
            monitoring.serve(ConsoleServer.path) { request in await server.respond(to: request) }
            context.logger.info("operator console on the monitoring port", metadata: [
                "path": "\(ConsoleServer.path)", "token": "\(token == nil ? "none: keep the port on the operators' network" : "required")",
            ])
        }
    }

    public var services: [any Service] { [BrokerRunner(broker: broker), AllowlistReloader(broker: broker)] }
}

/// Rereads the allowlist on each SIGHUP, until graceful shutdown.
struct AllowlistReloader: Service {
    let broker: Broker

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            broker.reloadAllowlist()
        }
    }
}

/// Runs the broker's thread until graceful shutdown.
struct BrokerRunner: Service {
    let broker: Broker

    func run() async throws {
        _ = try await broker.start()
        try? await gracefulShutdown()
        await broker.stop()
    }
}
