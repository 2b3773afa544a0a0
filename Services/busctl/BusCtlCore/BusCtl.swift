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

        Exit status: 0 on success; the gRPC status code (1-16) when a call fails (14, UNAVAILABLE,
        also when nothing listens at the broker's address); 64 for usage errors. With --json the
        last line on standard error of a failed call is one JSON object:
        {"error":{"code","name","message","details"}}.
        """,
        version: "busctl \(BuildInfo.description)",
        subcommands: [Call.self, Tail.self, Services.self, Health.self, Describe.self, Backup.self, Keys.self, Token.self])

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
    /// the exit status, printed as text or, with `json`, as one JSON object. A call that ran
    /// out of time because nothing listens at the broker's address says so, as UNAVAILABLE.
    func withBus<T>(_ endpoints: EndpointOptions, json: Bool = false, _ body: (Bus) async throws -> T) async throws -> T {
        let bus: Bus
        do {
            bus = try endpoints.connect()
        } catch {
            throw Self.failed(error, json: json)
        }
        do {
            let result = try await body(bus)
            await bus.shutdown()
            return result
        } catch var error as BusError {
            let endpoint = bus.configuration.rpcEndpoint
            await bus.shutdown()
            if error.code == .deadlineExceeded, let reason = BrokerProbe.unreachable(endpoint) {
                error = BusError(.unavailable, "cannot reach the broker at \(endpoint): \(reason) (BUS_RPC or --bus-rpc say where it is)")
            }
            throw Self.failed(error, json: json)
        } catch {
            await bus.shutdown()
            throw error
        }
    }

    /// Prints `error` on standard error and returns the exit status that ends busctl with its code.
    static func failed(_ error: BusError, json: Bool) -> ExitCode {
        if json {
            var fields: [String: JSONValue] = [
                "code": .int(Int64(error.code.rawValue)), "name": .string(error.code.name), "message": .string(error.message),
            ]
            if let details = error.details { fields["details"] = details }
            Output.error(JSONValue.object(["error": .object(fields)]).jsonText)
        } else {
            Output.error("\(error.code.name): \(error.message)")
            if let details = error.details { Output.error("details: \(details.jsonText)") }
        }
        return ExitCode(Int32(error.code.rawValue))
    }
}

/// Writes to standard output and error, with colour only on terminals.
enum Output {
    static let colour = isatty(1) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    static let errorColour = isatty(2) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes one line to standard error; control characters in `text` (which may carry a
    /// service's message) are shown escaped.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data(((errorColour ? "\u{1B}[31m" : "") + printable(text) + (errorColour ? "\u{1B}[0m" : "") + "\n").utf8))
    }

    /// Like ``error(_:)``, in yellow.
    static func warning(_ text: String) {
        FileHandle.standardError.write(Data(((errorColour ? "\u{1B}[33m" : "") + printable(text) + (errorColour ? "\u{1B}[0m" : "") + "\n").utf8))
    }

    /// `text` with every character that steers a terminal shown as an escape instead (`\x1b`,
    /// `\u202e`): C0 controls (line breaks and tabs too, so one line stays one line), DEL, C1
    /// controls and the bidirectional overrides. Text from the bus (topics, users, payloads,
    /// messages) could otherwise rewrite the screen, the title or the clipboard of whoever reads it.
    static func printable(_ text: String) -> String {
        escapingControls(text) { scalar in
            scalar.value <= 0xFF ? "\\x" + hex(scalar.value, digits: 2) : "\\u" + hex(scalar.value, digits: 4)
        }
    }

    /// JSON text with the same characters written as JSON escapes (`\u009b`): the same JSON
    /// value, safe on a terminal. JSON writers escape C0 controls but leave C1 and the
    /// bidirectional overrides raw.
    static func printableJSON(_ json: String) -> String {
        escapingControls(json) { scalar in "\\u" + hex(scalar.value, digits: 4) }
    }

    private static func escapingControls(_ text: String, _ escape: (Unicode.Scalar) -> String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) { result += escape(scalar) } else { result.unicodeScalars.append(scalar) }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    static func dim(_ text: String) -> String { colour ? "\u{1B}[2m\(text)\u{1B}[0m" : text }
    static func bold(_ text: String) -> String { colour ? "\u{1B}[1m\(text)\u{1B}[0m" : text }
    static func status(_ code: StatusCode) -> String {
        guard colour else { return code.name }
        return (code == .ok ? "\u{1B}[32m" : "\u{1B}[31m") + code.name + "\u{1B}[0m"
    }
}
