/// Line-level helpers over UTF-8 bytes (fast on megabytes, unlike Character-by-Character work).
enum TextLines {
    /// The lines of `bytes`, split at `\n`, `\r\n` or `\r`, without their line ends.
    static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0, index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x0A || byte == 0x0D {
                lines.append(bytes[start..<index])
                if byte == 0x0D, index + 1 < bytes.count, bytes[index + 1] == 0x0A { index += 1 }
                start = index + 1
            }
            index += 1
        }
        if start < bytes.count { lines.append(bytes[start..<bytes.count]) }
        return lines
    }

    /// True for a line of nothing but spaces and tabs (or a form feed).
    static func isBlank(_ line: ArraySlice<UInt8>) -> Bool {
        line.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0C || $0 == 0x0B }
    }

    /// Groups of consecutive non-blank lines: the paragraphs of plain text.
    static func paragraphs(_ lines: [ArraySlice<UInt8>]) -> [[ArraySlice<UInt8>]] {
        var paragraphs: [[ArraySlice<UInt8>]] = []
        var current: [ArraySlice<UInt8>] = []
        for line in lines {
            if isBlank(line) {
                if !current.isEmpty { paragraphs.append(current) }
                current = []
            } else {
                current.append(line)
            }
        }
        if !current.isEmpty { paragraphs.append(current) }
        return paragraphs
    }

    /// Lines joined with `\n`.
    static func joined(_ lines: [ArraySlice<UInt8>]) -> [UInt8] {
        var out: [UInt8] = []
        for line in lines {
            if !out.isEmpty { out.append(0x0A) }
            out.append(contentsOf: line)
        }
        return out
    }

    /// Lines of a laid-out page (PDF, OCR) joined back into running text: a line break is a
    /// space, and a word hyphenated at the end of a line ("photo-" + "synthesis") is whole again.
    /// A short line without closing punctuation before a capitalized one (a title over its
    /// text) keeps its line break, so the title stays a line of its own.
    static func unwrapped(_ lines: [ArraySlice<UInt8>]) -> [UInt8] {
        var out: [UInt8] = []
        var previousWords = 0
        for line in lines {
            let trimmed = line.drop { $0 == 0x20 || $0 == 0x09 }
            guard !trimmed.isEmpty else { continue }
            if let last = out.last {
                let first = trimmed.first!
                if last == 0x2D, out.count >= 2, isLetter(out[out.count - 2]), isLower(first) {
                    out.removeLast()
                } else if previousWords <= 8, !Self.closing.contains(last), isUpper(first) {
                    out.append(0x0A)
                } else if last != 0x20 {
                    out.append(0x20)
                }
            }
            var end = trimmed.endIndex
            while end > trimmed.startIndex, trimmed[end - 1] == 0x20 || trimmed[end - 1] == 0x09 { end -= 1 }
            let content = trimmed[trimmed.startIndex..<end]
            previousWords = content.split(separator: 0x20).count
            out.append(contentsOf: content)
        }
        return out
    }

    /// Bytes that end a sentence or a clause.
    private static let closing: Set<UInt8> = [0x2E, 0x2C, 0x3B, 0x3A, 0x21, 0x3F, 0x2D, 0x29, 0x22]

    private static func isLetter(_ byte: UInt8) -> Bool { byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A }
    private static func isLower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
    private static func isUpper(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }
}
