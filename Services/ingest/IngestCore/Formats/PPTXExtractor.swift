import Bus
import Foundation
import FoundationXML
import Wire

/// PPTX (PowerPoint): each slide a page — `ppt/slides/slideN.xml` in the order of N — its title
/// placeholder a heading, the text of its other shapes (and tables) paragraphs; the slide's
/// speaker notes (the body of the `ppt/notesSlides` part its relationships name) follow as a
/// paragraph marked "Speaker notes:". The title is `docProps/core.xml`'s. The zip is read by
/// ``ZipPackage`` (bounded as for DOCX).
enum PPTXExtractor {
    static let kind = ZipPackage.Kind(name: "PowerPoint presentation", plural: "PowerPoint files", writer: "PowerPoint", saveAs: "pptx")
    /// Slides read at most.
    static let maximumSlides = 5_000
    /// What marks a slide's speaker notes in the text.
    static let notesMarker = "Speaker notes: "

    static func extract(_ data: Data, file: URL, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        let zip = try ZipPackage(data, file: file, fileName: fileName, kind: kind, budget: budget)
        let slides = try zip.paths(withPrefix: "ppt/slides/slide").compactMap { path -> (Int, String)? in
            guard path.hasSuffix(".xml"), let number = Int(path.dropFirst("ppt/slides/slide".count).dropLast(".xml".count)), number >= 0 else { return nil }
            return (number, path)
        }.sorted { $0.0 < $1.0 }
        guard !slides.isEmpty else { throw zip.notOfKind(missing: "slides, ppt/slides/slideN.xml") }
        guard slides.count <= maximumSlides else {
            throw .invalidArgument("'\(fileName)' is refused: it has more than \(maximumSlides) slides")
        }
        let title = try zip.part("docProps/core.xml").flatMap { data in CoreTitle.parse(data, budget: budget) }
        var builder = DocumentBuilder()
        for (index, (number, path)) in slides.enumerated() {
            try budget.checkpoint()
            builder.page = index + 1
            guard let xml = try zip.part(path) else { continue }
            let slide = try shapes(xml, path: path, zip: zip)
            for shape in slide {
                for paragraph in shape.paragraphs {
                    if shape.isTitle { builder.heading(paragraph, level: 1) } else { builder.paragraph(paragraph) }
                }
            }
            if let notesPath = try notesPart(ofSlide: number, zip: zip), let notesXML = try zip.part(notesPath) {
                let notes = try shapes(notesXML, path: notesPath, zip: zip).filter { $0.placeholder == "body" }.flatMap(\.paragraphs)
                    .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
                if !notes.isEmpty { builder.paragraph(notesMarker + notes.joined(separator: "\n")) }
            }
        }
        builder.document.pageCount = slides.count
        if let title, !title.isEmpty { builder.document.title = title }
        return builder.build()
    }

    /// The notes slide `ppt/slides/_rels/slideN.xml.rels` names, as a path in the zip.
    private static func notesPart(ofSlide number: Int, zip: ZipPackage) throws(BusError) -> String? {
        guard let rels = try zip.part("ppt/slides/_rels/slide\(number).xml.rels") else { return nil }
        let reader = RelationshipReader(budget: zip.budget)
        let parser = XMLParser(data: rels)
        parser.delegate = reader
        guard parser.parse(), let target = reader.notesTarget else { return nil }
        return EPUBExtractor.resolve(target, against: "ppt/slides/")
    }

    struct Shape {
        /// The placeholder's type (`title`, `ctrTitle`, `body`), if the shape is one.
        var placeholder: String?
        var paragraphs: [String] = []
        var isTitle: Bool { placeholder == "title" || placeholder == "ctrTitle" }
    }

    /// The text of a slide's (or notes slide's) shapes, in order.
    private static func shapes(_ xml: Data, path: String, zip: ZipPackage) throws(BusError) -> [Shape] {
        let reader = ShapeReader(budget: zip.budget)
        try zip.parse(xml, path: path, with: reader)
        return reader.shapes
    }

    /// `p:sp` shapes with their placeholder type and `a:p` paragraphs (`a:t` runs, `a:br` line
    /// breaks); paragraphs outside shapes (table cells) make shapes of their own.
    private final class ShapeReader: NSObject, XMLParserDelegate {
        let budget: ExtractionBudget
        private(set) var shapes: [Shape] = []
        private var shape: Shape?
        private var paragraph: String?
        private var inText = false

        init(budget: ExtractionBudget) { self.budget = budget }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if budget.isCancelled { parser.abortParsing() }
            switch localName(elementName) {
            case "sp": shape = Shape()
            case "ph": shape?.placeholder = attribute("type", in: attributes) ?? "body"
            case "p": paragraph = ""
            case "t": inText = true
            case "br": paragraph? += "\n"
            default: break
            }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            switch localName(elementName) {
            case "t": inText = false
            case "p":
                guard let text = paragraph else { return }
                paragraph = nil
                if shape != nil { shape?.paragraphs.append(text) } else { shapes.append(Shape(paragraphs: [text])) }
            case "sp":
                if let shape { shapes.append(shape) }
                shape = nil
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if inText { paragraph? += string }
        }
    }

    /// The target of the relationship of type `…/notesSlide`.
    private final class RelationshipReader: NSObject, XMLParserDelegate {
        let budget: ExtractionBudget
        var notesTarget: String?

        init(budget: ExtractionBudget) { self.budget = budget }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if budget.isCancelled { parser.abortParsing() }
            if notesTarget == nil, localName(elementName) == "Relationship", attribute("Type", in: attributes)?.hasSuffix("/notesSlide") == true {
                notesTarget = attribute("Target", in: attributes)
            }
        }
    }
}
