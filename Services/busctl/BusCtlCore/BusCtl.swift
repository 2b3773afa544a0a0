import ArgumentParser
import Bus
import Foundation
import Wire

/// `busctl`: call methods, tail events and calls, and check services on a StudyBus.
public struct BusCtl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "busctl",
        abstract: "Call methods, tail events and calls, and inspect services on a StudyBus.",
        discussion: """
        Endpoints come from BUS_RPC, BUS_PUB and BUS_SUB (defaults tcp://127.0.0.1:5555/5556/5557)
        or from --bus-rpc, --bus-pub and --bus-sub. Keys come from BUS_KEY (busctl's secret key
        file, an operator's) and BUS_BROKER_KEY (the broker's public key file); BUS_SECURITY=off
        connects without them, to a broker that runs without security too.

        Exit status: 0 on success; the gRPC status code (1-16) when a call fails; 64 for usage errors.
        """,
        subcommands: [Call.self, Tail.self, Services.self, Health.self, Describe.self, Backup.self, Keys.self])

    public init() {}

    /// Parses the command line and runs busctl; what `main.swift` calls.
    public static func runFromCommandLine() async {
        await main()
    }
}

/// Where the bus is; every subcommand takes these.
struct EndpointOptions: ParsableArguments {
    @Option(name: .customLong("bus-rpc"), help: "Broker request endpoint (default: $BUS_RPC or tcp://127.0.0.1:5555).")
    var rpc: String?

    @Option(name: .customLong("bus-pub"), help: "Broker publish endpoint (default: $BUS_PUB or tcp://127.0.0.1:5556).")
    var pub: String?

    @Option(name: .customLong("bus-sub"), help: "Broker subscribe endpoint (default: $BUS_SUB or tcp://127.0.0.1:5557).")
    var sub: String?

    func connect() throws(BusError) -> Bus {
        var configuration = try BusConfiguration.fromEnvironment(service: "busctl")
        if let rpc { configuration.rpcEndpoint = rpc }
        if let pub { configuration.pubEndpoint = pub }
        if let sub { configuration.subEndpoint = sub }
        if configuration.security == .off { Output.warning("warning: \(BusSecurity.offWarning)") }
        return try Bus(configuration: configuration)
    }
}

/// Ends busctl with the status code of a failed call, after printing it on stderr.
struct CallFailed: Error, CustomStringConvertible {
    let error: BusError
    var description: String { "\(error.code.name): \(error.message)" }
}

extension AsyncParsableCommand {
    /// Runs `body` with a connected bus and shuts it down afterwards; a ``BusError`` becomes
    /// the exit status.
    func withBus<T>(_ endpoints: EndpointOptions, _ body: (Bus) async throws -> T) async throws -> T {
        let bus: Bus
        do {
            bus = try endpoints.connect()
        } catch {
            Output.error("\(error.code.name): \(error.message)")
            throw ExitCode(Int32(error.code.rawValue))
        }
        do {
            let result = try await body(bus)
            await bus.shutdown()
            return result
        } catch let error as BusError {
            await bus.shutdown()
            Output.error("\(error.code.name): \(error.message)")
            if let details = error.details { Output.error("details: \(details.jsonText)") }
            throw ExitCode(Int32(error.code.rawValue))
        } catch {
            await bus.shutdown()
            throw error
        }
    }
}

/// Writes to standard output and error, with colour only on terminals.
enum Output {
    static let colour = isatty(1) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    static let errorColour = isatty(2) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(((errorColour ? "\u{1B}[31m" : "") + text + (errorColour ? "\u{1B}[0m" : "") + "\n").utf8))
    }

    static func warning(_ text: String) {
        FileHandle.standardError.write(Data(((errorColour ? "\u{1B}[33m" : "") + text + (errorColour ? "\u{1B}[0m" : "") + "\n").utf8))
    }

    static func dim(_ text: String) -> String { colour ? "\u{1B}[2m\(text)\u{1B}[0m" : text }
    static func bold(_ text: String) -> String { colour ? "\u{1B}[1m\(text)\u{1B}[0m" : text }
    static func status(_ code: StatusCode) -> String {
        guard colour else { return code.name }
        return (code == .ok ? "\u{1B}[32m" : "\u{1B}[31m") + code.name + "\u{1B}[0m"
    }
}
