import Foundation

/// Writes compact JSON straight into bytes: the headers of every message and, through
/// ``PayloadEncoder``, their payloads.
///
/// This is on the hot path of every call and event: no `String` building, no interpolation
/// (which goes through dynamic casts), one growing allocation for the bytes. The output is the
/// same compact JSON as ``JSONWriter``'s.
struct JSONBytes {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 128) {
        bytes.reserveCapacity(capacity)
    }

    /// Appends literal JSON text.
    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends `value` in decimal.
    mutating func int(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        uint(value.magnitude)
    }

    /// Appends one byte of JSON syntax (`{`, `,`, ...).
    mutating func byte(_ byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends `text`, which the caller knows to be valid JSON, as it is.
    mutating func verbatim(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends `value` in decimal. The digits are written backwards into a small buffer and
    /// appended at once, which is cheaper than digit by digit; every event header has three.
    mutating func uint(_ value: UInt64) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Appends a finite floating-point number as Foundation's `JSONEncoder` writes it: the
    /// shortest text that reads back the same, without a trailing `.0` (`1`, `0.1`, `1e-07`).
    mutating func number<Number: BinaryFloatingPoint & LosslessStringConvertible>(_ value: Number) {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends a date as a JSON string in the protocol's form, `"2026-11-22T10:00:00.000Z"`.
    mutating func date(_ date: Date) {
        bytes.append(UInt8(ascii: "\""))
        ISO8601.write(unixMilliseconds: date.unixMilliseconds, into: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `text` as a JSON string, escaping what JSON requires.
    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        stringContents(text)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `text` escaped, without the quotes: for a string written in pieces.
    mutating func stringContents(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            while true {
                let index = JSONScan.plainRunEnd(UnsafeRawBufferPointer(utf8), from: start, allowNonASCII: true)
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                guard index < utf8.count else { return }
                escape(utf8[index])
                start = index + 1
            }
        }
    }

    private mutating func escape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case 0x22: bytes.append(UInt8(ascii: "\""))
        case 0x5C: bytes.append(UInt8(ascii: "\\"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            raw("u00")
            let hex: StaticString = "0123456789abcdef"
            hex.withUTF8Buffer { digits in
                bytes.append(digits[Int(byte >> 4)])
                bytes.append(digits[Int(byte & 0xF)])
            }
        }
    }

    /// Appends a `meta` object: string values, keys in sorted order (as ``JSONWriter`` does).
    mutating func meta(_ meta: [String: String]) {
        bytes.append(UInt8(ascii: "{"))
        for (index, member) in meta.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(member.key)
            bytes.append(UInt8(ascii: ":"))
            string(member.value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends any JSON value (rare members such as an error's `details`).
    mutating func value(_ value: JSONValue) {
        var writer = JSONWriter()
        writer.write(value, pretty: false, indent: 0)
        bytes.append(contentsOf: writer.text.utf8)
    }

    /// The bytes written.
    var data: Data { Data(bytes) }
}
