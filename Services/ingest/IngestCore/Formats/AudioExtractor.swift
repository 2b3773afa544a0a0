import Bus
import Contracts
import Foundation
import Wire

/// WAV, MP3, M4A: transcribed by ai-gateway's `transcribe` (Whisper-compatible, or offline);
/// each segment becomes a timed cue, so chunks carry start and end seconds.
enum AudioExtractor {
    static func extract(_ data: Data, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let transcript = try await context.transcribe(data, fileName, nil)
        var builder = DocumentBuilder()
        // The provider's numbers are outside numbers too: kept to a recording's range.
        let duration = transcript.duration > 0 ? transcript.duration : transcript.segments.last?.end
        builder.document.durationSeconds = duration.flatMap(DocumentValues.mediaSeconds)
        builder.document.language = transcript.language.flatMap { $0.isEmpty ? nil : String($0.prefix(35)) }
        if transcript.segments.isEmpty {
            builder.cue(transcript.text, start: 0, end: transcript.duration)
        } else {
            for segment in transcript.segments { builder.cue(segment.text, start: segment.start, end: segment.end) }
        }
        let document = builder.build()
        guard !document.isBlank else {
            throw .invalidArgument("no speech was recognized in '\(fileName)'; check that the recording has audible speech")
        }
        return document
    }
}
