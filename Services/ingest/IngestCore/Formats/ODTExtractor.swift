import Bus
import Foundation
import FoundationXML
import Wire

/// ODT (OpenDocument text, as LibreOffice writes it): the paragraphs (`text:p`) and headings
/// (`text:h`, level from `text:outline-level`) of `content.xml` in the zip, in document order —
/// list items and table cells hold paragraphs too; tabs, line breaks and runs of spaces
/// (`text:s`) kept; notes and annotations left out. The title is `meta.xml`'s `dc:title`.
/// The zip is read by ``ZipPackage`` (bounded as for DOCX).
enum ODTExtractor {
    static let kind = ZipPackage.Kind(name: "OpenDocument text", plural: "OpenDocument files", writer: "LibreOffice", saveAs: "odt")
    /// Spaces one `text:s` may stand for (its `text:c` is read from the file).
    static let maximumSpaces = 64

    static func extract(_ data: Data, file: URL, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        let zip = try ZipPackage(data, file: file, fileName: fileName, kind: kind, budget: budget)
        guard let content = try zip.part("content.xml") else {
            throw zip.notOfKind(missing: "content.xml")
        }
        let title = try zip.part("meta.xml").flatMap { data in CoreTitle.parse(data, budget: budget) }
        let reader = ContentReader(budget: budget)
        try zip.parse(content, path: "content.xml", with: reader)
        var builder = DocumentBuilder()
        for paragraph in reader.paragraphs {
            if let level = paragraph.headingLevel {
                builder.heading(paragraph.text, level: level)
            } else {
                builder.paragraph(paragraph.text)
            }
        }
        if let title, !title.isEmpty { builder.document.title = title }
        return builder.build()
    }

    private struct Paragraph {
        var text = ""
        var headingLevel: Int?
    }

    /// Reads `text:p` and `text:h` in `office:text`; paragraphs inside paragraphs (a frame's) are
    /// paragraphs of their own.
    private final class ContentReader: NSObject, XMLParserDelegate {
        let budget: ExtractionBudget
        private(set) var paragraphs: [Paragraph] = []
        private var open: [Paragraph] = []
        /// Depth inside elements whose text is not the document's (notes, annotations).
        private var skipping = 0

        init(budget: ExtractionBudget) { self.budget = budget }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if budget.isCancelled { parser.abortParsing() }
            let name = localName(elementName)
            if skipping > 0 || name == "note" || name == "annotation" || name == "tracked-changes" {
                skipping += 1
                return
            }
            switch name {
            case "p": open.append(Paragraph())
            case "h":
                let level = attribute("outline-level", in: attributes).flatMap { Int($0) }.map { min(max($0, 1), 6) } ?? 1
                open.append(Paragraph(headingLevel: level))
            case "tab": append("\t")
            case "line-break": append("\n")
            case "s":
                let count = attribute("c", in: attributes).flatMap { Int($0) } ?? 1
                append(String(repeating: " ", count: min(max(count, 1), ODTExtractor.maximumSpaces)))
            default: break
            }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if skipping > 0 {
                skipping -= 1
                return
            }
            switch localName(elementName) {
            case "p", "h":
                if let paragraph = open.popLast() { paragraphs.append(paragraph) }
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if skipping == 0 { append(string) }
        }

        private func append(_ text: String) {
            guard !open.isEmpty else { return }
            open[open.count - 1].text += text
        }
    }
}
