import Bus
import Contracts
import Foundation
import ToolProcess
import Wire

/// A recording's length and where it is silent, read by ffmpeg in one decoding pass.
struct RecordingAnalysis: Sendable, Equatable {
    var duration: Double
    /// Silent stretches, in order, within 0…duration.
    var silences: [ClosedRange<Double>]
}

/// One piece of a recording, cut by ffmpeg into the job's scratch folder.
struct RecordingPiece: Sendable, Equatable {
    var file: URL
    /// Where the piece begins and ends in the whole recording, in seconds.
    var start: Double
    var end: Double
}

/// Splits long recordings for transcription: finds the silences (ffmpeg's `silencedetect`),
/// chooses cuts in them so that every piece is at most ``RecordingSettings/pieceSeconds`` long,
/// and cuts the pieces in one more pass, as 16 kHz mono MP3 at 32 kbps — what speech
/// recognizers work at, 4 KB a second, so a piece of 300 s is 1.2 MB, far under every provider's
/// upload limit and ai-gateway's 5 MiB.
enum RecordingSplitter {
    static let tool = ExternalTool(command: "ffmpeg", package: "ffmpeg", variable: "INGEST_FFMPEG")

    /// Decoding with ffmpeg, per second of recording: the tool's time and CPU limits grow by this,
    /// so that a three-hour lecture gets the minutes it needs and a tool stuck on a short one does not.
    static let toolSecondsPerRecordingSecond = 0.05

    /// Reads the recording at `file` up to `settings.maximumSeconds` (and one second more, to
    /// see that it is longer).
    /// - Throws: `INVALID_ARGUMENT` for a file ffmpeg cannot decode, or a recording longer than the
    ///   limit; `FAILED_PRECONDITION` without ffmpeg.
    static func analyze(_ file: String, fileName: String, context: ExtractionContext) async throws(BusError) -> RecordingAnalysis {
        let settings = context.recordings
        let progress = context.scratch.appending(path: "\(UUID().uuidString)-analysis.txt")
        let output = try await ToolRunner.run(
            ffmpeg(context), arguments: [
                "-nostdin", "-hide_banner", "-loglevel", "error", "-t", String(settings.maximumSeconds + 1), "-i", file, "-vn", "-ac", "1",
                "-ar", "16000", "-af", "silencedetect=n=\(settings.silenceDecibels)dB:d=\(settings.minimumSilenceSeconds),ametadata=mode=print:file=-",
                "-progress", progress.path, "-stats_period", "86400", "-f", "null", "-",
            ],
            settings: toolSettings(context.tools, seconds: settings.maximumSeconds), directory: context.scratch, budget: context.budget, file: fileName)
        let duration = (try? String(contentsOf: progress, encoding: .utf8)).flatMap(decodedSeconds) ?? 0
        guard duration > 0 else { throw .invalidArgument("'\(fileName)' holds no audio that ffmpeg can decode") }
        guard duration <= settings.maximumSeconds else {
            throw .invalidArgument(
                "'\(fileName)' is longer than \(spoken(settings.maximumSeconds)), the longest recording ingest transcribes (INGEST_AUDIO_MAX_MINUTES); split it")
        }
        return RecordingAnalysis(duration: duration, silences: silences(in: String(decoding: output, as: UTF8.self), duration: duration))
    }

    /// "180 minutes", or "5 seconds" for a limit of less than a minute.
    private static func spoken(_ seconds: Double) -> String {
        seconds >= 60 ? "\(Int(seconds / 60)) minutes" : "\(Int(seconds)) seconds"
    }

    /// The last `out_time_us` of ffmpeg's progress file: how much it decoded.
    static func decodedSeconds(_ progress: String) -> Double? {
        let last = progress.split(separator: "\n").last { $0.hasPrefix("out_time_us=") }
        guard let value = last.flatMap({ Int64($0.dropFirst("out_time_us=".count)) }), value > 0 else { return nil }
        return Double(value) / 1_000_000
    }

    /// The silences of `silencedetect`'s metadata lines (`lavfi.silence_start=…`,
    /// `lavfi.silence_end=…`), kept to 0…duration; one still open at the end closes there.
    static func silences(in metadata: String, duration: Double) -> [ClosedRange<Double>] {
        var silences: [ClosedRange<Double>] = []
        var start: Double?
        func seconds(_ line: Substring, after key: String) -> Double? {
            guard let value = Double(line.dropFirst(key.count)), value.isFinite else { return nil }
            return min(max(value, 0), duration)
        }
        for line in metadata.split(separator: "\n") {
            if line.hasPrefix("lavfi.silence_start=") {
                start = seconds(line, after: "lavfi.silence_start=")
            } else if line.hasPrefix("lavfi.silence_end="), let begin = start, let end = seconds(line, after: "lavfi.silence_end=") {
                // In order and not overlapping, whatever the lines say.
                let from = max(begin, silences.last?.upperBound ?? 0)
                if end > from { silences.append(from...end) }
                start = nil
            }
        }
        if let begin = start, begin < duration, begin >= (silences.last?.upperBound ?? 0) { silences.append(begin...duration) }
        return silences
    }

    /// Where to cut: at the middle of the latest silence that leaves a piece between half of
    /// `pieceSeconds` and `pieceSeconds` long; where no silence is, after `pieceSeconds`.
    static func cuts(_ analysis: RecordingAnalysis, pieceSeconds: Double) -> [Double] {
        var cuts: [Double] = []
        var pieceStart = 0.0
        var next = analysis.silences.startIndex
        while analysis.duration - pieceStart > pieceSeconds {
            let latest = pieceStart + pieceSeconds, earliest = pieceStart + pieceSeconds / 2
            var cut = latest
            while next < analysis.silences.endIndex {
                let middle = (analysis.silences[next].lowerBound + analysis.silences[next].upperBound) / 2
                if middle > latest { break }
                if middle > earliest { cut = middle }
                next += 1
            }
            cuts.append(cut)
            pieceStart = cut
        }
        return cuts
    }

    /// Cuts the recording at `file` at `cuts` into MP3 pieces in the scratch folder.
    /// - Throws: `INVALID_ARGUMENT` when ffmpeg fails on the file, `INTERNAL` when its list of
    ///   pieces is not what was asked.
    static func cut(_ file: String, fileName: String, at cuts: [Double], duration: Double, context: ExtractionContext) async throws(BusError) -> [RecordingPiece] {
        let folder = context.scratch.appending(path: "pieces-\(UUID().uuidString)")
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw .internal("cannot make a scratch folder for the job: \(error.localizedDescription)")
        }
        var arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-i", file, "-vn", "-ac", "1", "-ar", "16000", "-c:a", "libmp3lame", "-b:a", "32k"]
        arguments += ["-f", "segment", "-reset_timestamps", "1", "-segment_list", "pieces.csv", "-segment_list_type", "csv"]
        if !cuts.isEmpty { arguments += ["-segment_times", cuts.map { String(format: "%.3f", $0) }.joined(separator: ",")] }
        arguments.append("piece%05d.mp3")
        _ = try await ToolRunner.run(
            ffmpeg(context), arguments: arguments, settings: toolSettings(context.tools, seconds: duration), directory: folder,
            budget: context.budget, file: fileName)
        let list = (try? String(contentsOf: folder.appending(path: "pieces.csv"), encoding: .utf8)) ?? ""
        let pieces = list.split(separator: "\n").compactMap { line -> RecordingPiece? in
            let fields = line.split(separator: ",")
            guard fields.count == 3, fields[0].hasPrefix("piece"), !fields[0].contains("/"),
                  let start = Double(fields[1]), let end = Double(fields[2]), start.isFinite, end.isFinite else { return nil }
            return RecordingPiece(file: folder.appending(path: String(fields[0])), start: max(0, start), end: max(start, end))
        }
        guard !pieces.isEmpty, pieces.count <= cuts.count + 1 else {
            throw .internal("ffmpeg cut '\(fileName)' into \(pieces.count) pieces where \(cuts.count + 1) were asked")
        }
        return pieces
    }

    private static func ffmpeg(_ context: ExtractionContext) -> ExternalTool {
        var ffmpeg = tool
        ffmpeg.command = context.tools.ffmpeg
        return ffmpeg
    }

    /// The tool settings for decoding `seconds` of recording: time and CPU grown with its length.
    private static func toolSettings(_ tools: ToolSettings, seconds: Double) -> ToolSettings {
        var settings = tools
        let extra = Int((seconds * toolSecondsPerRecordingSecond).rounded(.up))
        settings.timeout += .seconds(extra)
        settings.limits.cpuSeconds += extra
        return settings
    }
}
