import Bus
import Foundation
import Wire

/// SRT and WebVTT transcripts: each cue becomes a timed block, so chunks carry the start of
/// their first cue and the end of their last. Cue numbers, VTT headers, NOTE/STYLE/REGION
/// blocks, cue settings and inline tags (`<i>`, `<v Speaker>`, `{\an8}`) are left out.
enum SubtitleExtractor {
    static func extract(_ text: String, fileName: String) throws(BusError) -> ExtractedDocument {
        var builder = DocumentBuilder()
        var cues = 0, lastEnd = 0.0
        for block in TextLines.paragraphs(TextLines.lines(Array(text.utf8))) {
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

    /// `01:02:03,456`, `02:03.456` or `1:02:03.4` in seconds.
    static func seconds(_ text: String) -> Double? {
        let fields = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: ".").split(separator: ":")
        guard (2...3).contains(fields.count) else { return nil }
        var total = 0.0
        for (index, field) in fields.enumerated() {
            guard let value = Double(field), value >= 0 else { return nil }
            if index < fields.count - 1, value != value.rounded() { return nil }
            total = total * 60 + value
        }
        return total
    }

    /// The text of a cue line without `<…>` tags, `{…}` override codes and character references.
    static func stripTags(_ line: String) -> String {
        var out = "", skipUntil: Character?
        for character in line {
            if let end = skipUntil {
                if character == end { skipUntil = nil }
            } else if character == "<" {
                skipUntil = ">"
            } else if character == "{", line.contains("}") {
                skipUntil = "}"
            } else {
                out.append(character)
            }
        }
        return HTMLEntities.decoded(out)
    }
}
