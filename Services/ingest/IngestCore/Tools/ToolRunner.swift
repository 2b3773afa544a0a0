import Bus
import Foundation
import Glibc
import ToolProcess
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
        guard let executable = ToolPath.locate(tool.command) else {
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
        let outcome = await process.outcome(timeout: timeout, maximumOutput: maximumOutput, threadName: "ingest-tool")
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
}
