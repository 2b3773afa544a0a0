import Bus
import TestSupport

/// A system spread over network-namespace hosts, as each multi-host test builds one: its network,
/// its keys and the test's client on the network. How it stops and how a test runs in it are the
/// same for all.
protocol HostWorld {
    var network: VirtualHosts { get }
    var keys: TestKeys { get }
    var client: Bus { get }
    static func start() async throws -> Self
}

extension HostWorld {
    /// Closes the client, removes every namespace and cgroup the network made, and the keys.
    func stop() async {
        await client.shutdown()
        network.remove()
        keys.remove()
    }

    /// Starts the hosts, runs `body` and removes every namespace whether `body` succeeds or throws.
    static func run(_ body: (Self) async throws -> Void) async throws {
        try await running(try await start(), stop: { await $0.stop() }, body)
    }
}

/// The test's client on a multi-host network: the brokers in `endpoints` (`BUS_RPC`, `BUS_PUB`,
/// `BUS_SUB`), heartbeats every `heartbeatMs`, reconnecting within half a second after a heal.
func hostClient(source: String, endpoints: [String: String], heartbeatMs: Int, security: BusSecurity) throws -> Bus {
    var configuration = BusConfiguration(source: source)
    configuration.rpcEndpoint = endpoints["BUS_RPC"]!
    configuration.pubEndpoint = endpoints["BUS_PUB"]!
    configuration.subEndpoint = endpoints["BUS_SUB"]!
    configuration.heartbeatInterval = .milliseconds(heartbeatMs)
    configuration.reconnectMaximumDelay = .milliseconds(500)
    configuration.security = security
    return try Bus(configuration: configuration, logger: testLogger("client"))
}
