import Bus
import CToolSpawn
import Foundation
import Glibc
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

/// Runs external tools as subprocesses: with a time limit (the process group is killed when it
/// runs over, or when the job is cancelled), resource limits (``ToolLimits``), an environment of
/// its own (nothing of the worker's: no credentials reach a tool), in the job's scratch folder;
/// standard output collected up to what the job may still take (``ExtractionBudget``), standard
/// error kept for the error message. Waiting happens on a thread of its own, never on Swift's
/// cooperative pool.
enum ToolRunner {
    /// Runs `tool` with `arguments` in `directory`; returns its standard output, taken from the
    /// job's `budget`.
    /// - Throws: `FAILED_PRECONDITION` if the tool is not installed, `DEADLINE_EXCEEDED` if it ran
    ///   out of time (wall or CPU), `INVALID_ARGUMENT` when it failed on the file (its standard
    ///   error quoted), wrote too much or too large a file, `CANCELLED` if the job was cancelled.
    static func run(
        _ tool: ExternalTool, arguments: [String], settings: ToolSettings, directory: URL, budget: ExtractionBudget, file: String
    ) async throws(BusError) -> Data {
        guard let executable = locate(tool.command) else {
            throw .failedPrecondition(
                "\(tool.command) is not installed on this ingest worker: install the Debian package \(tool.package) (apt-get install \(tool.package)) or set \(tool.variable)")
        }
        try budget.checkpoint()
        let process: SpawnedProcess
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            process = try SpawnedProcess(
                executable: executable, arguments: arguments, environment: environment(directory: directory), directory: directory.path,
                limits: settings.limits)
        } catch {
            throw .failedPrecondition("cannot start \(executable): \(error); check \(tool.variable)")
        }
        let maximumOutput = budget.remaining
        let timeout = settings.timeout
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
        let tooMuchText = BusError.invalidArgument(
            "\(name) wrote more than \(mebibytes(maximumOutput)) of text for '\(file)', more than this file may expand to (INGEST_MAX_COMPRESSION_RATIO times its size, at most INGEST_MAX_INFLATED_MB); split the file")
        let tooMuchCPU = BusError.deadlineExceeded(
            "\(name) used more than \(settings.limits.cpuSeconds) s of CPU time on '\(file)' and was stopped (INGEST_TOOL_CPU_SECONDS); try a smaller file")
        switch outcome.ending {
        case .exited(0):
            guard budget.take(outcome.output.count) else { throw tooMuchText }
            return outcome.output
        case .killed where outcome.outputTooLarge:
            throw tooMuchText
        case .timedOut:
            throw .deadlineExceeded("\(name) took longer than \(timeout) on '\(file)' and was stopped (INGEST_TOOL_TIMEOUT_SECONDS); try a smaller file")
        case .killed:
            throw .cancelled("\(name) was stopped: the job was cancelled")
        case .signalled(SIGXCPU):
            throw tooMuchCPU
        case .signalled(SIGKILL) where outcome.cpuSeconds >= Double(settings.limits.cpuSeconds):
            // A tool that handles SIGXCPU gets SIGKILL at the hard limit, five seconds later.
            throw tooMuchCPU
        case .signalled(SIGXFSZ):
            throw .invalidArgument(
                "\(name) would write a file larger than \(mebibytes(settings.limits.fileBytes)) for '\(file)' and was stopped (INGEST_TOOL_MAX_FILE_MB); try a smaller file")
        case .exited(let status), .signalled(let status):
            let stderr = outcome.errorOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            var what = if case .signalled = outcome.ending { "killed by signal \(status)" } else { "exit status \(status)" }
            // Under RLIMIT_AS an allocation fails: tools then say so, or abort.
            if case .signalled = outcome.ending { what += "; a tool may use \(mebibytes(settings.limits.memoryBytes)) of memory, INGEST_TOOL_MEMORY_MB" }
            else if stderr.range(of: "memory|alloc", options: [.regularExpression, .caseInsensitive]) != nil {
                what += "; a tool may use \(mebibytes(settings.limits.memoryBytes)) of memory, INGEST_TOOL_MEMORY_MB"
            }
            throw .invalidArgument("\(name) could not read '\(file)' (\(what)): \(stderr.isEmpty ? "no message" : String(stderr.suffix(400)))")
        }
    }

    /// A tool's whole environment: a fixed `PATH`, a UTF-8 locale, its scratch folder as home and
    /// temporary directory, one OpenMP thread (tesseract: one job, one core; less memory), and
    /// `TESSDATA_PREFIX` if the worker has one (where tesseract's languages are). Nothing else
    /// of the worker's environment, which holds its settings and maybe credentials.
    static func environment(directory: URL) -> [String] {
        var variables = [
            "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "HOME=\(directory.path)", "TMPDIR=\(directory.path)",
            "OMP_THREAD_LIMIT=1",
        ]
        if let data = ProcessInfo.processInfo.environment["TESSDATA_PREFIX"] { variables.append("TESSDATA_PREFIX=\(data)") }
        return variables
    }

    private static func mebibytes(_ bytes: Int) -> String {
        bytes >= 1024 * 1024 ? "\(bytes / 1024 / 1024) MiB" : "\(bytes) bytes"
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

/// A tool's process (``studybus_spawn_tool``): the leader of a process group of its own, with
/// its standard output and error on pipes, standard input empty, resource limits set before it
/// runs, and a clean signal state.
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
        /// CPU time the process used (user and system).
        var cpuSeconds = 0.0
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

    /// Starts `executable` with exactly `environment` in `directory`, within `limits`.
    init(executable: String, arguments: [String], environment: [String], directory: String, limits: ToolLimits) throws(SpawnError) {
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
    func kill() {
        state.withLock { state in
            guard !state.reaped else { return }
            state.killed = true
            _ = Glibc.kill(-pid, SIGKILL)
        }
    }

    /// Reads both pipes until the process closes them, killing it at `timeout` or when it writes
    /// more than `maximumOutput`; then kills what it left running in its group and reaps it.
    /// Blocks: call on a thread of its own.
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
