import BrokerCore
import CToolSpawn
import Foundation
import Glibc
import ServiceKit
import Synchronization
import Testing

/// A process started for a test — a service binary, a fixture server — with a clean signal
/// state. (Foundation's `Process` passes on the spawning thread's signal mask, and Swift's
/// concurrency threads block nearly every signal, so its children ignore SIGTERM.)
public final class ChildProcess: Sendable {
    public let pid: pid_t
    /// The read end of the child's standard output, when `captureOutput` was set.
    public let output: FileHandle?
    /// Held while a child is spawned (see the output pipe in `init`).
    private static let spawning = Mutex(())

    /// Starts `executable` (a path) with `arguments`; `environment` adds to (or overrides) the
    /// test's own. Standard error goes to `logFile` if given, else to the test's.
    public init(executable: String, arguments: [String] = [], environment: [String: String] = [:],
                captureOutput: Bool = false, logFile: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if let logFile {
            posix_spawn_file_actions_addopen(&actions, 2, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            if !captureOutput { posix_spawn_file_actions_adddup2(&actions, 2, 1) }
        }

        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        // The output pipe is close-on-exec, so that children other tests spawn meanwhile (scripts/dev
        // and the services it leaves running) do not inherit its write end: the reader would wait
        // for an end of file that comes only when they exit. Glibc offers Swift no pipe2, so the
        // pipe is made and marked under the lock every spawn takes. (dup2 onto fd 1 clears the
        // flag for this child's own standard output.)
        let status = Self.spawning.withLock { _ -> Int32 in
            if captureOutput {
                guard pipe(&pipeEnds) == 0 else { return errno }
                for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
                posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
            }
            // Nothing else of the test process reaches the child: a server's accepted socket (NIO
            // does not mark them close-on-exec) held open by a child would keep the server's close
            // from reaching its client.
            studybus_spawn_actions_close_from(&actions, 3)
            return withCleanSignalAttributes { attributes in posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
        }
        if captureOutput { close(pipeEnds[1]) }
        guard status == 0 else {
            if captureOutput { close(pipeEnds[0]) }
            throw SpawnFailed(executable: executable, code: status)
        }
        self.pid = pid
        output = captureOutput ? FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true) : nil
    }

    /// Sends `signal` (SIGTERM, SIGKILL, …).
    public func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Stops the process: SIGTERM, then SIGKILL if it still runs after `grace`.
    public func terminate(grace: Duration = .seconds(20)) async {
        send(SIGTERM)
        if await waitForExit(timeout: grace) == nil {
            send(SIGKILL)
            await waitForExit()
        }
    }

    /// Waits for the process to exit; returns its exit status (128 + signal when killed), or nil
    /// if it still runs after `timeout`.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(20)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                let signal = status & 0x7F
                return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
            }
            if result < 0 { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// Reads the next line the process writes to its captured output, or nil if none comes
    /// within `timeout`. It waits with short sleeps, not a blocking read, so it never holds a
    /// thread of the cooperative pool that the services under test need.
    public func readLine(timeout: Duration = .seconds(20)) async -> String? {
        guard let output else { return nil }
        var line = Data()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: output.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) > 0 else {
                try? await Task.sleep(for: .milliseconds(10))
                continue
            }
            var byte: UInt8 = 0
            guard read(output.fileDescriptor, &byte, 1) == 1 else { return nil }
            if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    public struct SpawnFailed: Error, CustomStringConvertible {
        let executable: String
        let code: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }
}

/// The folder with the built executables (`.build/debug` or wherever the tests were built).
public var builtProductsDirectory: URL {
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    // The test bundle is `<products>/StudyBusPackageTests.xctest` (a file on Linux).
    if url.lastPathComponent.hasSuffix(".xctest") { url.deleteLastPathComponent() }
    return url
}

/// The endpoints a broker process started with ephemeral ports logged in `logFile` (its
/// `broker listening` line, logfmt), once it has.
public func brokerEndpoints(logFile: String) async throws -> Broker.Endpoints {
    var found: Broker.Endpoints?
    try await eventually("the broker's listening line in \(logFile)") {
        let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        guard let line = log.split(separator: "\n").last(where: { $0.contains("broker listening") }) else { return false }
        func endpoint(_ name: String) -> String? {
            line.split(separator: " ").first { $0.hasPrefix("\(name)=") }.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
        guard let rpc = endpoint("rpc"), let pub = endpoint("pub"), let sub = endpoint("sub") else { return false }
        found = Broker.Endpoints(rpc: rpc, pub: pub, sub: sub)
        return true
    }
    return found!
}
