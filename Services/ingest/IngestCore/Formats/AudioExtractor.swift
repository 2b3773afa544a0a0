import Bus
import Contracts
import Foundation
import Wire

/// WAV, MP3, M4A and the recordings of e-mails: transcribed by ai-gateway's `transcribe`
/// (Whisper-compatible, or offline); each segment becomes a timed cue, so chunks carry start and
/// end seconds as subtitles do.
///
/// A short clip (within ``RecordingSettings/pieceSeconds`` and ai-gateway's 5 MiB) goes whole. A
/// lecture is split at its silences (``RecordingSplitter``) and its pieces are transcribed
/// ``RecordingSettings/concurrency`` at a time; each piece's segments are moved to where the
/// piece begins. The job gets time for the recording's length
/// (``RecordingSettings/jobTimePerMinute``) and reports each piece done.
enum AudioExtractor {
    static func extract(_ data: Data, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let file = try Extraction.scratchFile(data, named: "recording", in: context)
        let analysis = try await RecordingSplitter.analyze(file, fileName: fileName, context: context)
        context.extendDeadline(context.recordings.jobTimePerMinute * (analysis.duration / 60))
        var builder = DocumentBuilder()
        let language: String?
        if analysis.duration <= context.recordings.pieceSeconds, data.count <= AIGatewayLimits.audioBytes {
            let transcript = try await context.transcribe(data, fileName, nil)
            // The provider's numbers are outside numbers too: kept to a recording's range.
            let duration = transcript.duration > 0 ? transcript.duration : transcript.segments.last?.end
            builder.document.durationSeconds = duration.flatMap(DocumentValues.mediaSeconds)
            language = transcript.language
            add(transcript, from: 0, to: .infinity, to: &builder)
        } else {
            let cuts = RecordingSplitter.cuts(analysis, pieceSeconds: context.recordings.pieceSeconds)
            let pieces = try await RecordingSplitter.cut(file, fileName: fileName, at: cuts, duration: analysis.duration, context: context)
            let transcripts = try await transcribe(pieces, fileName: fileName, context: context)
            builder.document.durationSeconds = DocumentValues.mediaSeconds(analysis.duration)
            language = transcripts.lazy.compactMap(\.language).first { !$0.isEmpty }
            for (piece, transcript) in zip(pieces, transcripts) { add(transcript, from: piece.start, to: piece.end, to: &builder) }
        }
        builder.document.language = language.flatMap { $0.isEmpty ? nil : String($0.prefix(35)) }
        let document = builder.build()
        guard !document.isBlank else {
            throw .invalidArgument("no speech was recognized in '\(fileName)'; check that the recording has audible speech")
        }
        return document
    }

    /// The transcript's segments as cues, moved to `start` and kept within the piece (a provider's
    /// times are outside numbers: a segment past the piece's end ends there).
    private static func add(_ transcript: TranscribeResponse, from start: Double, to end: Double, to builder: inout DocumentBuilder) {
        let length = end - start
        func clamped(_ seconds: Double) -> Double { start + min(max(seconds.isFinite ? seconds : 0, 0), length) }
        if transcript.segments.isEmpty {
            builder.cue(transcript.text, start: start, end: clamped(transcript.duration))
        } else {
            for segment in transcript.segments { builder.cue(segment.text, start: clamped(segment.start), end: clamped(segment.end)) }
        }
    }

    /// Transcribes the pieces, `concurrency` at a time; the transcripts in the pieces' order. The
    /// first failure stops the others (their calls are cancelled) and fails the recording.
    private static func transcribe(_ pieces: [RecordingPiece], fileName: String, context: ExtractionContext) async throws(BusError) -> [TranscribeResponse] {
        let stem = URL(fileURLWithPath: fileName).deletingPathExtension().lastPathComponent
        let width = String(pieces.count).count
        do {
            return try await withThrowingTaskGroup(of: (Int, TranscribeResponse).self) { group in
                var transcripts = [TranscribeResponse?](repeating: nil, count: pieces.count)
                var started = 0, done = 0
                func startNext() {
                    let index = started
                    started += 1
                    group.addTask {
                        let audio: Data
                        do { audio = try Data(contentsOf: pieces[index].file) } catch {
                            throw BusError.internal("cannot read piece \(index + 1) of '\(fileName)' from the scratch folder: \(error.localizedDescription)")
                        }
                        guard audio.count <= AIGatewayLimits.audioBytes else {
                            throw BusError.internal("piece \(index + 1) of '\(fileName)' has \(audio.count) bytes, more than transcribe takes")
                        }
                        let number = String(repeating: "0", count: width - String(index + 1).count) + String(index + 1)
                        return (index, try await context.transcribe(audio, "\(stem)-part\(number).mp3", "audio/mpeg"))
                    }
                }
                while started < min(context.recordings.concurrency, pieces.count) { startNext() }
                while let (index, transcript) = try await group.next() {
                    transcripts[index] = transcript
                    done += 1
                    context.transcribed(done, pieces.count)
                    if started < pieces.count { startNext() }
                }
                return transcripts.compactMap { $0 }
            }
        } catch let error as BusError {
            throw error
        } catch {
            throw .cancelled("the transcription of '\(fileName)' was cancelled")
        }
    }
}
