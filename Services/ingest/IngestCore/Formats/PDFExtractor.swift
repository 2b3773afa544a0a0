import Bus
import Foundation
import Wire

/// PDF: the text of each page with its page number, by poppler's `pdftotext` (Debian package
/// poppler-utils) as a subprocess. Pages end with a form feed in its output; a page's lines are
/// joined back into paragraphs (blank lines separate them), hyphenated words made whole.
/// A PDF without a text layer (a scan) is read by OCR instead: poppler's `pdftoppm` renders its
/// pages (at most ``maximumScannedPages``), tesseract reads each.
enum PDFExtractor {
    static let pdftotext = ExternalTool(command: "pdftotext", package: "poppler-utils", variable: "INGEST_PDFTOTEXT")
    static let pdftoppm = ExternalTool(command: "pdftoppm", package: "poppler-utils", variable: "INGEST_PDFTOPPM")
    /// Pages of a scanned PDF read by OCR (a second or two each).
    static let maximumScannedPages = 50

    static func extract(_ data: Data, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let path = try Extraction.scratchFile(data, named: "input.pdf", in: context)
        var tool = pdftotext
        tool.command = context.tools.pdftotext
        let output: Data
        do throws(BusError) {
            output = try await ToolRunner.run(
                tool, arguments: ["-enc", "UTF-8", "-eol", "unix", path, "-"], settings: context.tools, directory: context.scratch,
                budget: context.budget, file: fileName)
        } catch where error.code == .invalidArgument {
            if error.message.localizedCaseInsensitiveContains("password") {
                throw .invalidArgument("the PDF '\(fileName)' is password-protected; upload a copy without a password")
            }
            throw .invalidArgument("the PDF '\(fileName)' is damaged or truncated and cannot be read; upload the complete file. \(error.message)")
        }
        let document = try await offThePool(cancelling: context.budget) { () throws(BusError) in try pages(Array(output), budget: context.budget).build() }
        guard document.isBlank else { return document }
        return try await scanned(path, pageCount: document.pageCount ?? 0, fileName: fileName, context: context)
    }

    /// The document of `pdftotext`'s output (blank for a scan).
    static func pages(_ output: [UInt8], budget: ExtractionBudget) throws(BusError) -> DocumentBuilder {
        var builder = DocumentBuilder()
        var pages = output.split(separator: 0x0C, omittingEmptySubsequences: false)
        // Every page ends with a form feed: what follows the last one is no page.
        if pages.count > 1, pages.last!.allSatisfy({ $0 == 0x0A || $0 == 0x20 }) { pages.removeLast() }
        for (index, page) in pages.enumerated() {
            try budget.checkpoint()
            builder.page = index + 1
            builder.laidOutText(Array(page))
        }
        builder.document.pageCount = pages.count
        return builder
    }

    /// A scanned PDF by OCR: each page rendered to an image, each image read by tesseract.
    private static func scanned(_ path: String, pageCount: Int, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        guard pageCount <= maximumScannedPages else {
            throw .invalidArgument(
                "the PDF '\(fileName)' has no text layer (a scan) and \(pageCount) pages; ingest reads at most \(maximumScannedPages) scanned pages by OCR: split it")
        }
        var tool = pdftoppm
        tool.command = context.tools.pdftoppm
        let prefix = context.scratch.appending(path: "page").path
        _ = try await ToolRunner.run(
            tool, arguments: ["-r", "200", "-gray", "-png", "-l", String(maximumScannedPages), path, prefix], settings: context.tools,
            directory: context.scratch, budget: context.budget, file: fileName)
        let images = ((try? FileManager.default.contentsOfDirectory(atPath: context.scratch.path)) ?? [])
            .filter { $0.hasPrefix("page-") && $0.hasSuffix(".png") }.sorted()
        var builder = DocumentBuilder()
        for (index, image) in images.enumerated() {
            try context.budget.checkpoint()
            builder.page = index + 1
            let text = try await ImageExtractor.recognize(context.scratch.appending(path: image).path, fileName: fileName, context: context)
            builder.laidOutText(Array(text))
        }
        builder.document.pageCount = max(pageCount, images.count)
        guard !builder.document.isBlank else {
            throw .invalidArgument("the PDF '\(fileName)' has no text layer, and OCR found no text in its pages; upload a sharper scan")
        }
        return builder.build()
    }
}
