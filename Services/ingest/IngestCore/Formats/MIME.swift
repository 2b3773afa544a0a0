import Foundation

/// One part of an Internet message (RFC 5322 headers, RFC 2045–2047 MIME): its headers and
/// body, multipart bodies split into their parts.
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

    /// Parses a message or part: headers up to the first blank line, then the body.
    init(_ bytes: ArraySlice<UInt8>) {
        var headers: [String: String] = [:]
        var lastName: String?
        var index = bytes.startIndex
        while index < bytes.endIndex {
            var end = index
            while end < bytes.endIndex, bytes[end] != 0x0A { end += 1 }
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
        self.headers = headers
        body = bytes[index...]
        let (type, parameters) = MIME.valueAndParameters(headers["content-type"] ?? "text/plain")
        contentType = (type.isEmpty ? "text/plain" : type, parameters)
        let disposition = MIME.valueAndParameters(headers["content-disposition"] ?? "")
        fileName = (disposition.parameters["filename"] ?? parameters["name"]).map(MIME.decodeWords)
        isAttachment = disposition.value == "attachment" || (fileName != nil && !contentType.type.hasPrefix("multipart/"))
    }

    /// The body with its transfer encoding (base64, quoted-printable) undone.
    var decodedBody: Data {
        switch (headers["content-transfer-encoding"] ?? "").lowercased().trimmingCharacters(in: .whitespaces) {
        case "base64": return Data(base64Encoded: Data(body.filter { $0 > 0x20 }), options: .ignoreUnknownCharacters) ?? Data()
        case "quoted-printable": return MIME.quotedPrintable(body)
        default: return Data(body)
        }
    }

    /// The parts of a multipart body (empty for any other part).
    var parts: [MIMEPart] {
        guard contentType.type.hasPrefix("multipart/"), let boundary = contentType.parameters["boundary"], !boundary.isEmpty else { return [] }
        let delimiter = Array(("--" + boundary).utf8)
        var parts: [MIMEPart] = []
        var partStart: Int?
        var index = body.startIndex
        while index < body.endIndex {
            var end = index
            while end < body.endIndex, body[end] != 0x0A { end += 1 }
            if body[index..<end].starts(with: delimiter) {
                if let start = partStart {
                    // The line end before the delimiter belongs to it, not to the part.
                    var partEnd = index
                    if partEnd > start, body[partEnd - 1] == 0x0A { partEnd -= 1 }
                    if partEnd > start, body[partEnd - 1] == 0x0D { partEnd -= 1 }
                    parts.append(MIMEPart(body[start..<partEnd]))
                }
                let isClose = body[index..<end].dropFirst(delimiter.count).starts(with: "--".utf8)
                if isClose { break }
                partStart = min(end + 1, body.endIndex)
            }
            index = end + 1
        }
        return parts
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
    /// between two encoded words dropped.
    static func decodeWords(_ header: String) -> String {
        guard header.contains("=?") else { return header }
        var out = "", rest = Substring(header), pendingSpace = ""
        while let start = rest.range(of: "=?") {
            let before = rest[..<start.lowerBound]
            let afterStart = rest[start.upperBound...]
            let pieces = afterStart.split(separator: "?", maxSplits: 3, omittingEmptySubsequences: false)
            guard pieces.count == 4, pieces[3].hasPrefix("="), let decoded = decodeWord(charset: String(pieces[0]), encoding: String(pieces[1]), text: String(pieces[2])) else {
                out += pendingSpace + before + "=?"
                pendingSpace = ""
                rest = afterStart
                continue
            }
            let betweenWords = before.allSatisfy(\.isWhitespace) && !out.isEmpty
            out += (betweenWords ? "" : pendingSpace + before) + decoded
            pendingSpace = ""
            rest = pieces[3].dropFirst()
            if let next = rest.firstIndex(where: { !$0.isWhitespace }), rest[next...].hasPrefix("=?") {
                pendingSpace = String(rest[..<next])
                rest = rest[next...]
            }
        }
        return out + pendingSpace + rest
    }

    private static func decodeWord(charset: String, encoding: String, text: String) -> String? {
        let data: Data?
        switch encoding.uppercased() {
        case "B": data = Data(base64Encoded: text, options: .ignoreUnknownCharacters)
        case "Q": data = quotedPrintable(Array(text.utf8)[...], underscoreIsSpace: true)
        default: data = nil
        }
        return data.map { TextDecoding.decode($0, charset: charset) }
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
