import Bus
import Foundation
import FoundationXML
import Wire

/// EPUB (2 and 3): `META-INF/container.xml` names the package document (OPF); its spine lists
/// the chapters in reading order, each an XHTML file of its manifest read by ``HTMLExtractor``
/// (headings, paragraphs; its forgiving scanner expands no DTD, and EPUB 3 chapters declare
/// `<!DOCTYPE html>`). Spine items that are not XHTML, or that the manifest lacks, are skipped;
/// the title is the OPF's `dc:title`. The zip is read by ``ZipPackage`` (bounded as for DOCX).
enum EPUBExtractor {
    static let kind = ZipPackage.Kind(name: "EPUB e-book", plural: "e-books", writer: "an e-book program", saveAs: "epub")
    /// Chapters read at most.
    static let maximumChapters = 5_000

    static func extract(_ data: Data, file: URL, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        let zip = try ZipPackage(data, file: file, fileName: fileName, kind: kind, budget: budget)
        guard let container = try zip.part("META-INF/container.xml") else {
            throw zip.notOfKind(missing: "META-INF/container.xml")
        }
        let rootReader = RootFileReader(budget: budget)
        guard parse(container, with: rootReader), let opfPath = rootReader.path.flatMap({ resolve($0, against: "") }) else {
            throw zip.damaged("its META-INF/container.xml names no package document (rootfile)")
        }
        guard let opf = try zip.part(opfPath) else {
            throw zip.damaged("its package document \(opfPath), named in META-INF/container.xml, is missing")
        }
        let packageReader = PackageReader(budget: budget)
        guard parse(opf, with: packageReader) else {
            throw zip.damaged("its package document \(opfPath) is not well-formed XML")
        }
        try budget.checkpoint()
        guard packageReader.spine.count <= maximumChapters else {
            throw .invalidArgument("'\(fileName)' is refused: its spine lists more than \(maximumChapters) chapters")
        }
        let base = opfPath.contains("/") ? String(opfPath[...opfPath.lastIndex(of: "/")!]) : ""
        var builder = DocumentBuilder()
        var chapters = 0
        for idref in packageReader.spine {
            try budget.checkpoint()
            guard let item = packageReader.manifest[idref], item.mediaType == "application/xhtml+xml" || item.mediaType == "text/html",
                  let path = resolve(item.href, against: base), let chapter = try zip.part(path, xml: false) else { continue }
            builder.append(try HTMLExtractor.extract(chapter, budget: budget), heading: nil)
            chapters += 1
        }
        guard chapters > 0 else {
            throw zip.damaged("its spine lists no XHTML chapter the e-book holds")
        }
        let title = packageReader.title.trimmingCharacters(in: .whitespacesAndNewlines)
        if !title.isEmpty { builder.document.title = title }
        return builder.build()
    }

    private static func parse(_ data: Data, with delegate: some XMLParserDelegate) -> Bool {
        let parser = XMLParser(data: data)
        parser.delegate = delegate
        return parser.parse()
    }

    /// `href` (percent-encoded, relative to the folder `base`, which ends in "/" or is empty) as a
    /// path in the zip; nil if it leaves the zip's root or is absolute.
    static func resolve(_ href: String, against base: String) -> String? {
        let withoutFragment = href.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard let decoded = withoutFragment.removingPercentEncoding, !decoded.isEmpty, !decoded.hasPrefix("/"), !decoded.contains(":") else { return nil }
        var components: [Substring] = base.split(separator: "/")
        for component in decoded.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..":
                guard !components.isEmpty else { return nil }
                components.removeLast()
            default: components.append(component)
            }
        }
        return components.isEmpty ? nil : components.joined(separator: "/")
    }

    /// The first `rootfile`'s `full-path` in `container.xml`.
    private final class RootFileReader: NSObject, XMLParserDelegate {
        let budget: ExtractionBudget
        var path: String?

        init(budget: ExtractionBudget) { self.budget = budget }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if budget.isCancelled { parser.abortParsing() }
            if path == nil, localName(elementName) == "rootfile" { path = attribute("full-path", in: attributes) }
        }
    }

    /// The OPF's manifest (id -> href and media type), spine (idrefs in order) and `dc:title`.
    private final class PackageReader: NSObject, XMLParserDelegate {
        struct Item {
            let href: String
            let mediaType: String
        }

        let budget: ExtractionBudget
        var manifest: [String: Item] = [:]
        var spine: [String] = []
        var title = ""
        private var inTitle = false
        private var titles = 0

        init(budget: ExtractionBudget) { self.budget = budget }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if budget.isCancelled { parser.abortParsing() }
            switch localName(elementName) {
            case "item":
                if let id = attribute("id", in: attributes), let href = attribute("href", in: attributes) {
                    manifest[id] = Item(href: href, mediaType: (attribute("media-type", in: attributes) ?? "").lowercased())
                }
            case "itemref":
                // A spine longer than a book's is refused after parsing; stop collecting beyond it.
                if let idref = attribute("idref", in: attributes), spine.count <= EPUBExtractor.maximumChapters { spine.append(idref) }
            case "title":
                titles += 1
                inTitle = titles == 1
            default: break
            }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if localName(elementName) == "title" { inTitle = false }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if inTitle, title.utf8.count < 4096 { title += string }
        }
    }
}
