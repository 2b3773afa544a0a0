import Contracts
import Foundation
import Wire

/// Reads a document as a job does — extraction, chunking, and the encoding of what the job
/// sends the store — without tools, providers or the bus. It is the entry point of the ingest
/// fuzzer (Fuzz/IngestFuzz), which must reach every parser and the encoder behind it.
package enum DocumentProbe {
    /// The formats read by parsers of our own (no external tool).
    package static let formats: [IngestFormat] = [.txt, .md, .html, .csv, .tsv, .srt, .vtt, .ics, .docx, .odt, .epub, .pptx, .eml]

    /// The encoded chunks, tasks and sessions of `data` read as `format`, or the job's error.
    /// Tools are unreachable and transcription refuses, as a worker without them would.
    package static func read(_ format: IngestFormat, _ data: Data, scratch: URL) async throws(BusError) -> Data {
        let folder = scratch.appending(path: UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: folder) }
        let context = ExtractionContext(
            tools: ToolSettings(
                pdftotext: "/nonexistent/pdftotext", pdftoppm: "/nonexistent/pdftoppm", tesseract: "/nonexistent/tesseract", catdoc: "/nonexistent/catdoc",
                catppt: "/nonexistent/catppt", heifConvert: "/nonexistent/heif-convert", ffmpeg: "/nonexistent/ffmpeg"),
            scratch: folder,
            transcribe: { _, _, _ throws(BusError) in throw .failedPrecondition("no transcription while probing") },
            budget: ExtractionBudget(expansionAllowance: 64 << 20, compressionRatio: 100))
        let document = try await Extraction.extract(format, data, fileName: "probe.\(format.rawValue)", context: context)
        let chunks = try Chunker.chunks(of: document, settings: ChunkingSettings())
        let material = "00000000-0000-4000-8000-000000000000"
        let put = MaterialPut(
            materialId: material, sourceDocument: SourceDocumentInput(title: "probe", pageCount: document.pageCount),
            chunks: Pipeline.chunkInputs(chunks),
            tasks: Pipeline.calendarTasks(document.calendar, material: material),
            sessions: Pipeline.calendarSessions(document.calendar, material: material))
        do {
            return try WireCoding.encode(put)
        } catch {
            throw .internal("the document's put does not encode: \(error)")
        }
    }
}
