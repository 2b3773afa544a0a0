import Bus
import Contracts
import Foundation
import Wire

/// What extractors may need beyond the file: the external tools, a scratch folder, and
/// transcription through ai-gateway (audio, also inside e-mails).
struct ExtractionContext: Sendable {
    var tools: ToolSettings
    /// A folder of the job's own for files handed to tools; removed when the job ends.
    var scratch: URL
    /// Transcribes audio (bytes, file name, media type).
    var transcribe: @Sendable (Data, String, String?) async throws(BusError) -> TranscribeResponse
    /// The job's cancellation and what it may still unpack, shared by everything it extracts.
    var budget: ExtractionBudget
    /// How deep in attached e-mails this file is (attachments of attachments are read to depth 3).
    var depth = 0
    /// How recordings are split and transcribed.
    var recordings = RecordingSettings()
    /// Gives the job more time: a recording's, once its length is known.
    var extendDeadline: @Sendable (Duration) -> Void = { _ in }
    /// Says how many of a recording's pieces are transcribed (progress events).
    var transcribed: @Sendable (_ pieces: Int, _ of: Int) -> Void = { _, _ in }
}

/// Turns a file of a known format into an ``ExtractedDocument``. Parsing runs on a dispatch
/// queue, tools on threads of their own: never long on Swift's cooperative pool. Every parser is
/// linear in its input, nests to a bounded depth, and stops at its budget's next checkpoint once
/// the job is cancelled.
enum Extraction {
    /// The document in `data`, a file of `format` called `fileName`; text formats are read in
    /// `charset` when its media type named one.
    /// - Throws: `INVALID_ARGUMENT` for a file that cannot be read (damaged, truncated, no text),
    ///   `FAILED_PRECONDITION` when a tool or a transcription provider is missing,
    ///   `DEADLINE_EXCEEDED` when a tool ran out of time.
    static func extract(
        _ format: IngestFormat, _ data: Data, fileName: String, charset: String? = nil, context: ExtractionContext
    ) async throws(BusError) -> ExtractedDocument {
        let document: ExtractedDocument
        let budget = context.budget
        switch format {
        case .txt:
            document = try await offThePool(cancelling: budget) { () throws(BusError) in
                let text = TextDecoding.decode(data, charset: charset)
                return try FlashcardTableExtractor.isAnkiExport(text)
                    ? FlashcardTableExtractor.extract(text, delimiter: nil, fileName: fileName, budget: budget)
                    : PlainTextExtractor.extract(text, budget: budget)
            }
        case .md: document = try await offThePool(cancelling: budget) { () throws(BusError) in try MarkdownExtractor.extract(TextDecoding.decode(data, charset: charset), budget: budget) }
        case .html: document = try await offThePool(cancelling: budget) { () throws(BusError) in try HTMLExtractor.extract(data, charset: charset, budget: budget) }
        case .csv, .tsv:
            document = try await offThePool(cancelling: budget) { () throws(BusError) in
                try FlashcardTableExtractor.extract(TextDecoding.decode(data, charset: charset), delimiter: format == .tsv ? 0x09 : nil, fileName: fileName, budget: budget)
            }
        case .srt, .vtt: document = try await offThePool(cancelling: budget) { () throws(BusError) in try SubtitleExtractor.extract(TextDecoding.decode(data, charset: charset), fileName: fileName, budget: budget) }
        case .ics: document = try await offThePool(cancelling: budget) { () throws(BusError) in try CalendarExtractor.extract(TextDecoding.decode(data, charset: charset), fileName: fileName, budget: budget) }
        case .docx, .odt, .epub, .pptx:
            // Zips: ZIPFoundation reads the directory from a scratch copy (``ZipPackage``).
            let file = URL(filePath: try scratchFile(data, named: "document.\(format.rawValue)", in: context))
            document = try await offThePool(cancelling: budget) { () throws(BusError) in
                switch format {
                case .odt: try ODTExtractor.extract(data, file: file, fileName: fileName, budget: budget)
                case .epub: try EPUBExtractor.extract(data, file: file, fileName: fileName, budget: budget)
                case .pptx: try PPTXExtractor.extract(data, file: file, fileName: fileName, budget: budget)
                default: try DOCXExtractor.extract(data, file: file, fileName: fileName, budget: budget)
                }
            }
        case .doc, .ppt, .rtf: document = try await LegacyOfficeExtractor.extract(data, format: format, fileName: fileName, context: context)
        case .heic: document = try await HEICExtractor.extract(data, fileName: fileName, context: context)
        case .pdf: document = try await PDFExtractor.extract(data, fileName: fileName, context: context)
        case .png, .jpeg: document = try await ImageExtractor.extract(data, format: format, fileName: fileName, context: context)
        case .wav, .mp3, .m4a: document = try await AudioExtractor.extract(data, fileName: fileName, context: context)
        case .eml: document = try await EmailExtractor.extract(data, fileName: fileName, context: context)
        }
        guard !document.isBlank || !document.calendar.isEmpty else {
            throw .invalidArgument("no text found in '\(fileName)'; check that it is the right file and not empty inside")
        }
        return document
    }

    /// Writes `data` into the scratch folder for a tool to read; returns the path.
    static func scratchFile(_ data: Data, named name: String, in context: ExtractionContext) throws(BusError) -> String {
        let url = context.scratch.appending(path: "\(UUID().uuidString)-\(name)")
        do {
            try FileManager.default.createDirectory(at: context.scratch, withIntermediateDirectories: true)
            try data.write(to: url)
        } catch {
            throw .internal("cannot write a scratch file for the job: \(error.localizedDescription)")
        }
        return url.path
    }
}
