import Foundation
import Glibc

/// erand48 with a state of its own: the same documents on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: [UInt16]
    init(seed: UInt64) { state = [UInt16(truncatingIfNeeded: seed), UInt16(truncatingIfNeeded: seed >> 16), UInt16(truncatingIfNeeded: seed >> 32)] }
    mutating func next() -> UInt64 { UInt64(erand48(&state) * 0x1p53) << 11 }
}

/// Study notes to ingest: Markdown with sections, paragraphs of sentences over a skewed
/// vocabulary (topics for the summarizer and keyword extractor), definitions for the cards.
/// Every seed gives a different document, so the store never sees a duplicate and ai-gateway's
/// cache never answers.
enum BenchDocuments {
    static let terms = """
        photosynthesis chlorophyll mitochondria respiration glucose enzyme protein membrane nucleus ribosome osmosis diffusion \
        gene allele mutation evolution species ecosystem habitat climate erosion volcano tectonics magma sediment fossil \
        velocity acceleration momentum friction gravity energy voltage current resistance circuit magnet wavelength frequency \
        molecule isotope electron reaction catalyst acid base oxidation equilibrium solution monarchy republic revolution \
        parliament treaty empire colony trade tariff inflation market labour industry railway novel poem metaphor narrator \
        theorem equation fraction derivative integral vector matrix probability variable hypothesis experiment
        """.split(separator: " ").map(String.init)
    static let qualities = "fast slow stable complex simple ancient modern central early late dense rare common strong weak".split(separator: " ").map(String.init)
    static let actions = "controls produces releases stores converts absorbs reduces increases explains shapes connects divides".split(separator: " ").map(String.init)

    /// About `bytes` bytes of Markdown notes.
    static func markdown(bytes: Int, seed: UInt64) -> String {
        var random = SeededGenerator(seed: seed)
        var text = "# Notes \(seed)\n\n"
        while text.utf8.count < bytes {
            let topic = term(&random)
            text += "## \(topic.capitalized)\n\n"
            for _ in 0..<Int.random(in: 2...5, using: &random) {
                text += (0..<Int.random(in: 3...8, using: &random)).map { _ in sentence(topic, &random) }.joined(separator: " ") + "\n\n"
            }
        }
        return text
    }

    /// Lines of plain text for a PDF page.
    static func page(lines: Int, seed: UInt64) -> [String] {
        var random = SeededGenerator(seed: seed)
        let topic = term(&random)
        var words: [String] = []
        while words.count < lines * 12 { words += sentence(topic, &random).split(separator: " ").map(String.init) }
        return (0..<lines).map { words[($0 * 12)..<($0 * 12 + 12)].joined(separator: " ") }
    }

    /// Terms drawn with a skew: a few recur everywhere, most are rare.
    private static func term(_ random: inout SeededGenerator) -> String {
        let u = Double.random(in: 0..<1, using: &random)
        return terms[min(terms.count - 1, Int(pow(Double(terms.count), u)) - 1)]
    }

    private static func sentence(_ topic: String, _ random: inout SeededGenerator) -> String {
        let (a, b) = (term(&random), term(&random))
        let quality = qualities.randomElement(using: &random)!, action = actions.randomElement(using: &random)!
        return switch Int.random(in: 0..<5, using: &random) {
        case 0: "\(topic.capitalized) is a \(quality) process that \(action) the \(a)."
        case 1: "The \(a) \(action) the \(b) because the \(topic) is \(quality)."
        case 2: "In a \(quality) \(a), the \(topic) \(action) the \(b) and the \(term(&random))."
        case 3: "Students often confuse the \(a) with the \(b) when the \(topic) is \(quality)."
        default: "The \(quality) \(a) of the \(topic) is called the \(b)."
        }
    }
}

/// A PDF with one page per entry of `pages` (lines of Helvetica text), written by hand: the
/// objects, the cross-reference table and the trailer.
enum BenchPDF {
    static func make(pages: [[String]]) -> Data {
        var objects: [String] = ["<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
        let pagesID = 2 + pages.count * 2
        var pageIDs: [Int] = []
        for lines in pages {
            let body = lines.map { "(" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "(", with: "\\(")
                .replacingOccurrences(of: ")", with: "\\)") + ") Tj T*" }.joined(separator: "\n")
            let stream = "BT /F1 10 Tf 50 760 Td 14 TL\n\(body)\nET"
            objects.append("<< /Length \(stream.utf8.count) >>\nstream\n\(stream)\nendstream")
            pageIDs.append(objects.count + 1)
            objects.append("<< /Type /Page /Parent \(pagesID) 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 1 0 R >> >> /Contents \(objects.count) 0 R >>")
        }
        objects.append("<< /Type /Pages /Kids [\(pageIDs.map { "\($0) 0 R" }.joined(separator: " "))] /Count \(pages.count) >>")
        objects.append("<< /Type /Catalog /Pages \(pagesID) 0 R >>")
        var out = "%PDF-1.4\n"
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(out.utf8.count)
            out += "\(index + 1) 0 obj\n\(object)\nendobj\n"
        }
        let xref = out.utf8.count
        out += "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n" + offsets.map { String(format: "%010d 00000 n \n", $0) }.joined()
        out += "trailer\n<< /Size \(objects.count + 1) /Root \(objects.count) 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        return Data(out.utf8)
    }
}
