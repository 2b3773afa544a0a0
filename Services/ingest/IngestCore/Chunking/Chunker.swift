import Bus
import Contracts
import Foundation
import Wire

/// One chunk of a document: a stretch of its text and where that came from.
struct Chunk: Sendable, Equatable {
    var ordinal: Int
    /// The chunk's bytes in the document's UTF-8 text.
    var bytes: Range<Int>
    /// Offsets in the document's text, in Unicode scalars (end exclusive), as the store keeps them.
    var startOffset: Int
    var endOffset: Int
    var text: String
    var page: Int?
    var startSeconds: Double?
    var endSeconds: Double?
    /// The heading the chunk sits under.
    var section: String?
}

/// Cuts a document into chunks of about `targetCharacters`, sentence- and paragraph-aware.
///
/// - Parts that must stay apart never share a chunk: a heading starts a new chunk (with its
///   section under it), and so do a new page, an e-mail attachment, and the switch between
///   timed cues and untimed text.
/// - Within a part a chunk ends at the strongest break in the last half of its window: the end
///   of a paragraph (or cue), else of a sentence, else of a line, else of a word. It never ends
///   inside a word; only a single word longer than the store's chunk limit (100,000 characters)
///   is cut.
/// - The next chunk repeats up to `overlapCharacters` of the end of the previous one, starting
///   at a sentence if one starts in that stretch, else at a word.
/// - Deterministic, and linear in the text's length: each byte is looked at a bounded number of
///   times (the window moves on by at least half its size less the overlap, a quarter at most).
enum Chunker {
    /// The store's limit on one chunk's text.
    static let hardLimit = StoreLimits.textLength

    /// The chunks of `document`; if there would be more than `maxChunks`, the target size is
    /// doubled until they fit.
    /// - Throws: `INVALID_ARGUMENT` when even chunks of the store's largest size are too many.
    static func chunks(of document: ExtractedDocument, settings: ChunkingSettings, maxChunks: Int = StoreLimits.chunksPerPut) throws(BusError) -> [Chunk] {
        var settings = settings
        while true {
            let result = cut(document, settings: settings, stopAfter: maxChunks)
            if result.count <= maxChunks { return result }
            guard settings.targetCharacters * 2 <= hardLimit else {
                throw .invalidArgument(
                    "the document has too many parts: it would make more than \(maxChunks) chunks, the most one material holds; split the file")
            }
            settings.targetCharacters *= 2
            settings.overlapCharacters *= 2
        }
    }

    /// The chunks with exactly these settings; stops once there are more than `stopAfter`.
    static func cut(_ document: ExtractedDocument, settings: ChunkingSettings, stopAfter: Int = .max) -> [Chunk] {
        var cutter = Cutter(text: document.text, target: max(1, settings.targetCharacters), overlap: max(0, settings.overlapCharacters))
        var chunks: [Chunk] = []
        var blockCursor = 0
        for part in parts(document.blocks) {
            let end = document.blocks[part.upperBound - 1].bytes.upperBound
            var start = document.blocks[part.lowerBound].bytes.lowerBound
            while start < end {
                let (cut, next) = cutter.cut(from: start, partEnd: end)
                let (startOffset, endOffset) = cutter.scalarOffsets(start, cut)
                while blockCursor + 1 < document.blocks.count, document.blocks[blockCursor + 1].bytes.lowerBound <= start { blockCursor += 1 }
                var last = blockCursor
                while last + 1 < part.upperBound, document.blocks[last + 1].bytes.lowerBound < cut { last += 1 }
                let first = document.blocks[blockCursor]
                // Under a title and a subtitle, the chunk belongs to the subtitle's section.
                let body = document.blocks[blockCursor...last].first { !isHeading($0) } ?? first
                chunks.append(Chunk(
                    ordinal: chunks.count, bytes: start..<cut, startOffset: startOffset, endOffset: endOffset,
                    text: String(decoding: document.text[start..<cut], as: UTF8.self), page: first.page,
                    startSeconds: first.startSeconds, endSeconds: document.blocks[last].endSeconds ?? first.endSeconds,
                    section: body.section))
                if chunks.count > stopAfter { return chunks }
                start = next
            }
        }
        return chunks
    }

    /// Consecutive blocks that may share chunks.
    static func parts(_ blocks: [TextBlock]) -> [Range<Int>] {
        var parts: [Range<Int>] = []
        var start = 0
        for index in blocks.indices.dropFirst() {
            let (block, previous) = (blocks[index], blocks[index - 1])
            var startsPart = block.breakBefore || block.page != previous.page || (block.kind == .cue) != (previous.kind == .cue)
            // A heading opens its section's chunk, unless it follows a heading (a title and a
            // first subtitle stay together rather than making a chunk of headings alone).
            if case .heading = block.kind, !isHeading(previous) { startsPart = true }
            if startsPart {
                parts.append(start..<index)
                start = index
            }
        }
        if !blocks.isEmpty { parts.append(start..<blocks.count) }
        return parts
    }

    private static func isHeading(_ block: TextBlock) -> Bool {
        if case .heading = block.kind { return true }
        return false
    }
}

/// The byte-level work of the chunker over one document's UTF-8 text.
private struct Cutter {
    let text: [UInt8]
    let target: Int
    let overlap: Int
    /// The last chunk start whose scalar offset is known, to count on from it.
    private var knownByte = 0
    private var knownScalar = 0
    private var lastCut = 0

    init(text: [UInt8], target: Int, overlap: Int) {
        self.text = text
        self.target = target
        self.overlap = overlap
    }

    /// Where the chunk starting at `start` ends, and where the next one starts.
    mutating func cut(from start: Int, partEnd: Int) -> (cut: Int, next: Int) {
        // Walk `target` scalars forward; note where half of them lie.
        var position = start, scalars = 0, half = start
        while position < partEnd, scalars < target {
            position += 1
            while position < partEnd, isContinuation(text[position]) { position += 1 }
            scalars += 1
            if scalars == target / 2 { half = position }
        }
        if position >= partEnd { return (partEnd, partEnd) }
        let windowEnd = position
        // A chunk ends after the previous one (overlapping chunks must not end where it did).
        let floor = min(max(start, lastCut), windowEnd)
        let middle = min(max(half, floor), windowEnd)
        let end = bestBreak(in: middle..<windowEnd) ?? bestBreak(in: floor..<middle)
            ?? nextBreak(after: windowEnd, partEnd: partEnd, start: start)
        lastCut = end
        return (end, nextStart(after: end, chunkStart: start, partEnd: partEnd))
    }

    /// The scalar offsets of `start` and `end` (starts only move forward between calls).
    mutating func scalarOffsets(_ start: Int, _ end: Int) -> (Int, Int) {
        knownScalar += scalarCount(knownByte..<start)
        knownByte = start
        return (knownScalar, knownScalar + scalarCount(start..<end))
    }

    // MARK: Breaks

    /// The latest of the strongest breaks (ends of a word followed by white space) in
    /// `range`, its lower bound excluded.
    private func bestBreak(in range: Range<Int>) -> Int? {
        var best: (position: Int, strength: Int)?
        var position = range.upperBound
        while position > range.lowerBound {
            if isSpace(text[position]), !isSpace(text[position - 1]) {
                let strength = self.strength(at: position)
                if strength == 3 { return position }
                if best == nil || strength > best!.strength { best = (position, strength) }
            }
            position -= 1
        }
        return best?.position
    }

    /// For a word longer than the window: the end of that word, or the store's limit.
    private func nextBreak(after position: Int, partEnd: Int, start: Int) -> Int {
        var position = position, scalars = scalarCount(start..<position)
        while position < partEnd, !isSpace(text[position]) {
            if scalars >= Chunker.hardLimit { return position }
            position += 1
            while position < partEnd, isContinuation(text[position]) { position += 1 }
            scalars += 1
        }
        return position
    }

    /// Where the chunk after one ending at `end` starts: within the last `overlap` scalars at
    /// the first sentence start, else the first word start; else after the break.
    private func nextStart(after end: Int, chunkStart: Int, partEnd: Int) -> Int {
        let afterBreak = skipSpace(from: end, partEnd: partEnd)
        guard overlap > 0, afterBreak < partEnd else { return afterBreak }
        var low = end, scalars = 0
        while low > chunkStart, scalars < overlap {
            low -= 1
            while low > chunkStart, isContinuation(text[low]) { low -= 1 }
            scalars += 1
        }
        // Keep moving: the next chunk starts in the second half of this one at the earliest.
        low = max(low, chunkStart + (end - chunkStart) / 2 + 1)
        var firstWord: Int?
        var position = low
        while position < end {
            if isSpace(text[position - 1]), !isSpace(text[position]) {
                if firstWord == nil { firstWord = position }
                if let breakAt = spaceRunStart(before: position), strength(at: breakAt) >= 2 { return position }
            }
            position += 1
        }
        return firstWord ?? afterBreak
    }

    /// How good a break the white space starting at `position` is: 3 paragraph (a blank line),
    /// 2 sentence end, 1 line end, 0 word end.
    private func strength(at position: Int) -> Int {
        var newlines = 0, index = position
        while index < text.count, isSpace(text[index]) {
            if text[index] == 0x0A { newlines += 1 }
            index += 1
        }
        if newlines >= 2 || index == text.count { return 3 }
        if endsSentence(before: position, next: index < text.count ? text[index] : nil) { return 2 }
        return newlines == 1 ? 1 : 0
    }

    private func spaceRunStart(before wordStart: Int) -> Int? {
        var index = wordStart
        while index > 0, isSpace(text[index - 1]) { index -= 1 }
        return index > 0 ? index : nil
    }

    private func skipSpace(from position: Int, partEnd: Int) -> Int {
        var position = position
        while position < partEnd, isSpace(text[position]) { position += 1 }
        return position
    }

    // MARK: Sentences

    /// Whether the word ending at `end` ends a sentence: `.`, `!`, `?`, `…` or CJK full stops,
    /// maybe followed by closing quotes or brackets — but not an abbreviation or initial, and
    /// not when the next word starts in lower case.
    private func endsSentence(before end: Int, next: UInt8?) -> Bool {
        if let next, next >= 0x61, next <= 0x7A { return false }
        var index = end
        // Closing quotes and brackets: " ' ) ] » ” ’
        for _ in 0..<3 {
            if index > 0, [0x22, 0x27, 0x29, 0x5D].contains(text[index - 1]) {
                index -= 1
            } else if index > 1, text[index - 2] == 0xC2, text[index - 1] == 0xBB {
                index -= 2
            } else if index > 2, text[index - 3] == 0xE2, text[index - 2] == 0x80, text[index - 1] == 0x9D || text[index - 1] == 0x99 {
                index -= 3
            } else {
                break
            }
        }
        guard index > 0 else { return false }
        switch text[index - 1] {
        case 0x21, 0x3F: return true  // ! ?
        case 0x2E: return !isAbbreviation(endingAt: index - 1)
        default: break
        }
        guard index > 2 else { return false }
        let tail = (text[index - 3], text[index - 2], text[index - 1])
        return tail == (0xE2, 0x80, 0xA6) || tail == (0xE3, 0x80, 0x82) || tail == (0xEF, 0xBC, 0x81) || tail == (0xEF, 0xBC, 0x9F)
    }

    /// A single letter ("J."), a word with inner dots ("e.g."), or a common abbreviation.
    private func isAbbreviation(endingAt dot: Int) -> Bool {
        var start = dot
        while start > 0, dot - start < 12, isLetterOrDot(text[start - 1]) { start -= 1 }
        let word = text[start..<dot]
        if word.count == 1 || word.contains(0x2E) { return true }
        guard word.count <= 6 else { return false }
        return Self.abbreviations.contains(String(decoding: word, as: UTF8.self).lowercased())
    }

    private static let abbreviations: Set<String> = [
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "fig", "figs", "no", "vol", "pp", "cf", "approx", "ca",
        "dept", "univ", "inc", "ltd", "co", "sig", "dott", "ing", "avv", "ecc", "pag", "cap", "art", "es", "nr",
    ]

    // MARK: Bytes

    private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D || byte == 0x0C || byte == 0x0B }
    private func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }
    private func isLetterOrDot(_ byte: UInt8) -> Bool { byte == 0x2E || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) }

    private func scalarCount(_ range: Range<Int>) -> Int {
        var count = 0
        for index in range where !isContinuation(text[index]) { count += 1 }
        return count
    }
}
