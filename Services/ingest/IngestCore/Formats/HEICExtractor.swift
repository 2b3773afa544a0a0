import Bus
import Contracts
import Foundation
import Wire

/// HEIC/HEIF photos (an iPhone camera's default): libheif's `heif-convert` (Debian package
/// libheif-examples), run by ``ToolRunner`` (time, memory, file size bounded), decodes the
/// primary image to PNG; tesseract reads that as any image (``ImageExtractor``).
enum HEICExtractor {
    static let tool = ExternalTool(command: "heif-convert", package: "libheif-examples", variable: "INGEST_HEIF_CONVERT")

    static func extract(_ data: Data, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let input = try Extraction.scratchFile(data, named: "input.heic", in: context)
        let output = context.scratch.appending(path: "\(UUID().uuidString)-decoded.png")
        var convert = tool
        convert.command = context.tools.heifConvert
        do throws(BusError) {
            _ = try await ToolRunner.run(
                convert, arguments: [input, output.path], settings: context.tools, directory: context.scratch, budget: context.budget, file: fileName)
        } catch where error.code == .invalidArgument && !error.message.contains("INGEST_") {
            throw .invalidArgument("the HEIC image '\(fileName)' is damaged or truncated and cannot be read; upload the complete file. \(error.message)")
        }
        // A file of several images is written as decoded-1.png, decoded-2.png…: the first is read.
        let stem = output.deletingPathExtension().lastPathComponent
        let written = ((try? FileManager.default.contentsOfDirectory(atPath: context.scratch.path)) ?? [])
            .filter { $0.hasPrefix(stem) && $0.hasSuffix(".png") }.sorted()
        guard let image = written.first else {
            throw .invalidArgument("the HEIC image '\(fileName)' holds no image heif-convert could decode; upload the photo again")
        }
        return try await ImageExtractor.read(context.scratch.appending(path: image).path, fileName: fileName, context: context)
    }
}
