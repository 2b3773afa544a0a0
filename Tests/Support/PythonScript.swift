import Foundation
import Glibc

/// Runs the test Python with `arguments` (and `input` on stdin); returns stdout, failing on a non-zero exit.
public func runPython(_ arguments: [String], input: Data? = nil) async throws -> Data {
    try await onOwnThread { try runPythonBlocking(arguments, input: input) }
}

/// Spawned by ChildProcess (Foundation's `Process.run()` crashed now and then while other tests
/// spawned processes); the input goes through a file, by the shell, as ChildProcess has no stdin.
private func runPythonBlocking(_ arguments: [String], input: Data?) throws -> Data {
    let scratch = FileManager.default.temporaryDirectory.appending(path: "studybus-python-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let inputFile = scratch.appending(path: "input"), errorFile = scratch.appending(path: "stderr")
    try (input ?? Data()).write(to: inputFile)
    let process = try ChildProcess(
        executable: "/bin/sh", arguments: ["-c", #"exec "$0" "$@" < "$STUDYBUS_PYTHON_INPUT""#, PythonServer.python] + arguments,
        environment: ["STUDYBUS_PYTHON_INPUT": inputFile.path], captureOutput: true, logFile: errorFile.path)
    let output = process.output!.readDataToEndOfFile()
    var status: Int32 = 0
    waitpid(process.pid, &status, 0)
    guard status == 0 else {
        throw PythonFailure(message: (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "exit status \(status)")
    }
    return output
}

public struct PythonFailure: Error, CustomStringConvertible {
    public var message: String
    public var description: String { "python failed (run scripts/test once to create .build-venv): \(message)" }
}
