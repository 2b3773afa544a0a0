import CToolSpawn
import Foundation
import Glibc
import Synchronization
import Threads

// Subprocesses with limits: ingest's extraction tools, ai-gateway's audio conversion (ffmpeg).

/// The resource limits of one run of a tool (setrlimit in the tool's process): a hostile PDF or
/// image, or audio file, must not take the machine with it.
public struct ToolLimits: Sendable, Equatable {
    /// Address space (RLIMIT_AS), `INGEST_TOOL_MEMORY_MB`; an allocation beyond it fails.
    public var memoryBytes: Int
    /// CPU time (RLIMIT_CPU), `INGEST_TOOL_CPU_SECONDS`; the tool is stopped beyond it.
    public var cpuSeconds: Int
    /// The largest file it may write (RLIMIT_FSIZE), `INGEST_TOOL_MAX_FILE_MB`: a page pdftoppm renders.
    public var fileBytes: Int
    /// Open file descriptors (RLIMIT_NOFILE), `INGEST_TOOL_OPEN_FILES`.
    public var openFiles: Int

    /// 1 GiB of memory, 60 s of CPU, files up to 64 MiB, 64 open files.
    public init(memoryBytes: Int = 1024 * 1024 * 1024, cpuSeconds: Int = 60, fileBytes: Int = 64 * 1024 * 1024, openFiles: Int = 64) {
        self.memoryBytes = memoryBytes
        self.cpuSeconds = cpuSeconds
        self.fileBytes = fileBytes
        self.openFiles = openFiles
    }
}

/// Finding a tool's executable.
public enum ToolPath {
    /// The tool's path: `command` itself if it has a slash, else the first match in `PATH`.
    public static func locate(_ command: String) -> String? {
        if command.contains("/") { return FileManager.default.isExecutableFile(atPath: command) ? command : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// A tool's process (``studybus_spawn_tool``): the leader of a process group of its own, with
/// its standard output and error on pipes, standard input empty, resource limits set before it
/// runs, and a clean signal state.
public final class SpawnedProcess: Sendable {
    public enum Ending: Sendable {
        case exited(Int32)
        case signalled(Int32)
        /// Killed by ``kill()`` (cancellation) or for writing too much.
        case killed
        case timedOut
    }

    public struct Outcome: Sendable {
        public var ending: Ending
        public var output: Data
        public var errorOutput: String
        public var outputTooLarge = false
        /// CPU time the process used (user and system).
        public var cpuSeconds = 0.0
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let code: Int32
        public var description: String { String(cString: strerror(code)) }
    }

    public let pid: pid_t
    private let outputFD: Int32
    private let errorFD: Int32
    /// Whether the process was reaped (then its pid may belong to another process) or killed.
    private let state = Mutex<(reaped: Bool, killed: Bool)>((false, false))

    /// Starts `executable` with exactly `environment` in `directory`, within `limits`.
    public init(executable: String, arguments: [String], environment: [String], directory: String, limits: ToolLimits) throws(SpawnError) {
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        // Close-on-exec, so that a tool another job starts meanwhile does not inherit their write
        // ends (this tool's end of file would wait for that one to exit).
        var status = studybus_pipe_cloexec(&output)
        guard status == 0 else { throw SpawnError(code: status) }
        status = studybus_pipe_cloexec(&errors)
        guard status == 0 else {
            close(output[0]); close(output[1])
            throw SpawnError(code: status)
        }
        let cLimits = studybus_tool_limits(
            address_space: UInt64(limits.memoryBytes), cpu_seconds: UInt64(limits.cpuSeconds), file_size: UInt64(limits.fileBytes),
            open_files: UInt64(limits.openFiles))
        var pid: pid_t = 0
        status = studybus_spawn_tool(executable, argv, envp, directory, output[1], errors[1], cLimits, &pid)
        close(output[1])
        close(errors[1])
        guard status == 0 else {
            close(output[0]); close(errors[0])
            throw SpawnError(code: status)
        }
        self.pid = pid
        outputFD = output[0]
        errorFD = errors[0]
    }

    /// Kills the process and everything it started (SIGKILL to its process group) unless it was
    /// already reaped.
    public func kill() {
        state.withLock { state in
            guard !state.reaped else { return }
            state.killed = true
            _ = Glibc.kill(-pid, SIGKILL)
        }
    }

    /// ``collect(timeout:maximumOutput:)`` on a thread of its own (`threadName`), never on
    /// Swift's cooperative pool; cancelling the task kills the process.
    public func outcome(timeout: Duration, maximumOutput: Int, threadName: String) async -> Outcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                startThread(named: threadName) {
                    continuation.resume(returning: self.collect(timeout: timeout, maximumOutput: maximumOutput))
                }
            }
        } onCancel: {
            kill()
        }
    }

    /// Reads both pipes until the process closes them, killing it at `timeout` or when it writes
    /// more than `maximumOutput`; then kills what it left running in its group and reaps it.
    /// Blocks: call on a thread of its own.
    public func collect(timeout: Duration, maximumOutput: Int) -> Outcome {
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
                        if output.count + count > maximumOutput {
                            if !tooLarge { kill() }
                            tooLarge = true
                        } else {
                            output.append(contentsOf: buffer[0..<count])
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
        // Until the leader is reaped its pid names the group: wait without reaping, stop what
        // it left behind, then reap.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
        _ = Glibc.kill(-pid, SIGKILL)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
        let killed = state.withLock { state in
            state.reaped = true
            return state.killed
        }
        let signal = status & 0x7F
        let ending: Ending = if timedOut { .timedOut } else if killed { .killed } else if signal != 0 { .signalled(signal) } else { .exited((status >> 8) & 0xFF) }
        let cpuSeconds = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
        return Outcome(
            ending: ending, output: output, errorOutput: String(decoding: errorOutput, as: UTF8.self), outputTooLarge: tooLarge,
            cpuSeconds: cpuSeconds)
    }
}
