import Foundation
import Wire

/// One part of an Internet message (RFC 5322 headers, RFC 2045–2047 MIME): its headers and
/// body, a multipart's parts with it (``MIMEParser`` reads them all in one pass).
struct MIMEPart {
    /// Header names in lower case, values unfolded; the first of repeated headers.
    let headers: [String: String]
    /// The body, still in its transfer encoding.
    let body: ArraySlice<UInt8>
    /// `text/plain` when absent (RFC 2045), lower case, with its parameters.
    let contentType: (type: String, parameters: [String: String])
    /// The file name of an attachment, if the part names one.
    let fileName: String?
    /// True for a part meant as a file rather than the message's text.
    let isAttachment: Bool
    /// The parts of a multipart body (empty for any other part).
    var parts: [MIMEPart] = []

    /// A part with `headers` whose body is `body`.
    init(headers: [String: String], body: ArraySlice<UInt8>) {
        self.headers = headers
        self.body = body
        let (type, parameters) = MIME.valueAndParameters(headers["content-type"] ?? "text/plain")
        contentType = (type.isEmpty ? "text/plain" : type, parameters)
        let disposition = MIME.valueAndParameters(headers["content-disposition"] ?? "")
        fileName = (disposition.parameters["filename"] ?? parameters["name"]).map(MIME.decodeWords)
        isAttachment = disposition.value == "attachment" || (fileName != nil && !contentType.type.hasPrefix("multipart/"))
    }

    /// The delimiter line of a multipart part ("--" and its boundary), if it is one whose parts
    /// can be read: RFC 2046 boundaries have 1 to 70 characters (longer ones would make every
    /// comparison long).
    var delimiter: [UInt8]? {
        guard contentType.type.hasPrefix("multipart/"), let boundary = contentType.parameters["boundary"],
              (1...70).contains(boundary.utf8.count) else { return nil }
        return Array("--".utf8) + Array(boundary.utf8)
    }

    /// The body with its transfer encoding (base64, quoted-printable) undone.
    var decodedBody: Data {
        switch (headers["content-transfer-encoding"] ?? "").lowercased().trimmingCharacters(in: .whitespaces) {
        case "base64": return Data(base64Encoded: Data(body.filter { $0 > 0x20 }), options: .ignoreUnknownCharacters) ?? Data()
        case "quoted-printable": return MIME.quotedPrintable(body)
        default: return Data(body)
        }
    }
}

/// Reads a message and all its parts in one pass over its lines: each line is looked at once,
/// compared with the delimiters of the multiparts open around it (at most ``maximumDepth``), and
/// a part's headers once more — linear in the message, however its parts nest. (Reading each
/// multipart's body again for its own parts made nested messages cost depth × size.)
///
/// A delimiter of an enclosing multipart also ends the parts inside it (RFC 2046), so a part
/// left open by a missing close delimiter ends there.
struct MIMEParser {
    /// Multiparts inside multiparts: real mail nests three or four (mixed, alternative, related).
    static let maximumDepth = 16
    /// Parts in one message: each costs memory, and a line of a few bytes makes one.
    static let maximumParts = 10_000

    private let bytes: ArraySlice<UInt8>
    private let budget: ExtractionBudget
    /// Bytes read, delimiter comparisons included: the work done, for tests of linearity.
    private(set) var bytesExamined = 0
    private var partCount = 0

    /// A multipart whose parts are being read.
    private struct Open {
        let headers: [String: String]
        let delimiter: [UInt8]
        let bodyStart: Int
        var parts: [MIMEPart] = []
        /// The leaf part being read: its headers and where its body starts.
        var current: (headers: [String: String], bodyStart: Int)?
        /// After the close delimiter: the epilogue, which is no part, and its delimiter means nothing.
        var closed = false
    }

    init(_ bytes: ArraySlice<UInt8>, budget: ExtractionBudget) {
        self.bytes = bytes
        self.budget = budget
    }

    /// The message and its parts.
    /// - Throws: `INVALID_ARGUMENT` for multiparts nested deeper than ``maximumDepth`` or more
    ///   than ``maximumParts`` parts; `CANCELLED`.
    static func parse(_ bytes: ArraySlice<UInt8>, budget: ExtractionBudget) throws(BusError) -> MIMEPart {
        var parser = MIMEParser(bytes, budget: budget)
        return try parser.parse()
    }

    mutating func parse() throws(BusError) -> MIMEPart {
        let (rootHeaders, rootBody) = headers(from: bytes.startIndex)
        let root = MIMEPart(headers: rootHeaders, body: bytes[rootBody...])
        guard let rootDelimiter = root.delimiter else { return root }
        var stack = [Open(headers: rootHeaders, delimiter: rootDelimiter, bodyStart: rootBody)]
        var index = rootBody
        while index < bytes.endIndex {
            try budget.checkpoint()
            var end = index
            while end < bytes.endIndex, bytes[end] != 0x0A { end += 1 }
            bytesExamined += end - index + 1
            let line = bytes[index..<end]
            let next = min(end + 1, bytes.endIndex)
            guard line.starts(with: [0x2D, 0x2D]), let level = matchingLevel(line, in: stack) else {
                index = next
                continue
            }
            // This delimiter ends every part open inside the multipart it belongs to.
            let partEnd = Self.trimmingLineEnd(before: index, from: bytes.startIndex, in: bytes)
            while stack.count > level + 1 { close(&stack, at: partEnd) }
            endCurrentPart(of: &stack[level], at: partEnd)
            if line.dropFirst(stack[level].delimiter.count).starts(with: [0x2D, 0x2D]) {
                stack[level].closed = true
                index = next
                continue
            }
            partCount += 1
            guard partCount <= Self.maximumParts else {
                throw .invalidArgument("the message has more than \(Self.maximumParts) MIME parts")
            }
            let (partHeaders, bodyStart) = headers(from: next)
            if let delimiter = MIMEPart(headers: partHeaders, body: []).delimiter {
                guard stack.count < Self.maximumDepth else {
                    throw .invalidArgument("the message's MIME parts are nested more than \(Self.maximumDepth) levels deep")
                }
                stack.append(Open(headers: partHeaders, delimiter: delimiter, bodyStart: bodyStart))
            } else {
                stack[level].current = (partHeaders, bodyStart)
            }
            index = bodyStart
        }
        while stack.count > 1 { close(&stack, at: bytes.endIndex) }
        return part(of: &stack[0], at: bytes.endIndex)
    }

    /// The innermost open multipart whose delimiter starts `line` (not one already closed).
    private mutating func matchingLevel(_ line: ArraySlice<UInt8>, in stack: [Open]) -> Int? {
        for level in stack.indices.reversed() where !stack[level].closed {
            let delimiter = stack[level].delimiter
            bytesExamined += min(line.count, delimiter.count)
            if line.starts(with: delimiter) { return level }
        }
        return nil
    }

    /// Ends the leaf part being read in `open` at `end`.
    private func endCurrentPart(of open: inout Open, at end: Int) {
        guard let current = open.current else { return }
        open.parts.append(MIMEPart(headers: current.headers, body: bytes[current.bodyStart..<max(current.bodyStart, end)]))
        open.current = nil
    }

    /// The multipart `open`, ended at `end`, with its parts.
    private func part(of open: inout Open, at end: Int) -> MIMEPart {
        endCurrentPart(of: &open, at: end)
        var part = MIMEPart(headers: open.headers, body: bytes[open.bodyStart..<max(open.bodyStart, end)])
        part.parts = open.parts
        return part
    }

    /// Ends the innermost multipart at `end` and makes it a part of the one around it.
    private func close(_ stack: inout [Open], at end: Int) {
        var innermost = stack.removeLast()
        stack[stack.count - 1].parts.append(part(of: &innermost, at: end))
    }

    /// Headers from `start` up to the first blank line: names in lower case, folded lines
    /// joined, the first of repeated headers; and where the body starts.
    private mutating func headers(from start: Int) -> (headers: [String: String], bodyStart: Int) {
        var headers: [String: String] = [:]
        var lastName: String?
        var index = start
        while index < bytes.endIndex {
            var end = index
            while end < bytes.endIndex, bytes[end] != 0x0A { end += 1 }
            bytesExamined += end - index + 1
            var line = bytes[index..<end]
            if line.last == 0x0D { line = line.dropLast() }
            index = min(end + 1, bytes.endIndex)
            if line.isEmpty { break }
            if line.first == 0x20 || line.first == 0x09, let name = lastName {
                headers[name, default: ""] += " " + String(decoding: line.drop { $0 == 0x20 || $0 == 0x09 }, as: UTF8.self)
            } else if let colon = line.firstIndex(of: 0x3A) {
                let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
                lastName = headers[name] == nil ? name : nil
                if lastName != nil { headers[name] = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces) }
            }
        }
        return (headers, index)
    }

    /// `index` moved back over the line end before it: it belongs to the delimiter that follows.
    private static func trimmingLineEnd(before index: Int, from start: Int, in bytes: ArraySlice<UInt8>) -> Int {
        var end = index
        if end > start, bytes[end - 1] == 0x0A { end -= 1 }
        if end > start, bytes[end - 1] == 0x0D { end -= 1 }
        return end
    }
}

/// Header values, parameters and encodings of MIME.
enum MIME {
    /// `text/plain; charset="utf-8"` -> ("text/plain", ["charset": "utf-8"]); RFC 2231's
    /// `filename*=utf-8''n%C3%A4me.pdf` is decoded too.
    static func valueAndParameters(_ header: String) -> (value: String, parameters: [String: String]) {
        var fields: [String] = []
        var current = "", quoted = false
        for character in header {
            if character == "\"" { quoted.toggle() }
            if character == ";", !quoted {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        var parameters: [String: String] = [:]
        for field in fields.dropFirst() {
            let pair = field.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            var name = pair[0].trimmingCharacters(in: .whitespaces).lowercased()
            var value = pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            if name.hasSuffix("*") {
                name.removeLast()
                let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if pieces.count == 3 { value = String(pieces[2]).removingPercentEncoding ?? String(pieces[2]) }
            }
            parameters[name] = value
        }
        return (fields[0].trimmingCharacters(in: .whitespaces).lowercased(), parameters)
    }

    /// RFC 2047 encoded words (`=?utf-8?B?…?=`, `=?iso-8859-1?Q?…?=`) decoded; white space
    /// between two encoded words dropped. One pass over the bytes: the `?` an encoded word
    /// needs is looked for through a ``ForwardSearch``.
    static func decodeWords(_ header: String) -> String {
        let bytes = Array(header.utf8)
        var questionMark = ForwardSearch([0x3F])
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        // Where white space after a decoded word started in `out`: dropped if another word follows.
        var spaceAfterWord: Int?
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x3D, index + 1 < bytes.count, bytes[index + 1] == 0x3F,
               let (decoded, end) = encodedWord(bytes, at: index, questionMark: &questionMark) {
                if let spaceAfterWord { out.removeSubrange(spaceAfterWord...) }
                out.append(contentsOf: decoded.utf8)
                spaceAfterWord = out.count
                index = end
                continue
            }
            if !(byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A) { spaceAfterWord = nil }
            out.append(byte)
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The encoded word `=?charset?B|Q?text?=` at `start`, decoded, and the index after it.
    private static func encodedWord(_ bytes: [UInt8], at start: Int, questionMark: inout ForwardSearch) -> (String, Int)? {
        guard let charsetEnd = questionMark.find(in: bytes, from: start + 2), charsetEnd - start <= 66,
              charsetEnd + 2 < bytes.count, bytes[charsetEnd + 2] == 0x3F,
              let textEnd = questionMark.find(in: bytes, from: charsetEnd + 3), textEnd + 1 < bytes.count, bytes[textEnd + 1] == 0x3D
        else { return nil }
        let charset = String(decoding: bytes[(start + 2)..<charsetEnd], as: UTF8.self)
        let text = bytes[(charsetEnd + 3)..<textEnd]
        let data: Data?
        switch bytes[charsetEnd + 1] | 0x20 {
        case 0x62: data = Data(base64Encoded: Data(text), options: .ignoreUnknownCharacters)  // b
        case 0x71: data = quotedPrintable(text, underscoreIsSpace: true)  // q
        default: data = nil
        }
        return data.map { (TextDecoding.decode($0, charset: charset), textEnd + 2) }
    }

    /// Quoted-printable: `=XX` bytes, soft line breaks (`=` at a line end) removed.
    static func quotedPrintable(_ bytes: ArraySlice<UInt8>, underscoreIsSpace: Bool = false) -> Data {
        var out = Data()
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: byte - 0x30
            case 0x41...0x46: byte - 0x41 + 10
            case 0x61...0x66: byte - 0x61 + 10
            default: nil
            }
        }
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0x3D {
                if index + 2 < bytes.endIndex, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                    out.append(high << 4 | low)
                    index += 3
                    continue
                }
                // A soft line break: "=" then CRLF or LF.
                var next = index + 1
                while next < bytes.endIndex, bytes[next] == 0x20 || bytes[next] == 0x09 { next += 1 }
                if next < bytes.endIndex, bytes[next] == 0x0D { next += 1 }
                if next < bytes.endIndex, bytes[next] == 0x0A {
                    index = next + 1
                    continue
                }
                out.append(byte)
            } else {
                out.append(underscoreIsSpace && byte == 0x5F ? 0x20 : byte)
            }
            index += 1
        }
        return out
    }
}
