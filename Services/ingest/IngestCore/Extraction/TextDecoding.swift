import Foundation

/// Reads text whatever its encoding, as far as it can be told from the bytes: UTF-8 (with or
/// without a byte order mark), UTF-16 with a byte order mark (or, without one, when every other
/// byte of the start is zero), else Latin-1 — read as Windows-1252, its superset that gives
/// 0x80…0x9F the characters (€, curly quotes) files written on Windows mean by them.
enum TextDecoding {
    enum Encoding: String, Sendable {
        case utf8 = "UTF-8", utf16LE = "UTF-16LE", utf16BE = "UTF-16BE", latin1 = "Windows-1252"
    }

    /// The text and the encoding it was read as.
    static func decode(_ data: Data) -> (text: String, encoding: Encoding) {
        let bytes = [UInt8](data)
        // Valid UTF-8 is the common case: validated once, and that is the text.
        if !bytes.starts(with: [0xFF, 0xFE]), !bytes.starts(with: [0xFE, 0xFF]), utf16WithoutMark(bytes) == nil,
           let text = String(validating: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes[3...] : bytes[...], as: UTF8.self) {
            return (text, .utf8)
        }
        let encoding = detect(bytes)
        return (decode(bytes, as: encoding), encoding)
    }

    /// The encoding of `bytes`, by byte order mark, UTF-16 shape or UTF-8 validity.
    static func detect(_ bytes: [UInt8]) -> Encoding {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return .utf8 }
        if bytes.starts(with: [0xFF, 0xFE]) { return .utf16LE }
        if bytes.starts(with: [0xFE, 0xFF]) { return .utf16BE }
        if let utf16 = utf16WithoutMark(bytes) { return utf16 }
        return String(validating: bytes, as: UTF8.self) != nil ? .utf8 : .latin1
    }

    /// Decodes `bytes` (byte order mark dropped) as `encoding`; invalid sequences become U+FFFD.
    static func decode(_ bytes: [UInt8], as encoding: Encoding) -> String {
        switch encoding {
        case .utf8:
            let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes[3...] : bytes[...]
            return String(decoding: body, as: UTF8.self)
        case .utf16LE, .utf16BE:
            let hasMark = bytes.starts(with: encoding == .utf16LE ? [0xFF, 0xFE] : [0xFE, 0xFF])
            var units: [UInt16] = []
            units.reserveCapacity(bytes.count / 2)
            var index = hasMark ? 2 : 0
            while index + 1 < bytes.count {
                let (first, second) = (UInt16(bytes[index]), UInt16(bytes[index + 1]))
                units.append(encoding == .utf16LE ? first | second << 8 : first << 8 | second)
                index += 2
            }
            return String(decoding: units, as: UTF16.self)
        case .latin1:
            var utf8: [UInt8] = []
            utf8.reserveCapacity(bytes.count + bytes.count / 8)
            for byte in bytes {
                if byte < 0x80 {
                    utf8.append(byte)
                } else {
                    let scalar = byte < 0xA0 ? windows1252[Int(byte - 0x80)] : UInt32(byte)
                    if scalar < 0x800 {
                        utf8.append(UInt8(0xC0 | scalar >> 6))
                    } else {
                        utf8.append(UInt8(0xE0 | scalar >> 12))
                        utf8.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
                    }
                    utf8.append(UInt8(0x80 | scalar & 0x3F))
                }
            }
            return String(decoding: utf8, as: UTF8.self)
        }
    }

    /// Text decoded with the charset a media type or HTML page names, when it is one of those
    /// read here; else, and whenever the bytes start with a byte order mark (which wins, as in
    /// WHATWG's decode), by detection.
    static func decode(_ data: Data, charset: String?) -> String {
        let marked = data.starts(with: [0xEF, 0xBB, 0xBF]) || data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF])
        switch marked ? nil : charset?.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) {
        case "utf-8", "utf8", "us-ascii", "ascii":
            return decode([UInt8](data), as: .utf8)
        case "iso-8859-1", "latin1", "latin-1", "windows-1252", "cp1252", "iso-8859-15":
            return decode([UInt8](data), as: .latin1)
        case "utf-16le":
            return decode([UInt8](data), as: .utf16LE)
        case "utf-16be", "utf-16":
            let bytes = [UInt8](data)
            return decode(bytes, as: bytes.starts(with: [0xFF, 0xFE]) ? .utf16LE : .utf16BE)
        default:
            return decode(data).text
        }
    }

    /// UTF-16 without a byte order mark, recognized when text of mostly ASCII characters has a
    /// zero in every other byte of its first kilobyte.
    private static func utf16WithoutMark(_ bytes: [UInt8]) -> Encoding? {
        let sample = bytes.prefix(1024)
        guard sample.count >= 4, sample.count % 2 == 0 else { return nil }
        var evenZeros = 0, oddZeros = 0
        for (index, byte) in sample.enumerated() where byte == 0 {
            if index % 2 == 0 { evenZeros += 1 } else { oddZeros += 1 }
        }
        let half = sample.count / 2
        if oddZeros * 10 >= half * 9, evenZeros == 0 { return .utf16LE }
        if evenZeros * 10 >= half * 9, oddZeros == 0 { return .utf16BE }
        return nil
    }

    /// Windows-1252's characters for 0x80…0x9F (undefined bytes keep their Latin-1 meaning).
    private static let windows1252: [UInt32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
        0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ]
}
