import Foundation
import Glibc

/// A local server written in Python that speaks an external service's real wire format
/// (an HTTP API, a webhook receiver). The script prints its port on the first line of stdout
/// and serves until stopped.
public final class PythonServer: Sendable, TestWorld {
    public let port: Int
    private let process: ChildProcess

    /// The Python with the test packages: `$STUDYBUS_PYTHON` (set by scripts/test), else the
    /// project's `.build-venv`, else `python3` from the PATH.
    public static var python: String {
        if let configured = ProcessInfo.processInfo.environment["STUDYBUS_PYTHON"], !configured.isEmpty { return configured }
        let venv = packageRoot.appending(path: ".build-venv/bin/python").path
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : "/usr/bin/python3"
    }

    /// The package's root folder, found from this file's location.
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Starts `script` with `arguments` and waits (up to 20 s) for it to print its port.
    public init(script: URL, arguments: [String] = []) async throws {
        let process = try ChildProcess(executable: Self.python, arguments: ["-u", script.path] + arguments, captureOutput: true)
        let line = await process.readLine() ?? ""
        guard let port = Int(line.trimmingCharacters(in: .whitespaces)) else {
            process.send(SIGKILL)
            throw ServerDidNotStart(script: script.lastPathComponent, output: line)
        }
        self.port = port
        self.process = process
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Stops the server.
    public func stop() async {
        await process.terminate(grace: .seconds(5))
    }

    public struct ServerDidNotStart: Error, CustomStringConvertible {
        let script: String
        let output: String
        public var description: String { "\(script) did not print its port; it printed '\(output)' (run scripts/test once to create the Python venv)" }
    }
}
