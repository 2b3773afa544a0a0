import Bus
import Foundation

/// PDF: the text of each page with its page number, by poppler's `pdftotext` (Debian package
/// poppler-utils) as a subprocess. Pages end with a form feed in its output; a page's lines are
/// joined back into paragraphs (blank lines separate them), hyphenated words made whole.
enum PDFExtractor {
    static let tool = ExternalTool(command: "pdftotext", package: "poppler-utils", variable: "INGEST_PDFTOTEXT")

    static func extract(_ data: Data, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let path = try Extraction.scratchFile(data, named: "input.pdf", in: context)
        var pdftotext = tool
        pdftotext.command = context.tools.pdftotext
        let output: Data
        do throws(BusError) {
            output = try await ToolRunner.run(pdftotext, arguments: ["-enc", "UTF-8", "-eol", "unix", path, "-"], timeout: context.tools.timeout, file: fileName)
        } catch where error.code == .invalidArgument {
            if error.message.localizedCaseInsensitiveContains("password") {
                throw .invalidArgument("the PDF '\(fileName)' is password-protected; upload a copy without a password")
            }
            throw .invalidArgument("the PDF '\(fileName)' is damaged or truncated and cannot be read; upload the complete file. \(error.message)")
        }
        return try await Extraction.offload { () throws(BusError) in try pages(Array(output), fileName: fileName) }
    }

    /// The document of `pdftotext`'s output.
    static func pages(_ output: [UInt8], fileName: String) throws(BusError) -> ExtractedDocument {
        var builder = DocumentBuilder()
        var pages = output.split(separator: 0x0C, omittingEmptySubsequences: false)
        // Every page ends with a form feed: what follows the last one is no page.
        if pages.count > 1, pages.last!.allSatisfy({ $0 == 0x0A || $0 == 0x20 }) { pages.removeLast() }
        for (index, page) in pages.enumerated() {
            builder.page = index + 1
            for paragraph in TextLines.paragraphs(TextLines.lines(Array(page))) {
                builder.paragraph(utf8: TextLines.unwrapped(paragraph))
            }
        }
        builder.document.pageCount = pages.count
        let document = builder.build()
        guard !document.isBlank else {
            throw .invalidArgument(
                "the PDF '\(fileName)' has no text layer (a scanned document?); export it as images (PNG or JPEG) for OCR, or from the scanner with text recognition")
        }
        return document
    }
}
