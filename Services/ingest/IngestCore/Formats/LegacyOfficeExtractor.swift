import Bus
import Contracts
import Foundation
import Wire

/// Word 97–2003 (`.doc`), PowerPoint 97–2003 (`.ppt`) and RTF: their text by Debian's catdoc
/// package — `catdoc` for DOC and RTF, `catppt` for PPT — run by ``ToolRunner`` (time, memory,
/// output bounded). `-w` writes each paragraph on one line, `-d utf-8` in UTF-8; each non-blank
/// line becomes a paragraph. These formats carry no pages or headings catdoc reports.
enum LegacyOfficeExtractor {
    static let catdoc = ExternalTool(command: "catdoc", package: "catdoc", variable: "INGEST_CATDOC")
    static let catppt = ExternalTool(command: "catppt", package: "catdoc", variable: "INGEST_CATPPT")

    static func extract(_ data: Data, format: IngestFormat, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let path = try Extraction.scratchFile(data, named: "input.\(format.rawValue)", in: context)
        var tool = format == .ppt ? catppt : catdoc
        tool.command = format == .ppt ? context.tools.catppt : context.tools.catdoc
        let arguments = format == .ppt ? ["-d", "utf-8", path] : ["-w", "-d", "utf-8", path]
        let what = switch format {
        case .ppt: "PowerPoint presentation"
        case .rtf: "RTF document"
        default: "Word document"
        }
        let output: Data
        do throws(BusError) {
            output = try await ToolRunner.run(tool, arguments: arguments, settings: context.tools, directory: context.scratch, budget: context.budget, file: fileName)
        } catch where error.code == .invalidArgument && !error.message.contains("INGEST_") {
            throw .invalidArgument("the \(what) '\(fileName)' is damaged or not of its format and cannot be read; upload the complete file. \(error.message)")
        }
        return try await offThePool(cancelling: context.budget) { () throws(BusError) in
            var builder = DocumentBuilder()
            for line in output.split(separator: 0x0A, omittingEmptySubsequences: true) {
                try context.budget.checkpoint()
                // catppt and catdoc end pages and slides with a form feed.
                builder.paragraph(utf8: line.filter { $0 != 0x0C })
            }
            return builder.build()
        }
    }
}
