import Bus
import Foundation
import Wire

/// SRT and WebVTT transcripts: each cue becomes a timed block, so chunks carry the start of
/// their first cue and the end of their last. Cue numbers, VTT headers, NOTE/STYLE/REGION
/// blocks, cue settings and inline tags (`<i>`, `<v Speaker>`, `{\an8}`) are left out.
enum SubtitleExtractor {
    static func extract(_ text: String, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        var builder = DocumentBuilder()
        var cues = 0, lastEnd = 0.0
        for block in TextLines.paragraphs(TextLines.lines(Array(text.utf8))) {
            try budget.checkpoint()
            let lines = block.map { String(decoding: $0, as: UTF8.self) }
            guard let timing = lines.firstIndex(where: { $0.contains("-->") }) else { continue }
            let first = lines[0].trimmingCharacters(in: .whitespaces)
            if first.hasPrefix("NOTE") || first.hasPrefix("STYLE") || first.hasPrefix("REGION") { continue }
            guard let cue = times(lines[timing]) else { continue }
            let words = lines[(timing + 1)...].map(stripTags).joined(separator: "\n")
            builder.cue(words, start: cue.start, end: cue.end)
            lastEnd = max(lastEnd, cue.end)
            cues += 1
        }
        guard cues > 0 else {
            throw .invalidArgument(
                "no subtitle cues found in '\(fileName)'; SRT and VTT cues need timing lines such as 00:00:01,000 --> 00:00:04,000")
        }
        builder.document.durationSeconds = lastEnd
        return builder.build()
    }

    /// `00:01:02,500 --> 00:01:05.000 align:start` -> (62.5, 65).
    static func times(_ line: String) -> (start: Double, end: Double)? {
        let parts = line.components(separatedBy: "-->")
        guard parts.count == 2, let start = seconds(parts[0]),
              let end = seconds(String(parts[1].trimmingCharacters(in: .whitespaces).prefix { !$0.isWhitespace })) else { return nil }
        return (start, max(start, end))
    }

    /// `01:02:03,456`, `02:03.456` or `1:02:03.4` in seconds: ASCII digits only, minutes and
    /// seconds below 60 after the first field, at most ``DocumentValues/maximumMediaSeconds``
    /// in all; nil for anything else (`1e308`, `inf`, `-5`, `00:99`), so such a line is no cue.
    static func seconds(_ text: String) -> Double? {
        let fields = Array(text.trimmingCharacters(in: .whitespaces).utf8).split(separator: 0x3A, omittingEmptySubsequences: false)
        guard (2...3).contains(fields.count) else { return nil }
        var whole = 0
        for (index, field) in fields.dropLast().enumerated() {
            guard let value = digits(field), index == 0 || value < 60 else { return nil }
            whole = whole * 60 + value
        }
        let last = fields[fields.count - 1]
        let separator = last.firstIndex { $0 == 0x2C || $0 == 0x2E }
        guard let seconds = digits(last[..<(separator ?? last.endIndex)]), seconds < 60 else { return nil }
        var total = Double(whole * 60 + seconds)
        if let separator {
            let fraction = last[(separator + 1)...]
            guard let value = digits(fraction) else { return nil }
            total += Double(value) / pow(10, Double(fraction.count))
        }
        return total <= DocumentValues.maximumMediaSeconds ? total : nil
    }

    /// 1 to 9 ASCII digits as a number.
    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard (1...9).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// The text of a cue line without `<…>` tags, `{…}` override codes and character references.
    static func stripTags(_ line: String) -> String {
        var out = "", skipUntil: Character?
        // Whether a `}` follows, looked up once per line (not once per `{`).
        let lastClosingBrace = line.lastIndex(of: "}")
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if let end = skipUntil {
                if character == end { skipUntil = nil }
            } else if character == "<" {
                skipUntil = ">"
            } else if character == "{", let closing = lastClosingBrace, closing > index {
                skipUntil = "}"
            } else {
                out.append(character)
            }
            index = line.index(after: index)
        }
        return HTMLEntities.decoded(out)
    }
}
