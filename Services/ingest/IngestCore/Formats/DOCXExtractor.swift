import Bus
import Foundation
import FoundationXML
import Wire
import ZIPFoundation

/// DOCX: the paragraphs of `word/document.xml` in the zip, headings by their style (a style
/// named "heading N" or "Title" in `word/styles.xml`, a `HeadingN` style id, or an outline
/// level); table cells are paragraphs too; the title is `docProps/core.xml`'s, else the first
/// Title-styled paragraph. A Word file has no pages before it is laid out, so chunks carry none.
///
/// Hostile zips are read within the job's ``ExtractionBudget``: every byte inflated is taken from
/// it (so all parts together stay within what the job reserved of the worker's memory), an entry
/// that inflates more than `compressionRatio` times its compressed size (past the first MiB) is
/// refused as a bomb, a part larger than FoundationXML's parser reads is refused before it is
/// unpacked further, and XML that declares a DTD (entity expansion; Word never writes one) is
/// refused before it is parsed. The parser (libxml2) reads nesting without recursion.
enum DOCXExtractor {
    /// Inflated bytes an entry may have before its compression ratio is checked: a small part of
    /// repeated markup may legitimately compress very well.
    static let ratioGraceBytes = 1024 * 1024
    /// The most XML FoundationXML's parser reads at once: libxml2 without XML_PARSE_HUGE fails
    /// beyond 10,000,000 bytes (after parsing them all), so larger parts are refused unread.
    static let maximumXMLBytes = 10_000_000

    /// Reads the Word file `data`, whose scratch copy is at `file`. ZIPFoundation reads the
    /// archive's directory from the file (its in-memory archive traps on a directory that seeks
    /// past the end); each part is inflated from `data` by ``inflate(_:of:in:fileName:consume:)``.
    static func extract(_ data: Data, file: URL, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        let archive: Archive
        do {
            archive = try Archive(url: file, accessMode: .read)
        } catch {
            throw damaged(fileName, "the zip archive is damaged or truncated")
        }
        let bytes = [UInt8](data)
        guard let documentXML = try part("word/document.xml", of: archive, bytes: bytes, fileName: fileName, budget: budget) else {
            throw .invalidArgument("'\(fileName)' is a zip archive but not a Word document (it has no word/document.xml)")
        }
        let styles = try part("word/styles.xml", of: archive, bytes: bytes, fileName: fileName, budget: budget).map { data in StyleNames.parse(data, budget: budget) } ?? [:]
        let core = try part("docProps/core.xml", of: archive, bytes: bytes, fileName: fileName, budget: budget).flatMap { data in CoreTitle.parse(data, budget: budget) }

        let reader = DocumentReader(styles: styles, budget: budget)
        let parser = XMLParser(data: documentXML)
        parser.delegate = reader
        let parsed = parser.parse()
        try budget.checkpoint()
        guard parsed else {
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

    /// Why unpacking stopped.
    private enum Refusal: Error {
        case tooLarge, ratio, parserLimit, cancelled, truncated
    }

    /// The bytes of the zip entry at `path`, if there is one, taken from `budget`.
    /// - Throws: `INVALID_ARGUMENT` for a damaged entry, one over the compression ratio, more
    ///   than the budget allows, or XML with a DTD; `CANCELLED`.
    private static func part(_ path: String, of archive: Archive, bytes: [UInt8], fileName: String, budget: ExtractionBudget) throws(BusError) -> Data? {
        guard let entry = archive[path] else { return nil }
        let tooLarge = BusError.invalidArgument(
            "'\(fileName)' unpacks to more XML than a Word document of its size may (\(budget.expansionAllowance / 1024) KiB: INGEST_MAX_COMPRESSION_RATIO times its size, at most INGEST_MAX_INFLATED_MB); split the document")
        let bomb = BusError.invalidArgument(
            "'\(fileName)' is refused: its part \(path) inflates to more than \(budget.compressionRatio) times its compressed size, as zip bombs do (INGEST_MAX_COMPRESSION_RATIO)")
        let (ratioLimit, overflow) = max(1, Int(clamping: entry.compressedSize)).multipliedReportingOverflow(by: budget.compressionRatio)
        let maximum = overflow ? Int.max : max(ratioLimit, ratioGraceBytes)
        let parserLimit = BusError.invalidArgument(
            "the Word document '\(fileName)' cannot be read: its part \(path) has more than \(maximumXMLBytes) bytes of XML, the most the XML parser reads; split the document")
        // The sizes the zip declares are checked first, then what really inflates (they may lie).
        let declared = Int(clamping: entry.uncompressedSize)
        guard declared <= maximum else { throw bomb }
        guard declared <= budget.remaining else { throw tooLarge }
        guard declared <= maximumXMLBytes else { throw parserLimit }
        var content = Data()
        do {
            try inflate(entry, path: path, in: bytes) { chunk in
                if budget.isCancelled { throw Refusal.cancelled }
                guard content.count + chunk.count <= maximum else { throw Refusal.ratio }
                guard content.count + chunk.count <= maximumXMLBytes else { throw Refusal.parserLimit }
                guard budget.take(chunk.count) else { throw Refusal.tooLarge }
                content.append(chunk)
            }
        } catch Refusal.tooLarge {
            throw tooLarge
        } catch Refusal.ratio {
            throw bomb
        } catch Refusal.parserLimit {
            throw parserLimit
        } catch Refusal.cancelled {
            throw .cancelled("the job was cancelled")
        } catch Refusal.truncated {
            throw damaged(fileName, "the part \(path) ends before its compressed data does")
        } catch {
            throw damaged(fileName, "the part \(path) is damaged")
        }
        if let problem = XMLSafety.problem(content) {
            throw damaged(fileName, "its part \(path) \(problem)")
        }
        return content
    }
}

extension DOCXExtractor {
    /// Inflates `entry` (at `path`) from the archive's bytes, checking its CRC-32. ZIPFoundation's
    /// own extraction reads past the entry's data and, at the end of the file, loops forever on a
    /// deflate stream that never ends; here the input is the entry's compressed bytes only, and
    /// running out of them is an error.
    fileprivate static func inflate(_ entry: Entry, path: String, in bytes: [UInt8], consume: (Data) throws -> Void) throws {
        guard let start = localDataOffset(of: path, in: bytes), let size = Int(exactly: entry.compressedSize),
              size <= bytes.count - start else { throw Refusal.truncated }
        let input = bytes[start..<(start + size)]
        guard entry.isCompressed else {
            let stored = Data(input)
            guard stored.crc32(checksum: 0) == entry.checksum else { throw Refusal.truncated }
            try consume(stored)
            return
        }
        var offset = input.startIndex
        let checksum = try Data.decompress(
            size: Int64(size), bufferSize: 64 * 1024, skipCRC32: false,
            provider: { _, chunkSize in
                guard offset < input.endIndex else { throw Refusal.truncated }
                let end = min(offset + chunkSize, input.endIndex)
                defer { offset = end }
                return Data(input[offset..<end])
            }, consumer: consume)
        guard checksum == entry.checksum else { throw Refusal.truncated }
    }

    /// Where the data of the local file header named `path` starts: the header's 30 bytes, the
    /// name and the extra field after the first `PK\u{3}\u{4}` header with that name.
    private static func localDataOffset(of path: String, in bytes: [UInt8]) -> Int? {
        let name = Array(path.utf8)
        var index = 0
        while index + 30 + name.count <= bytes.count {
            if bytes[index] == 0x50, bytes[index + 1] == 0x4B, bytes[index + 2] == 0x03, bytes[index + 3] == 0x04 {
                let nameLength = Int(bytes[index + 26]) | Int(bytes[index + 27]) << 8
                let extraLength = Int(bytes[index + 28]) | Int(bytes[index + 29]) << 8
                if nameLength == name.count, bytes[(index + 30)..<(index + 30 + nameLength)].elementsEqual(name) {
                    return index + 30 + nameLength + extraLength
                }
            }
            index += 1
        }
        return nil
    }
}

/// What XML a Word document may hold before FoundationXML's parser (libxml2) sees it.
enum XMLSafety {
    /// Why `xml` is refused, if it is: a DTD (`<!DOCTYPE`, `<!ENTITY`: entity expansion, the
    /// "billion laughs"; Word never writes one) or an encoding other than UTF-8, in which such a
    /// declaration would not be seen here.
    static func problem(_ xml: Data) -> String? {
        xml.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> String? in
            if bytes.count >= 2, bytes[0] == 0xFE || bytes[0] == 0xFF || bytes[0] == 0x00 || bytes[1] == 0x00 {
                return "is not UTF-8 (as Word writes it)"
            }
            var index = 0
            while index + 1 < bytes.count {
                if bytes[index] == 0x3C, bytes[index + 1] == 0x21 {  // "<!"
                    let rest = UnsafeRawBufferPointer(rebasing: bytes[(index + 2)...])
                    if !rest.starts(with: "--".utf8), !rest.starts(with: "[CDATA[".utf8) {
                        return "declares a DTD, which Word documents never do"
                    }
                }
                index += 1
            }
            return nil
        }
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
private func attribute(_ name: String, in attributes: [String: String]) -> String? {
    attributes.first { localName($0.key) == name }?.value
}

private func localName(_ qualified: String) -> String {
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

/// `dc:title` of `docProps/core.xml`.
private enum CoreTitle {
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
