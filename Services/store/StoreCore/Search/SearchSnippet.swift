import Contracts
import GRDB
import GRDBSQLite

/// `search`'s snippets, made in time linear in the entry's text and matches.
///
/// FTS5's own `snippet()` scores every match against every other (quadratic: an entry that
/// repeats the searched word 4,000 times took half a second per hit, and a chunk may hold
/// 50,000), and `highlight()` copies its whole output for every match. This FTS5 auxiliary function,
/// `studybus_snippet(search_index)`, reads the matches once, picks the window of
/// ``windowTokens`` tokens that holds the most different query terms (then the most matches),
/// and writes that window's text with the matches between ``SnippetMarkers``' sentinels,
/// with `…` where text was left out. ``SnippetMarkers/render(_:)`` then cuts it to size.
enum SearchSnippet {
    static let functionName = "studybus_snippet"
    /// Tokens in a snippet, as FTS5's `snippet()` was asked for.
    static let windowTokens: Int32 = 16
    /// The indexed columns a snippet may come from: title and body (not scope).
    static let columns: Int32 = 2

    /// Prepares `sql` (which calls the function) on `db`, registering the function on this
    /// connection first if it is not yet: FTS5 functions live per connection, and adding one
    /// twice would keep both.
    static func statement(_ db: Database, sql: String) throws -> Statement {
        do {
            return try db.cachedStatement(sql: sql)
        } catch let error as DatabaseError where error.message?.contains("no such function: \(functionName)") == true {
            let api = FTS5.api(db)
            let code = api.pointee.xCreateFunction!(UnsafeMutablePointer(mutating: api), functionName, nil, snippetFunction, nil)
            guard code == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "cannot add \(functionName)") }
            return try db.cachedStatement(sql: sql)
        }
    }
}

/// The caller's highlight markers, put into ``SearchSnippet``'s snippets cut to size: a
/// hit's snippet holds at most ``StoreLimits/snippetLength`` characters of text and
/// ``StoreLimits/snippetHighlights`` highlighted matches, whatever the markers and the text.
struct SnippetMarkers {
    /// What ``SearchSnippet`` writes around matches: Unicode noncharacters, which text people
    /// type does not hold. One stored in an entry reads as a marker, which moves only the
    /// highlights of the user's own text and is counted like any other.
    static let openSentinel = Unicode.Scalar(UInt32(0xFDD0))!
    static let closeSentinel = Unicode.Scalar(UInt32(0xFDD1))!

    let open: String
    let close: String

    /// `snippet` with the sentinels replaced by the markers (unpaired ones and matches past the
    /// limit dropped), cut with `…` after ``StoreLimits/snippetLength`` characters.
    func render(_ snippet: String) -> String {
        let textLength = snippet.unicodeScalars.count { $0 != Self.openSentinel && $0 != Self.closeSentinel }
        let kept = textLength > StoreLimits.snippetLength ? StoreLimits.snippetLength - 1 : textLength
        var result = String.UnicodeScalarView()
        var written = 0, highlights = 0, inside = false
        for scalar in snippet.unicodeScalars {
            if scalar == Self.openSentinel {
                guard !inside, highlights < StoreLimits.snippetHighlights, written < kept else { continue }
                inside = true
                highlights += 1
                result.append(contentsOf: open.unicodeScalars)
            } else if scalar == Self.closeSentinel {
                guard inside else { continue }
                inside = false
                result.append(contentsOf: close.unicodeScalars)
            } else if written < kept {
                result.append(scalar)
                written += 1
            } else {
                break
            }
        }
        if inside { result.append(contentsOf: close.unicodeScalars) }
        if kept < textLength { result.append("…") }
        return String(result)
    }

    /// `text` cut with `…` after ``StoreLimits/titleLength`` characters (a card's front may be longer).
    static func cut(_ text: String) -> String {
        guard text.unicodeScalars.count > StoreLimits.titleLength else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.prefix(StoreLimits.titleLength - 1))) + "…"
    }
}

/// A match: where it starts (token index in its column), how many tokens, which query term.
private struct Match {
    var column: Int32
    var offset: Int32
    var size: Int32
    var phrase: Int32
}

/// The byte ranges of the window's tokens, filled by the tokenizer's callback.
private struct WindowTokens {
    let first: Int32
    let end: Int32
    var index: Int32 = 0
    var ranges: [(start: Int32, end: Int32)] = []
    /// Whether the text has tokens after the window.
    var more = false
}

private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

private let snippetFunction: fts5_extension_function = { api, fts, context, _, _ in
    guard let api = api?.pointee, let fts, let context else { return }
    var code = SQLITE_OK
    defer { if code != SQLITE_OK { sqlite3_result_error_code(context, code) } }

    // The matches, in order of column then offset (as FTS5 keeps them).
    var count: Int32 = 0
    code = api.xInstCount!(fts, &count)
    guard code == SQLITE_OK else { return }
    var matches: [Match] = []
    matches.reserveCapacity(Int(count))
    for index in 0..<count {
        var phrase: Int32 = 0, column: Int32 = 0, offset: Int32 = 0
        code = api.xInst!(fts, index, &phrase, &column, &offset)
        guard code == SQLITE_OK else { return }
        guard column < SearchSnippet.columns else { continue }
        matches.append(Match(column: column, offset: offset, size: max(1, api.xPhraseSize!(fts, phrase)), phrase: phrase))
    }

    // The best window: two pointers over each column's matches, counting terms in the window.
    var best = (score: -1, column: Int32(1), start: Int32(0))
    var termCounts = [Int](repeating: 0, count: Int(max(0, api.xPhraseCount!(fts))))
    var terms = 0, low = 0
    for high in matches.indices {
        let match = matches[high]
        // Keeps the matches of the window starting at matches[low] that the current one ends in.
        while low < high, matches[low].column != match.column || matches[low].offset + SearchSnippet.windowTokens <= match.offset + match.size - 1 {
            termCounts[Int(matches[low].phrase)] -= 1
            if termCounts[Int(matches[low].phrase)] == 0 { terms -= 1 }
            low += 1
        }
        termCounts[Int(match.phrase)] += 1
        if termCounts[Int(match.phrase)] == 1 { terms += 1 }
        let score = terms * 1_000_000 + (high - low + 1)
        if score > best.score { best = (score, match.column, matches[low].offset) }
    }
    // Up to two tokens before the first match, as long as the window's last match stays whole.
    if let last = matches.last(where: { $0.column == best.column && $0.offset < best.start + SearchSnippet.windowTokens }) {
        best.start = max(0, best.start - 2, min(best.start, last.offset + last.size - SearchSnippet.windowTokens))
    }

    var text: UnsafePointer<CChar>?
    var length: Int32 = 0
    code = api.xColumnText!(fts, best.column, &text, &length)
    guard code == SQLITE_OK, let text, length > 0 else {
        code = SQLITE_OK
        sqlite3_result_text(context, "", 0, transient)
        return
    }
    var window = WindowTokens(first: best.start, end: best.start + SearchSnippet.windowTokens)
    code = withUnsafeMutablePointer(to: &window) { pointer in
        api.xTokenize!(fts, text, length, pointer) { state, flags, _, _, start, end in
            let window = state!.assumingMemoryBound(to: WindowTokens.self)
            if flags & FTS5_TOKEN_COLOCATED != 0 { return SQLITE_OK }
            defer { window.pointee.index += 1 }
            if window.pointee.index >= window.pointee.end {
                window.pointee.more = true
                return SQLITE_DONE  // the rest of the text is not needed
            }
            if window.pointee.index >= window.pointee.first { window.pointee.ranges.append((start, end)) }
            return SQLITE_OK
        }
    }
    if code == SQLITE_DONE { code = SQLITE_OK }
    guard code == SQLITE_OK else { return }

    // The window's text, from the start of the text if the window starts there, to its end if
    // no token follows; matches between the sentinels.
    let bytes = UnsafeRawBufferPointer(start: text, count: Int(length))
    let open = Array(String(SnippetMarkers.openSentinel).utf8), close = Array(String(SnippetMarkers.closeSentinel).utf8)
    var result: [UInt8] = []
    var position = window.first == 0 ? 0 : min(max(0, Int(window.ranges.first?.start ?? 0)), bytes.count)
    if position > 0 { result += Array("…".utf8) }
    var next = matches.firstIndex { $0.column == best.column && $0.offset >= window.first } ?? matches.endIndex
    var highlightedUntil: Int32 = -1
    for (step, range) in window.ranges.enumerated() {
        let token = window.first + Int32(step)
        // The tokenizer's offsets are in order and within the text; clamped all the same, as a
        // slice out of range would end the process.
        let start = min(max(position, Int(range.start)), bytes.count), end = min(max(start, Int(range.end)), bytes.count)
        result += bytes[position..<start]
        if highlightedUntil < token, next < matches.endIndex, matches[next].column == best.column, matches[next].offset == token {
            result += open
        }
        while next < matches.endIndex, matches[next].column == best.column, matches[next].offset <= token {
            highlightedUntil = max(highlightedUntil, matches[next].offset + matches[next].size - 1)
            next += 1
        }
        result += bytes[start..<end]
        if token == highlightedUntil || (token == window.first + Int32(window.ranges.count) - 1 && highlightedUntil >= token) {
            result += close
            highlightedUntil = -1
        }
        position = end
    }
    if window.more {
        result += Array("…".utf8)
    } else {
        result += bytes[position...]
    }
    result.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { sqlite3_result_text(context, $0.baseAddress, Int32($0.count), transient) }
    }
}
