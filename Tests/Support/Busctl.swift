import BrokerCore
import Foundation
import Glibc

/// Runs the built `busctl` against `endpoints` (killed after `timeout`); returns its exit status,
/// standard output and standard error. `whileRunning` runs alongside until it exits.
public func busctl(
    _ arguments: [String], _ endpoints: Broker.Endpoints, timeout: Duration = .seconds(20),
    whileRunning: (@Sendable () async throws -> Void)? = nil
) async throws -> (status: Int32, out: String, err: String) {
    let errorLog = FileManager.default.temporaryDirectory.appending(path: "busctl-\(UUID().uuidString).err").path
    let process = try ChildProcess(
        executable: builtProductsDirectory.appending(path: "busctl").path,
        arguments: arguments + ["--bus-rpc", endpoints.rpc, "--bus-pub", endpoints.pub, "--bus-sub", endpoints.sub],
        environment: ["NO_COLOR": "1"], captureOutput: true, logFile: errorLog)
    let side = Task { try await whileRunning?() }
    let status = await process.waitForExit(timeout: timeout) ?? { process.send(SIGKILL); return -1 }()
    side.cancel()
    let out = String(decoding: process.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
    let err = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
    return (status, out, err)
}
