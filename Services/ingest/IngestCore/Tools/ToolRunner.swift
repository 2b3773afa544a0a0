import Bus
import Foundation
import Glibc
import ServiceKit
import Synchronization
import Threads
import Wire

/// An external program ingest runs (`pdftotext`, `tesseract`), and the Debian package that has it.
struct ExternalTool: Sendable {
    /// What the operator configured: a name looked up in `PATH`, or a path.
    var command: String
    var package: String
    /// The variable that sets `command`, for error messages.
    var variable: String
}

/// Runs external tools as subprocesses: with a time limit (the process is killed when it runs
/// over, or when the job is cancelled), standard output collected, standard error kept for the
/// error message. Waiting happens on a thread of its own, never on Swift's cooperative pool.
enum ToolRunner {
    /// The most output a tool may write (beyond it the tool is stopped): 256 MiB.
    static let maximumOutput = 256 * 1024 * 1024

    /// Runs `tool` with `arguments`; returns its standard output.
    /// - Throws: `FAILED_PRECONDITION` if the tool is not installed, `DEADLINE_EXCEEDED` if it ran
    ///   out of time, `INVALID_ARGUMENT` when it failed on the file (its standard error quoted),
    ///   `CANCELLED` if the job was cancelled.
    static func run(_ tool: ExternalTool, arguments: [String], timeout: Duration, file: String) async throws(BusError) -> Data {
        guard let executable = locate(tool.command) else {
            throw .failedPrecondition(
                "\(tool.command) is not installed on this ingest worker: install the Debian package \(tool.package) (apt-get install \(tool.package)) or set \(tool.variable)")
        }
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess(executable: executable, arguments: arguments)
        } catch {
            throw .failedPrecondition("cannot start \(executable): \(error); check \(tool.variable)")
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<SpawnedProcess.Outcome, Never>) in
                startThread(named: "ingest-tool") {
                    continuation.resume(returning: process.collect(timeout: timeout, maximumOutput: maximumOutput))
                }
            }
        } onCancel: {
            process.kill()
        }
        let name = URL(fileURLWithPath: tool.command).lastPathComponent
        switch outcome.ending {
        case .exited(0):
            return outcome.output
        case .timedOut:
            throw .deadlineExceeded("\(name) took longer than \(timeout) on '\(file)' and was stopped (INGEST_TOOL_TIMEOUT_SECONDS); try a smaller file")
        case .killed where outcome.outputTooLarge:
            throw .invalidArgument("\(name) wrote more than \(maximumOutput / 1024 / 1024) MiB of text for '\(file)'; split the file")
        case .killed:
            throw .cancelled("\(name) was stopped: the job was cancelled")
        case .exited(let status), .signalled(let status):
            let stderr = outcome.errorOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            throw .invalidArgument("\(name) could not read '\(file)' (exit status \(status)): \(stderr.isEmpty ? "no message" : String(stderr.suffix(400)))")
        }
    }

    /// The tool's path: `command` itself if it has a slash, else the first match in `PATH`.
    static func locate(_ command: String) -> String? {
        if command.contains("/") { return FileManager.default.isExecutableFile(atPath: command) ? command : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// A child process with its standard output and error on pipes, standard input empty, and a
/// clean signal state (``withCleanSignalAttributes(_:)``).
final class SpawnedProcess: Sendable {
    enum Ending: Sendable {
        case exited(Int32)
        case signalled(Int32)
        /// Killed by ``kill()`` (cancellation) or for writing too much.
        case killed
        case timedOut
    }

    struct Outcome: Sendable {
        var ending: Ending
        var output: Data
        var errorOutput: String
        var outputTooLarge = false
    }

    struct SpawnError: Error, CustomStringConvertible {
        let code: Int32
        var description: String { String(cString: strerror(code)) }
    }

    let pid: pid_t
    private let outputFD: Int32
    private let errorFD: Int32
    /// Whether the process was reaped (then its pid may belong to another process) or killed.
    private let state = Mutex<(reaped: Bool, killed: Bool)>((false, false))

    /// Held from making a child's pipes to spawning it (see `init`).
    private static let spawning = Mutex(())

    init(executable: String, arguments: [String]) throws(SpawnError) {
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        var pid: pid_t = 0
        // The pipes are close-on-exec, so a tool another job starts meanwhile does not inherit
        // their write ends (this tool's end of file would wait for that one to exit). Glibc
        // offers Swift no pipe2, so they are made and marked under a lock every spawn takes.
        // (dup2 onto 1 and 2 clears the flag for this child's own output.)
        let status = Self.spawning.withLock { _ -> Int32 in
            guard pipe(&output) == 0 else { return errno }
            guard pipe(&errors) == 0 else {
                close(output[0]); close(output[1])
                return errno
            }
            for descriptor in output + errors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
            posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
            let status = withCleanSignalAttributes { attributes in posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
            close(output[1])
            close(errors[1])
            if status != 0 { close(output[0]); close(errors[0]) }
            return status
        }
        guard status == 0 else { throw SpawnError(code: status) }
        self.pid = pid
        outputFD = output[0]
        errorFD = errors[0]
    }

    /// Kills the process (SIGKILL) unless it was already reaped.
    func kill() {
        state.withLock { state in
            guard !state.reaped else { return }
            state.killed = true
            _ = Glibc.kill(pid, SIGKILL)
        }
    }

    /// Reads both pipes until the process closes them, killing it at `timeout` or when it writes
    /// more than `maximumOutput`; then reaps it. Blocks: call on a thread of its own.
    func collect(timeout: Duration, maximumOutput: Int) -> Outcome {
        let deadline = ContinuousClock.now + timeout
        var output = Data(), errorOutput = Data()
        var open: [Int32] = [outputFD, errorFD]
        var timedOut = false, tooLarge = false
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !open.isEmpty {
            let left = deadline - ContinuousClock.now
            if left <= .zero, !timedOut {
                timedOut = true
                kill()
            }
            // A killed tool's own children could hold the pipes open: stop reading soon after.
            if timedOut, left < .seconds(-2) { break }
            var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let milliseconds = timedOut ? 1000 : Int32(clamping: max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            guard poll(&descriptors, nfds_t(descriptors.count), milliseconds) >= 0 || errno == EINTR else { break }
            for descriptor in descriptors where descriptor.revents != 0 {
                let count = read(descriptor.fd, &buffer, buffer.count)
                if count > 0 {
                    if descriptor.fd == outputFD {
                        output.append(contentsOf: buffer[0..<count])
                        if output.count > maximumOutput, !tooLarge {
                            tooLarge = true
                            kill()
                        }
                    } else if errorOutput.count < 65_536 {
                        errorOutput.append(contentsOf: buffer[0..<count])
                    }
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(descriptor.fd)
                    open.removeAll { $0 == descriptor.fd }
                }
            }
        }
        for descriptor in open { close(descriptor) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let killed = state.withLock { state in
            state.reaped = true
            return state.killed
        }
        let signal = status & 0x7F
        let ending: Ending = if timedOut { .timedOut } else if killed { .killed } else if signal != 0 { .signalled(signal) } else { .exited((status >> 8) & 0xFF) }
        return Outcome(ending: ending, output: output, errorOutput: String(decoding: errorOutput, as: UTF8.self), outputTooLarge: tooLarge)
    }
}
