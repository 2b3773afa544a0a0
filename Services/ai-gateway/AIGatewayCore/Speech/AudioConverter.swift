import Bus
import Foundation
import ToolProcess
import Wire

/// ffmpeg (Debian package ffmpeg) as a subprocess, for encoding and decoding only: uploaded audio
/// of any format to the 16 kHz mono samples the offline recognizer reads, and WAV to Ogg/Opus.
/// Each run has a time limit, resource limits, an empty environment, a scratch folder of its
/// own, reads only local files (`-protocol_whitelist file`: a playlist in an upload cannot make
/// it fetch URLs) and may write at most what the caller expects.
struct AudioConverter: Sendable {
    /// `ffmpeg`, or a path (`AI_FFMPEG`).
    var command = "ffmpeg"
    /// The longest one run may take (`AI_FFMPEG_TIMEOUT_SECONDS`).
    var timeout: Duration = .seconds(30)
    var limits = ToolLimits(memoryBytes: 512 * 1024 * 1024, cpuSeconds: 60, fileBytes: 64 * 1024 * 1024, openFiles: 64)

    /// `audio` as 16-bit mono samples at `sampleRate`, at most `maximumSeconds` of them.
    /// - Throws: `INVALID_ARGUMENT` when ffmpeg cannot read it or it is longer than
    ///   `maximumSeconds`, `DEADLINE_EXCEEDED`, `FAILED_PRECONDITION` without ffmpeg.
    func samples(of audio: Data, sampleRate: Int, maximumSeconds: Double, deadline: ContinuousClock.Instant) async throws(BusError) -> [Int16] {
        let maximumBytes = Int(maximumSeconds * Double(sampleRate)) * 2
        let output = try await run(input: audio, inputName: "upload", arguments: [
            "-vn", "-ac", "1", "-ar", String(sampleRate), "-acodec", "pcm_s16le", "-f", "s16le", "-",
        ], maximumOutput: maximumBytes, deadline: deadline,
            tooLarge: { Field.invalid("attachment", "must be at most \(Int(maximumSeconds)) s of audio for offline transcription") },
            failed: { Field.invalid("attachment", "must be audio ffmpeg can read: \($0)") })
        return WAV.samples(fromPCM: output)
    }

    /// A WAV as Opus in an Ogg container (32 kbit/s, speech).
    func opus(fromWAV wav: Data, deadline: ContinuousClock.Instant) async throws(BusError) -> Data {
        try await run(input: wav, inputName: "speech.wav", arguments: [
            "-c:a", "libopus", "-b:a", "32k", "-application", "voip", "-f", "ogg", "-",
        ], maximumOutput: wav.count + 65_536, deadline: deadline,
            tooLarge: { .internal("ffmpeg wrote more Opus than the WAV it encoded") },
            failed: { .failedPrecondition("ffmpeg could not encode Opus (its libopus encoder): \($0)") })
    }

    private func run(
        input: Data, inputName: String, arguments: [String], maximumOutput: Int, deadline: ContinuousClock.Instant, tooLarge: () -> BusError,
        failed: (String) -> BusError
    ) async throws(BusError) -> Data {
        guard let executable = ToolPath.locate(command) else {
            throw .failedPrecondition("ffmpeg is not installed on this ai-gateway: install the Debian package ffmpeg (apt-get install ffmpeg) or set AI_FFMPEG")
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "ai-gateway-audio-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let process: SpawnedProcess
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try input.write(to: directory.appending(path: inputName))
            process = try SpawnedProcess(
                executable: executable,
                arguments: ["-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file", "-i", inputName] + arguments,
                environment: ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=\(directory.path)", "TMPDIR=\(directory.path)"],
                directory: directory.path, limits: limits)
        } catch {
            throw .failedPrecondition("cannot start \(executable): \(error); check AI_FFMPEG")
        }
        let timeout = min(self.timeout, max(.zero, deadline - .now))
        let outcome = await process.outcome(timeout: timeout, maximumOutput: maximumOutput, threadName: "ai-ffmpeg")
        switch outcome.ending {
        case .exited(0):
            return outcome.output
        case .killed where outcome.outputTooLarge:
            throw tooLarge()
        case .timedOut:
            throw .deadlineExceeded("ffmpeg took longer than \(timeout) and was stopped (AI_FFMPEG_TIMEOUT_SECONDS, or the request's deadline)")
        case .killed:
            throw .cancelled("ffmpeg was stopped: the request was cancelled")
        case .exited, .signalled:
            let message = outcome.errorOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            throw failed(message.isEmpty ? "no message" : String(message.suffix(300)))
        }
    }
}
