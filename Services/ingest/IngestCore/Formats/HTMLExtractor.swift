import Foundation
import Wire

/// HTML: the text without markup, scripts or styles; `h1`…`h6` become headings, block elements
/// (paragraphs, list items, table rows, …) paragraphs, `<title>` the document's title. A
/// forgiving one-pass scanner, since real pages are rarely well-formed XML.
enum HTMLExtractor {
    /// - Parameter charset: the charset named outside the page (the HTTP answer's or e-mail
    ///   part's `Content-Type`), which wins over the page's own `<meta>` as in a browser.
    static func extract(_ data: Data, charset: String? = nil, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        let text = TextDecoding.decode(data, charset: charset ?? declaredCharset(data))
        var scanner = Scanner(bytes: Array(text.utf8), budget: budget)
        try scanner.run()
        var builder = scanner.builder
        if let title = scanner.title, !title.isEmpty { builder.document.title = title }
        return builder.build()
    }

    /// The `charset` of a `<meta>` in the first kilobytes, if any.
    static func declaredCharset(_ data: Data) -> String? {
        let head = String(decoding: data.prefix(2048), as: UTF8.self).lowercased()
        guard let range = head.range(of: "charset=") else { return nil }
        let value = head[range.upperBound...].drop { $0 == "\"" || $0 == "'" }
        return String(value.prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }

    /// Elements whose content is never text.
    static let skipped: Set<String> = ["script", "style", "template", "noscript", "svg", "math", "iframe", "object", "canvas"]
    /// Elements that begin and end a paragraph.
    static let blocks: Set<String> = [
        "p", "div", "section", "article", "header", "footer", "main", "aside", "nav", "ul", "ol", "li", "dl", "dt", "dd", "table",
        "thead", "tbody", "tfoot", "tr", "caption", "blockquote", "pre", "figure", "figcaption", "form", "fieldset", "address",
        "hr", "body", "html", "details", "summary",
    ]

    /// One pass over the page: every byte is looked at a bounded number of times (a search for
    /// an end tag jumps past what it searched), nothing recurses.
    private struct Scanner {
        let bytes: [UInt8]
        let budget: ExtractionBudget
        var builder = DocumentBuilder()
        var title: String?
        private var index = 0
        private var paragraph: [UInt8] = []
        private var heading: Int?
        private var preformatted = 0
        /// Inside `<head>`: nothing but the title is text.
        private var inHead = false

        init(bytes: [UInt8], budget: ExtractionBudget) {
            self.bytes = bytes
            self.budget = budget
        }

        mutating func run() throws(BusError) {
            var steps = 0
            while index < bytes.count {
                steps &+= 1
                if steps & 0xFFFF == 0 { try budget.checkpoint() }
                let byte = bytes[index]
                if byte == 0x3C {
                    tag()
                } else if byte == 0x26 {
                    entity()
                } else {
                    character(byte)
                    index += 1
                }
            }
            flush()
        }

        private mutating func character(_ byte: UInt8) {
            guard !inHead else { return }
            let isSpace = byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 || byte == 0x0C
            if preformatted > 0 || !isSpace {
                paragraph.append(byte)
            } else if let last = paragraph.last, last != 0x20, last != 0x0A {
                paragraph.append(0x20)
            }
        }

        private mutating func flush() {
            let text = String(decoding: paragraph, as: UTF8.self)
            paragraph = []
            if let level = heading {
                builder.heading(text, level: level)
            } else {
                builder.paragraph(text)
            }
        }

        private mutating func tag() {
            if starts(with: "<!--") {
                index = find("-->").map { $0 + 3 } ?? bytes.count
                return
            }
            if starts(with: "<!") || starts(with: "<?") {
                index = find(">").map { $0 + 1 } ?? bytes.count
                return
            }
            var cursor = index + 1
            let closing = cursor < bytes.count && bytes[cursor] == 0x2F
            if closing { cursor += 1 }
            let nameStart = cursor
            while cursor < bytes.count, isNameByte(bytes[cursor]) { cursor += 1 }
            guard cursor > nameStart else {
                // A lone "<" (as in "a < b") is text.
                character(0x3C)
                index += 1
                return
            }
            let name = String(decoding: bytes[nameStart..<cursor], as: UTF8.self).lowercased()
            index = endOfTag(from: cursor)
            handle(name, closing: closing)
        }

        private mutating func handle(_ name: String, closing: Bool) {
            if name == "title", !closing {
                let end = find("</", caseInsensitiveName: "title") ?? bytes.count
                title = String(decoding: DocumentBuilder.singleLine(decodeEntities(bytes[index..<end])), as: UTF8.self)
                index = end
                return
            }
            if name == "head" || name == "body" {
                inHead = name == "head" && !closing
            }
            if HTMLExtractor.skipped.contains(name), !closing {
                index = find("</", caseInsensitiveName: name).map { endOfTag(from: $0) } ?? bytes.count
                return
            }
            if name.count == 2, name.first == "h", let level = Int(String(name.last!)), (1...6).contains(level) {
                flush()
                heading = closing ? nil : level
            } else if HTMLExtractor.blocks.contains(name) {
                flush()
                if name == "pre" { preformatted = max(0, preformatted + (closing ? -1 : 1)) }
            } else if name == "br" {
                paragraph.append(0x0A)
            } else if name == "td" || name == "th", !closing, !paragraph.isEmpty {
                paragraph.append(0x20)
            }
        }

        private mutating func entity() {
            if let (decoded, end) = HTMLEntities.reference(in: bytes, at: index) {
                for byte in decoded.utf8 { character(byte) }
                index = end
            } else {
                character(0x26)
                index += 1
            }
        }

        /// The text of `slice` (a title) with its character references decoded and tags dropped
        /// (cut short if the job is cancelled meanwhile: the main loop's next checkpoint stops it).
        private func decodeEntities(_ slice: ArraySlice<UInt8>) -> String {
            var scanner = Scanner(bytes: Array(slice), budget: budget)
            scanner.preformatted = 1
            try? scanner.run()
            return scanner.builder.build().string
        }

        /// The index after the `>` that ends the tag whose attributes start at `cursor`
        /// (quoted attribute values may hold `>`).
        private func endOfTag(from cursor: Int) -> Int {
            var cursor = cursor, quote: UInt8?
            while cursor < bytes.count {
                let byte = bytes[cursor]
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == 0x22 || byte == 0x27 {
                    quote = byte
                } else if byte == 0x3E {
                    return cursor + 1
                }
                cursor += 1
            }
            return bytes.count
        }

        private func starts(with literal: String) -> Bool {
            bytes[index...].starts(with: literal.utf8)
        }

        private func find(_ literal: String) -> Int? {
            let pattern = Array(literal.utf8)
            var cursor = index
            while cursor + pattern.count <= bytes.count {
                if bytes[cursor] == pattern[0], bytes[cursor..<(cursor + pattern.count)].elementsEqual(pattern) { return cursor }
                cursor += 1
            }
            return nil
        }

        /// The index of `</name` (any case) from the current position.
        private func find(_ prefix: String, caseInsensitiveName name: String) -> Int? {
            let pattern = Array((prefix + name).utf8)
            var cursor = index
            while cursor + pattern.count <= bytes.count {
                if bytes[cursor] == 0x3C, zip(bytes[cursor..<(cursor + pattern.count)], pattern).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) {
                    let after = cursor + pattern.count
                    if after >= bytes.count || !isNameByte(bytes[after]) { return cursor }
                }
                cursor += 1
            }
            return nil
        }

        private func isNameByte(_ byte: UInt8) -> Bool {
            (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x3A
        }
    }
}
