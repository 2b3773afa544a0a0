import Bus
import Foundation
import FoundationXML
import Wire

/// DOCX: the paragraphs of `word/document.xml` in the zip, headings by their style (a style
/// named "heading N" or "Title" in `word/styles.xml`, a `HeadingN` style id, or an outline
/// level); table cells are paragraphs too; the title is `docProps/core.xml`'s, else the first
/// Title-styled paragraph. A Word file has no pages before it is laid out, so chunks carry none.
///
/// Hostile zips are read by ``ZipPackage``, within the job's ``ExtractionBudget``. The parser
/// (libxml2) reads nesting without recursion.
enum DOCXExtractor {
    /// The names Word documents go by in messages.
    static let kind = ZipPackage.Kind(name: "Word document", plural: "Word documents", writer: "Word", saveAs: "docx")

    /// Reads the Word file `data`, whose scratch copy is at `file` (``ZipPackage`` reads it
    /// within `budget`).
    static func extract(_ data: Data, file: URL, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        let zip = try ZipPackage(data, file: file, fileName: fileName, kind: kind, budget: budget)
        guard let documentXML = try zip.part("word/document.xml") else {
            throw zip.notOfKind(missing: "word/document.xml")
        }
        let styles = try zip.part("word/styles.xml").map { data in StyleNames.parse(data, budget: budget) } ?? [:]
        let core = try zip.part("docProps/core.xml").flatMap { data in CoreTitle.parse(data, budget: budget) }

        let reader = DocumentReader(styles: styles, budget: budget)
        try zip.parse(documentXML, path: "word/document.xml", with: reader)
        var builder = DocumentBuilder()
        for paragraph in reader.paragraphs {
            if let level = paragraph.headingLevel {
                if builder.heading(paragraph.text, level: level), paragraph.isTitle, builder.document.title == nil {
                    builder.document.title = String(decoding: DocumentBuilder.singleLine(paragraph.text), as: UTF8.self)
                }
            } else {
                builder.paragraph(paragraph.text)
            }
        }
        if let core, !core.isEmpty { builder.document.title = core }
        return builder.build()
    }
}

/// One paragraph of a Word document.
private struct WordParagraph {
    var text = ""
    var style: String?
    var outlineLevel: Int?
    var headingLevel: Int?
    var isTitle = false
}

/// Reads `w:p` paragraphs: the text of `w:t` runs, tabs, line breaks; the style and outline level.
private final class DocumentReader: NSObject, XMLParserDelegate {
    let styles: [String: String]
    let budget: ExtractionBudget
    private(set) var paragraphs: [WordParagraph] = []
    /// Paragraphs being read (text boxes nest paragraphs in paragraphs).
    private var open: [WordParagraph] = []
    private var inText = false

    init(styles: [String: String], budget: ExtractionBudget) {
        self.styles = styles
        self.budget = budget
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        if budget.isCancelled { parser.abortParsing() }
        switch localName(elementName) {
        case "p": open.append(WordParagraph())
        case "t": inText = true
        case "tab": append("\t")
        case "br", "cr": append("\n")
        case "pStyle": open.indices.last.map { open[$0].style = attribute("val", in: attributes) }
        case "outlineLvl": open.indices.last.map { open[$0].outlineLevel = attribute("val", in: attributes).flatMap { Int($0) } }
        default: break
        }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        switch localName(elementName) {
        case "t": inText = false
        case "p":
            guard var paragraph = open.popLast() else { return }
            (paragraph.headingLevel, paragraph.isTitle) = headingLevel(paragraph)
            paragraphs.append(paragraph)
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inText { append(string) }
    }

    private func append(_ text: String) {
        guard !open.isEmpty else { return }
        open[open.count - 1].text += text
    }

    /// "Heading 2" / "Heading2" / outline level 1 -> 2; "Title" -> 1.
    private func headingLevel(_ paragraph: WordParagraph) -> (Int?, Bool) {
        if let style = paragraph.style {
            let name = (styles[style] ?? style).lowercased().replacingOccurrences(of: " ", with: "")
            if name == "title" { return (1, true) }
            if name.hasPrefix("heading"), let level = Int(name.dropFirst("heading".count)), (1...9).contains(level) { return (min(level, 6), false) }
        }
        if let level = paragraph.outlineLevel, (0...8).contains(level) { return (min(level + 1, 6), false) }
        return (nil, false)
    }
}

/// `w:val` or `val`, whatever the namespace prefix.
func attribute(_ name: String, in attributes: [String: String]) -> String? {
    attributes.first { localName($0.key) == name }?.value
}

/// `w:p` -> `p`.
func localName(_ qualified: String) -> String {
    qualified.split(separator: ":").last.map(String.init) ?? qualified
}

/// Style ids to style names, from `word/styles.xml` (localized documents name `Heading1` otherwise).
private enum StyleNames {
    static func parse(_ data: Data, budget: ExtractionBudget) -> [String: String] {
        let reader = Reader(budget: budget)
        let parser = XMLParser(data: data)
        parser.delegate = reader
        _ = parser.parse()
        return reader.names
    }

    private final class Reader: NSObject, XMLParserDelegate {
        let budget: ExtractionBudget
        var names: [String: String] = [:]
        private var current: String?

        init(budget: ExtractionBudget) { self.budget = budget }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if budget.isCancelled { parser.abortParsing() }
            switch localName(elementName) {
            case "style": current = attribute("styleId", in: attributes)
            case "name": if let current, let name = attribute("val", in: attributes) { names[current] = name }
            default: break
            }
        }
    }
}

/// `dc:title` of `docProps/core.xml` (and of an OpenDocument's `meta.xml`).
enum CoreTitle {
    static func parse(_ data: Data, budget: ExtractionBudget) -> String? {
        let reader = Reader(budget: budget)
        let parser = XMLParser(data: data)
        parser.delegate = reader
        _ = parser.parse()
        let title = reader.title.trimmingCharacters(in: .whitespacesAndNewlines)
        return title.isEmpty ? nil : title
    }

    private final class Reader: NSObject, XMLParserDelegate {
        let budget: ExtractionBudget
        var title = ""
        private var inTitle = false

        init(budget: ExtractionBudget) { self.budget = budget }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if budget.isCancelled { parser.abortParsing() }
            if localName(elementName) == "title" { inTitle = true }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if localName(elementName) == "title" { inTitle = false }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if inTitle { title += string }
        }
    }
}
