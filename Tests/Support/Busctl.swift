import BrokerCore
import Foundation
import Glibc

/// Runs the built `busctl` against `endpoints` (nil for commands that need no bus: `keys`),
/// killed after `timeout`; returns its exit status, standard output and standard error.
/// `whileRunning` runs alongside until it exits. The endpoints go as `--bus-*` flags, or with
/// `endpointsFromEnvironment` as `BUS_RPC`, `BUS_PUB` and `BUS_SUB`. `environment` adds to its environment, which has `BUS_SECURITY=off` unless
/// `environment` gives keys (``TestKeys/environment(_:)``).
public func busctl(
    _ arguments: [String], _ endpoints: Broker.Endpoints?, timeout: Duration = .seconds(20), endpointsFromEnvironment: Bool = false,
    environment extra: [String: String] = [:], whileRunning: (@Sendable () async throws -> Void)? = nil
) async throws -> (status: Int32, out: String, err: String) {
    let errorLog = FileManager.default.temporaryDirectory.appending(path: "busctl-\(UUID().uuidString).err").path
    var environment = ["NO_COLOR": "1", "BUS_SECURITY": "off"].merging(extra) { $1 }
    var flags = endpoints.map { ["--bus-rpc", $0.rpc, "--bus-pub", $0.pub, "--bus-sub", $0.sub] } ?? []
    if endpointsFromEnvironment, let endpoints {
        environment.merge(["BUS_RPC": endpoints.rpc, "BUS_PUB": endpoints.pub, "BUS_SUB": endpoints.sub]) { $1 }
        flags = []
    }
    let process = try ChildProcess(
        executable: builtProductsDirectory.appending(path: "busctl").path,
        arguments: arguments + flags, environment: environment, captureOutput: true, logFile: errorLog)
    let side = Task { try await whileRunning?() }
    let status = await process.waitForExit(timeout: timeout) ?? { process.send(SIGKILL); return -1 }()
    side.cancel()
    let out = String(decoding: process.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
    let err = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
    return (status, out, err)
}
