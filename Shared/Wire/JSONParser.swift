import Foundation

/// Why a JSON text did not parse, with the byte offset.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// Parses one JSON value (RFC 8259) from UTF-8 bytes; trailing non-space bytes are an error.
    public static func parse(_ data: Data) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = data.withUnsafeBytes { bytes in
            var parser = JSONParser(bytes: bytes)
            do throws(JSONParseError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses one JSON value from text.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Data(text.utf8))
    }
}

struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    var depth = 0
    static let maximumDepth = 256

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        guard offset == bytes.count else { throw fail("unexpected data after the value") }
        return value
    }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: offset, reason: reason) }

    mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard offset < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard offset + count <= bytes.count,
              memcmp(bytes.baseAddress! + offset, literal.utf8Start, count) == 0
        else { throw fail("invalid literal") }
        offset += count
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("nesting deeper than \(Self.maximumDepth)") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        offset += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if offset < bytes.count && bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            offset += 1
            members[key] = try parseValue()
            skipWhitespace()
            guard offset < bytes.count else { throw fail("unterminated object") }
            if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
            if bytes[offset] == UInt8(ascii: "}") { offset += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return .object(members)
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        offset += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if offset < bytes.count && bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            depth -= 1
            return .array(items)
        }
        while true {
            items.append(try parseValue())
            skipWhitespace()
            guard offset < bytes.count else { throw fail("unterminated array") }
            if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
            if bytes[offset] == UInt8(ascii: "]") { offset += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(items)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        offset += 1
        let start = offset
        var ascii = true
        // Fast path: no escapes; all-ASCII bytes need no UTF-8 validation.
        while offset < bytes.count {
            offset = JSONScan.plainRunEnd(bytes, from: offset, allowNonASCII: !ascii)
            guard offset < bytes.count else { break }
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
                offset += 1
                if ascii { return String(decoding: slice, as: UTF8.self) }
                guard let string = String(validating: slice.assumingMemoryBound(to: UInt8.self), as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return string
            }
            if byte >= 0x80 { ascii = false }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character in string") }
            offset += 1
        }
        var buffer = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<offset]))
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                offset += 1
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return string
            }
            if byte < 0x20 { throw fail("control character in string") }
            if byte != UInt8(ascii: "\\") {
                // The run up to the next quote, backslash or control character, at once.
                let run = offset
                repeat { offset += 1 } while offset < bytes.count && bytes[offset] != UInt8(ascii: "\"")
                    && bytes[offset] != UInt8(ascii: "\\") && bytes[offset] >= 0x20
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[run..<offset]))
                continue
            }
            offset += 1
            guard offset < bytes.count else { break }
            let escape = bytes[offset]
            offset += 1
            if let byte = Self.shortEscape(escape) {
                buffer.append(byte)
            } else if escape == UInt8(ascii: "u") {
                buffer.append(contentsOf: String(Character(try parseUnicodeEscape())).utf8)
            } else {
                throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    /// The byte a one-letter escape (`\n`, `\"`, …) stands for; nil for `\u` and invalid ones.
    private static func shortEscape(_ escape: UInt8) -> UInt8? {
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escape
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    /// Reads the hex digits of a `\u` escape (the `\u` already read), and the low half that
    /// must follow a high surrogate.
    mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        var scalar = try parseHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"),
                  bytes[offset + 1] == UInt8(ascii: "u") else { throw fail("unpaired surrogate") }
            offset += 2
            let low = try parseHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("invalid surrogate pair") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("unpaired surrogate")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid code point") }
        return unicode
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw fail("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid hex digit")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = offset
        var isInteger = true
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < bytes.count, isDigit(bytes[offset]) else { throw fail("invalid number") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
        } else {
            while offset < bytes.count && isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count && bytes[offset] == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw fail("invalid fraction") }
            while offset < bytes.count && isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count && (bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E")) {
            isInteger = false
            offset += 1
            if offset < bytes.count && (bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-")) {
                offset += 1
            }
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw fail("invalid exponent") }
            while offset < bytes.count && isDigit(bytes[offset]) { offset += 1 }
        }
        // Integers of up to 18 digits (every header's numbers) without going through a String.
        let digitsStart = bytes[start] == UInt8(ascii: "-") ? start + 1 : start
        if isInteger && offset - digitsStart <= 18 {
            var value: Int64 = 0
            for index in digitsStart..<offset { value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
            return .int(digitsStart == start ? value : -value)
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text) else { throw JSONParseError(offset: start, reason: "invalid number") }
        // 1e999 reads as infinity, which JSON cannot write back; Foundation refuses it too.
        guard value.isFinite else { throw JSONParseError(offset: start, reason: "number out of range") }
        return .double(value)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// Checks one value and moves past it without building it.
    mutating func skipValue() throws(JSONParseError) {
        skipWhitespace()
        guard offset < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[offset] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try skipContainer()
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        default: _ = try parseNumber()
        }
    }

    /// Checks an object or array and moves past it without building it.
    mutating func skipContainer() throws(JSONParseError) {
        try enter()
        let isObject = bytes[offset] == UInt8(ascii: "{")
        let closer = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        offset += 1
        skipWhitespace()
        if offset < bytes.count && bytes[offset] == closer {
            offset += 1
            depth -= 1
            return
        }
        while true {
            if isObject {
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                try skipString()
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                offset += 1
            }
            try skipValue()
            skipWhitespace()
            guard offset < bytes.count else { throw fail("unterminated object or array") }
            if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
            if bytes[offset] == closer { offset += 1; break }
            throw fail(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
        }
        depth -= 1
    }

    /// Moves past a string, checking it as ``parseString()`` does (escapes, surrogate pairs,
    /// UTF-8) but not building it.
    mutating func skipString() throws(JSONParseError) {
        let start = offset
        offset += 1
        var ascii = true
        while offset < bytes.count {
            offset = JSONScan.plainRunEnd(bytes, from: offset, allowNonASCII: !ascii)
            guard offset < bytes.count else { break }
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                offset += 1
                guard ascii || String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]).assumingMemoryBound(to: UInt8.self), as: UTF8.self) != nil else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return
            }
            if byte < 0x20 { throw fail("control character in string") }
            if byte >= 0x80 { ascii = false }
            guard byte == UInt8(ascii: "\\") else {
                offset += 1
                continue
            }
            offset += 1
            guard offset < bytes.count else { break }
            let escape = bytes[offset]
            offset += 1
            if Self.shortEscape(escape) == nil {
                guard escape == UInt8(ascii: "u") else { throw fail("invalid escape") }
                _ = try parseUnicodeEscape()
            }
        }
        throw fail("unterminated string")
    }

    /// Starts reading a top-level object: its `{`, after any whitespace.
    mutating func enterObject() throws(JSONParseError) {
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "{") else { throw fail("expected a JSON object") }
        offset += 1
    }

    /// The key of the next member of the object entered with ``enterObject()`` (its bytes as
    /// written between the quotes), with the parser at the member's value, which the caller
    /// must parse or skip; `nil` at the object's end, once only whitespace follows it.
    /// - Parameter first: true before the first member; it is cleared on the way.
    mutating func nextMember(first: inout Bool) throws(JSONParseError) -> UnsafeRawBufferPointer? {
        skipWhitespace()
        guard offset < bytes.count else { throw fail("unterminated object") }
        if bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            skipWhitespace()
            guard offset == bytes.count else { throw fail("unexpected data after the value") }
            return nil
        }
        if !first {
            guard bytes[offset] == UInt8(ascii: ",") else { throw fail("expected ',' or '}'") }
            offset += 1
            skipWhitespace()
        }
        first = false
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
        let keyStart = offset + 1
        try skipString()
        let key = UnsafeRawBufferPointer(rebasing: bytes[keyStart..<(offset - 1)])
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw fail("expected ':'") }
        offset += 1
        skipWhitespace()
        return key
    }
}
