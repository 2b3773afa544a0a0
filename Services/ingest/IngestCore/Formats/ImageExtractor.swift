import Bus
import Contracts
import Foundation
import Wire

/// PNG and JPEG: text by OCR, with `tesseract` (Debian packages tesseract-ocr and
/// tesseract-ocr-eng, plus tesseract-ocr-LANG for `INGEST_OCR_LANGUAGES`) as a subprocess.
enum ImageExtractor {
    static let tool = ExternalTool(command: "tesseract", package: "tesseract-ocr", variable: "INGEST_TESSERACT")

    static func extract(_ data: Data, format: IngestFormat, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let path = try Extraction.scratchFile(data, named: "input.\(format.rawValue)", in: context)
        return try await read(path, fileName: fileName, context: context)
    }

    /// The one-page document of the text tesseract reads in the image at `path` (also a decoded HEIC's).
    /// - Throws: `INVALID_ARGUMENT` when it reads none.
    static func read(_ path: String, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let output = try await recognize(path, fileName: fileName, context: context)
        var builder = DocumentBuilder()
        builder.page = 1
        builder.document.pageCount = 1
        builder.laidOutText(Array(output))
        guard !builder.document.isBlank else {
            throw .invalidArgument("OCR found no text in the image '\(fileName)'; upload a sharper, well-lit image with the text upright")
        }
        return builder.build()
    }

    /// The text tesseract reads in the image at `path` (its lines and blank lines as it writes them).
    static func recognize(_ path: String, fileName: String, context: ExtractionContext) async throws(BusError) -> Data {
        var tesseract = tool
        tesseract.command = context.tools.tesseract
        do throws(BusError) {
            return try await ToolRunner.run(
                tesseract, arguments: [path, "stdout", "-l", context.tools.ocrLanguages], settings: context.tools, directory: context.scratch,
                budget: context.budget, file: fileName)
        } catch where error.code == .invalidArgument {
            if error.message.contains("Failed loading language") {
                throw .failedPrecondition(
                    "OCR languages '\(context.tools.ocrLanguages)' are not installed on this ingest worker: install tesseract-ocr-<lang> for each (INGEST_OCR_LANGUAGES)")
            }
            throw .invalidArgument("the image '\(fileName)' is damaged or truncated and cannot be read; upload the complete file. \(error.message)")
        }
    }
}
