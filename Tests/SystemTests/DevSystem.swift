import Bus
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
import Wire

/// The whole system as local processes, started by `scripts/dev up` with the built binaries, on
/// free ports, with its own data folder — the topology users run, driven through the bus.
final class DevSystem: Sendable {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    let data: URL
    let environment: [String: String]
    let client: Bus

    /// Settings that make the flows quick to observe: short alarm interval, no reminder batching
    /// window, fast heartbeats so a restarted broker is noticed within a second or two.
    static let quickSettings = [
        "BUS_HEARTBEAT_MS": "500",
        "NOTIFIER_ALARM_INTERVAL_MS": "400",
        "NOTIFIER_REMINDER_WINDOW_SECONDS": "0",
        "LOG_LEVEL": "info",
    ]

    /// Starts the system, with `settings` added to every process's environment.
    static func start(_ services: [String] = [], settings: [String: String] = [:]) async throws -> DevSystem {
        let data = FileManager.default.temporaryDirectory.appending(path: "studybus-system-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let (rpc, pub, sub) = (try freePort(), try freePort(), try freePort())
        var environment = quickSettings.merging(settings) { _, given in given }
        environment["STUDYBUS_DATA"] = data.path
        environment["STUDYBUS_BIN"] = builtProductsDirectory.path
        environment["STUDYBUS_METRICS_BASE"] = String(try freePortBlock(count: 40))
        // The HTTP edge that scripts/dev starts too, on a port of its own.
        environment["EDGE_PORT"] = String(try freePort())
        for (name, port) in [("RPC", rpc), ("PUB", pub), ("SUB", sub)] {
            environment["BUS_\(name)"] = "tcp://127.0.0.1:\(port)"
            environment["BUS_\(name)_BIND"] = "tcp://127.0.0.1:\(port)"
        }
        // The system runs as users run it, with bus security on: `up` makes the keys, and the
        // test's client is an operator with busctl's key (it acts for each flow's user).
        try await script("dev", ["up"] + services, data: data, environment: environment)
        var configuration = BusConfiguration(source: "system-test")
        configuration.rpcEndpoint = "tcp://127.0.0.1:\(rpc)"
        configuration.pubEndpoint = "tcp://127.0.0.1:\(pub)"
        configuration.subEndpoint = "tcp://127.0.0.1:\(sub)"
        configuration.heartbeatInterval = .milliseconds(500)
        configuration.reconnectMaximumDelay = .milliseconds(500)
        let keys = data.appending(path: "keys").path
        configuration.security = try BusSecurity.fromEnvironment(["BUS_KEY": "\(keys)/busctl.key_secret", "BUS_BROKER_KEY": "\(keys)/broker.key"])
        return DevSystem(data: data, environment: environment, client: try Bus(configuration: configuration, logger: testLogger("system-test")))
    }

    private init(data: URL, environment: [String: String], client: Bus) {
        self.data = data
        self.environment = environment
        self.client = client
    }

    /// Starts a system, runs `body` with it, and stops it whether `body` succeeds or throws.
    static func run(_ services: [String] = [], settings: [String: String] = [:], _ body: (DevSystem) async throws -> Void) async throws {
        try await running(try await start(services, settings: settings), stop: { await $0.stop() }, body)
    }

    /// What instance `instance` (`store-1`) has logged so far.
    func log(_ instance: String) -> String {
        (try? String(contentsOf: data.appending(path: "logs/\(instance).log"), encoding: .utf8)) ?? ""
    }

    /// Waits until the broker lists `count` workers of `service`.
    func waitForWorkers(_ service: String, count: Int) async throws {
        try await eventually("\(count) worker(s) of \(service)", timeout: Wait.startup) {
            try await client.call(BrokerProtocol.services, Empty()).first { $0.name == service }?.workers == count
        }
    }

    /// Runs `scripts/dev ARGUMENTS` for this system; throws with its output if it fails.
    @discardableResult
    func dev(_ arguments: [String], timeout: Duration = .seconds(90)) async throws -> String {
        try await script("dev", arguments, timeout: timeout)
    }

    /// Runs `scripts/NAME ARGUMENTS` with this system's settings; returns its output (standard
    /// output and error), or throws with it if the script fails.
    @discardableResult
    func script(_ name: String, _ arguments: [String] = [], timeout: Duration = .seconds(90)) async throws -> String {
        try await Self.script(name, arguments, data: data, environment: environment, timeout: timeout)
    }

    @discardableResult
    private static func script(
        _ name: String, _ arguments: [String], data: URL, environment: [String: String], timeout: Duration = .seconds(90)
    ) async throws -> String {
        let log = data.appending(path: "\(name)-\(UUID().uuidString.prefix(8)).out")
        let script = repository.appending(path: "scripts/\(name)").path
        let process = try ChildProcess(executable: "/bin/bash", arguments: [script] + arguments, environment: environment, logFile: log.path)
        let status = await process.waitForExit(timeout: timeout)
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard status == 0 else {
            if status == nil { process.send(SIGKILL) }
            throw ScriptFailed(command: "scripts/\(name) \(arguments.joined(separator: " "))", status: status, output: output)
        }
        return output
    }

    /// The pid of an instance (`store-1`, `ingest-2`, …) from scripts/dev's pid file.
    func pid(_ instance: String) throws -> pid_t {
        let text = try String(contentsOf: data.appending(path: "run/\(instance).pid"), encoding: .utf8)
        guard let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw ScriptFailed(command: "pid \(instance)", status: nil, output: text) }
        return pid
    }

    /// Kills an instance with SIGKILL — no shutdown, no flushing — and waits until it is gone.
    func kill9(_ instance: String) async throws {
        let pid = try pid(instance)
        kill(pid, SIGKILL)
        try await eventually("\(instance) exited") { kill(pid, 0) != 0 }
    }

    /// Calls `method` as `user`, with an optional attachment frame.
    func call<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, user: String, attachment: Data? = nil, timeout: Duration = .seconds(30)
    ) async throws -> Response {
        try await client.call(method, request, options: CallOptions(user: user, timeout: timeout, attachment: attachment))
    }

    /// Stops every process and the client; removes the data folder unless STUDYBUS_KEEP_SYSTEM_DATA is set.
    func stop() async {
        _ = try? await dev(["down"])
        await client.shutdown()
        if ProcessInfo.processInfo.environment["STUDYBUS_KEEP_SYSTEM_DATA"] == nil {
            try? FileManager.default.removeItem(at: data)
        }
    }

    struct ScriptFailed: Error, CustomStringConvertible {
        let command: String
        let status: Int32?
        let output: String
        var description: String { "\(command) \(status.map { "exited \($0)" } ?? "timed out"):\n\(output)" }
    }
}

/// The ports handed out so far, so that concurrent systems never get the same one.
private let handedOutPorts = Mutex<Set<Int>>([])

/// A TCP port nothing listens on now, for a broker started later by `scripts/dev`.
///
/// It comes from below the kernel's ephemeral range (`ip_local_port_range`): the in-process
/// brokers of other tests bind port 0 and get ephemeral ports, and one of them could otherwise
/// take this port in the seconds before the system's broker binds it — and receive the
/// system's services as its own workers.
func freePort() throws -> Int {
    let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
        .split(whereSeparator: \.isWhitespace).compactMap { Int($0) } ?? []
    let ephemeralStart = range.first ?? 32768
    let candidates = 20_000..<min(ephemeralStart, 32_768)
    for _ in 0..<200 {
        let port = Int.random(in: candidates)
        guard handedOutPorts.withLock({ $0.insert(port).inserted }) else { continue }
        if canBind(port) { return port }
    }
    throw BusError.unavailable("no free port below the ephemeral range \(ephemeralStart)")
}

/// The first of `count` consecutive free ports (below the ephemeral range, like ``freePort()``),
/// for the monitoring ports `scripts/dev` hands out from `STUDYBUS_METRICS_BASE` on.
func freePortBlock(count: Int) throws -> Int {
    for _ in 0..<200 {
        let base = try freePort()
        let block = base..<(base + count)
        guard block.upperBound < 32_768 else { continue }
        let taken = handedOutPorts.withLock { ports in
            guard block.dropFirst().allSatisfy({ !ports.contains($0) }) else { return true }
            ports.formUnion(block)
            return false
        }
        if !taken && block.allSatisfy(canBind) { return base }
    }
    throw BusError.unavailable("no block of \(count) free ports")
}

/// Whether a TCP socket can bind 127.0.0.1:`port` now.
private func canBind(_ port: Int) -> Bool {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}
