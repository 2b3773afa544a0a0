import Bus
import Foundation
import FoundationXML
import Wire
import ZIPFoundation

/// DOCX: the paragraphs of `word/document.xml` in the zip, headings by their style (a style
/// named "heading N" or "Title" in `word/styles.xml`, a `HeadingN` style id, or an outline
/// level); table cells are paragraphs too; the title is `docProps/core.xml`'s, else the first
/// Title-styled paragraph. A Word file has no pages before it is laid out, so chunks carry none.
enum DOCXExtractor {
    /// The largest XML part read (a zip bomb stops here): 256 MiB.
    static let maximumPartBytes = 256 * 1024 * 1024

    static func extract(_ data: Data, fileName: String) throws(BusError) -> ExtractedDocument {
        let archive: Archive
        do {
            archive = try Archive(data: data, accessMode: .read)
        } catch {
            throw damaged(fileName, "the zip archive is damaged or truncated")
        }
        guard let documentXML = try part("word/document.xml", of: archive, fileName: fileName) else {
            throw .invalidArgument("'\(fileName)' is a zip archive but not a Word document (it has no word/document.xml)")
        }
        let styles = try part("word/styles.xml", of: archive, fileName: fileName).map(StyleNames.parse) ?? [:]
        let core = try part("docProps/core.xml", of: archive, fileName: fileName).flatMap(CoreTitle.parse)

        let reader = DocumentReader(styles: styles)
        let parser = XMLParser(data: documentXML)
        parser.delegate = reader
        guard parser.parse() else {
            throw damaged(fileName, "its text (word/document.xml) is not well-formed XML")
        }
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

    private static func damaged(_ fileName: String, _ why: String) -> BusError {
        .invalidArgument("the Word document '\(fileName)' cannot be read: \(why); upload the complete file, saved again as .docx")
    }

    /// The bytes of the zip entry at `path`, if there is one.
    private static func part(_ path: String, of archive: Archive, fileName: String) throws(BusError) -> Data? {
        guard let entry = archive[path] else { return nil }
        guard entry.uncompressedSize <= UInt64(maximumPartBytes) else {
            throw .invalidArgument("'\(fileName)' unpacks to more than \(maximumPartBytes / 1024 / 1024) MiB of XML; split the document")
        }
        var content = Data()
        do {
            _ = try archive.extract(entry) { chunk in
                content.append(chunk)
                if content.count > maximumPartBytes { throw DOCXTooLarge() }
            }
        } catch {
            throw damaged(fileName, "the part \(path) is damaged")
        }
        return content
    }

    private struct DOCXTooLarge: Error {}
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
    private(set) var paragraphs: [WordParagraph] = []
    /// Paragraphs being read (text boxes nest paragraphs in paragraphs).
    private var open: [WordParagraph] = []
    private var inText = false

    init(styles: [String: String]) {
        self.styles = styles
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
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
private func attribute(_ name: String, in attributes: [String: String]) -> String? {
    attributes.first { localName($0.key) == name }?.value
}

private func localName(_ qualified: String) -> String {
    qualified.split(separator: ":").last.map(String.init) ?? qualified
}

/// Style ids to style names, from `word/styles.xml` (localized documents name `Heading1` otherwise).
private enum StyleNames {
    static func parse(_ data: Data) -> [String: String] {
        let reader = Reader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        _ = parser.parse()
        return reader.names
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var names: [String: String] = [:]
        private var current: String?

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            switch localName(elementName) {
            case "style": current = attribute("styleId", in: attributes)
            case "name": if let current, let name = attribute("val", in: attributes) { names[current] = name }
            default: break
            }
        }
    }
}

/// `dc:title` of `docProps/core.xml`.
private enum CoreTitle {
    static func parse(_ data: Data) -> String? {
        let reader = Reader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        _ = parser.parse()
        let title = reader.title.trimmingCharacters(in: .whitespacesAndNewlines)
        return title.isEmpty ? nil : title
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var title = ""
        private var inTitle = false

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
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
