import Wire

/// Markdown: ATX (`# Title`) and setext (`Title` over `===`) headings become headings — chunk
/// boundaries and section titles; the first top-level heading is the document's title. Fenced
/// code stays verbatim; front matter is skipped; links, images and emphasis lose their markup.
enum MarkdownExtractor {
    static func extract(_ text: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        var builder = DocumentBuilder()
        var lines = TextLines.lines(Array(text.utf8))[...]
        skipFrontMatter(&lines)
        var paragraph: [ArraySlice<UInt8>] = []
        var fence: ArraySlice<UInt8>?

        func flush(_ builder: inout DocumentBuilder) {
            if !paragraph.isEmpty { builder.paragraph(utf8: MarkdownInline.plain(TextLines.joined(paragraph))) }
            paragraph = []
        }

        for line in lines {
            try budget.checkpoint()
            let content = line.drop(while: { $0 == 0x20 })
            let indent = line.count - content.count
            if let open = fence {
                paragraph.append(line)
                if indent < 4, content.starts(with: open) { fence = nil; flush(&builder) }
                continue
            }
            if indent < 4, let marker = fenceMarker(content) {
                flush(&builder)
                fence = marker
                paragraph.append(line)
                continue
            }
            if TextLines.isBlank(line) {
                flush(&builder)
            } else if indent < 4, let heading = atxHeading(content) {
                flush(&builder)
                addHeading(MarkdownInline.plain(Array(heading.title)), level: heading.level, &builder)
            } else if indent < 4, !paragraph.isEmpty, let level = setextLevel(content) {
                let title = MarkdownInline.plain(TextLines.joined(paragraph))
                paragraph = []
                addHeading(title, level: level, &builder)
            } else if indent < 4, isThematicBreak(content) {
                // A rule ends a paragraph (under one, `---` was taken as a heading above).
                flush(&builder)
            } else {
                paragraph.append(line)
            }
        }
        flush(&builder)
        return builder.build()
    }

    private static func addHeading(_ title: [UInt8], level: Int, _ builder: inout DocumentBuilder) {
        let text = String(decoding: title, as: UTF8.self)
        if builder.heading(text, level: level), level == 1, builder.document.title == nil {
            builder.document.title = String(decoding: DocumentBuilder.singleLine(text), as: UTF8.self)
        }
    }

    /// `---` … `---` (or `...`) at the very start: YAML metadata, not text.
    private static func skipFrontMatter(_ lines: inout ArraySlice<ArraySlice<UInt8>>) {
        guard let first = lines.first, first.elementsEqual("---".utf8) else { return }
        guard let end = lines.dropFirst().firstIndex(where: { $0.elementsEqual("---".utf8) || $0.elementsEqual("...".utf8) }) else { return }
        lines = lines[(end + 1)...]
    }

    /// "## Title ##" -> (2, "Title").
    private static func atxHeading(_ line: ArraySlice<UInt8>) -> (level: Int, title: ArraySlice<UInt8>)? {
        let level = line.prefix(while: { $0 == 0x23 }).count
        guard (1...6).contains(level) else { return nil }
        var rest = line.dropFirst(level)
        guard rest.isEmpty || rest.first == 0x20 || rest.first == 0x09 else { return nil }
        rest = rest.drop(while: { $0 == 0x20 || $0 == 0x09 })
        // A closing run of #s preceded by a space is not part of the title.
        var end = rest.endIndex
        while end > rest.startIndex, rest[end - 1] == 0x20 || rest[end - 1] == 0x09 { end -= 1 }
        var hashes = end
        while hashes > rest.startIndex, rest[hashes - 1] == 0x23 { hashes -= 1 }
        if hashes < end, hashes == rest.startIndex || rest[hashes - 1] == 0x20 { end = hashes }
        return (level, rest[rest.startIndex..<end])
    }

    /// `===` under a paragraph: level 1; `---`: level 2.
    private static func setextLevel(_ line: ArraySlice<UInt8>) -> Int? {
        let marks = line.prefix { $0 == 0x3D || $0 == 0x2D }
        guard let mark = marks.first, marks.allSatisfy({ $0 == mark }), line.dropFirst(marks.count).allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else {
            return nil
        }
        return mark == 0x3D ? 1 : 2
    }

    /// `---`, `***` or `___` (spaces allowed between): a horizontal rule.
    private static func isThematicBreak(_ line: ArraySlice<UInt8>) -> Bool {
        let marks = line.filter { $0 != 0x20 && $0 != 0x09 }
        guard let mark = marks.first, [0x2D, 0x2A, 0x5F].contains(mark) else { return false }
        return marks.count >= 3 && marks.allSatisfy { $0 == mark }
    }

    /// ``` or ~~~ (three or more) opening a code block: the run that closes it.
    private static func fenceMarker(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard let mark = line.first, mark == 0x60 || mark == 0x7E else { return nil }
        let run = line.prefix { $0 == mark }
        return run.count >= 3 ? run : nil
    }
}

/// Markdown's inline markup removed: `![alt](src)` -> alt, `[text](url)` and `[text][ref]` ->
/// text, `**`, `__` and backticks dropped. Single `*` and `_` stay (they are often maths or names).
///
/// Linear: the brackets a link needs are looked for through ``ForwardSearch``, which remembers
/// where the last search ended, so a line of ten thousand `[` is not searched ten thousand times.
enum MarkdownInline {
    /// How far a link's `]` may be from its `[`, and its `)` from the `]`.
    static let maximumLabel = 500, maximumTarget = 2000

    static func plain(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var closingBracket = ForwardSearch([0x5D]), closingParenthesis = ForwardSearch([0x29]), closingReference = ForwardSearch([0x5D])
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            let opening = byte == 0x21 && index + 1 < bytes.count && bytes[index + 1] == 0x5B ? index + 1 : index
            if bytes[opening] == 0x5B,
               let close = closingBracket.find(in: bytes, from: opening + 1), close - opening <= maximumLabel, close + 1 < bytes.count,
               bytes[close + 1] == 0x28 || bytes[close + 1] == 0x5B {
                let end = bytes[close + 1] == 0x28
                    ? closingParenthesis.find(in: bytes, from: close + 2) : closingReference.find(in: bytes, from: close + 2)
                if let end, end - (close + 2) < maximumTarget {
                    out.append(contentsOf: bytes[(opening + 1)..<close])
                    index = end + 1
                    continue
                }
            }
            if (byte == 0x2A || byte == 0x5F), index + 1 < bytes.count, bytes[index + 1] == byte {
                index += 2
            } else if byte == 0x60 {
                index += 1
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }
}
