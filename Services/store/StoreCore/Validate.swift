import Bus
import Contracts
import Foundation
import Wire

/// The store's errors, as the status codes the contract promises.
enum StoreError {
    /// `NOT_FOUND`: "material 'm1' not found" (also for another user's record).
    static func notFound<R: StoredRecord>(_ type: R.Type, _ id: String, field: String? = nil) -> BusError {
        let prefix = field.map { "field '\($0)': " } ?? ""
        return .notFound("\(prefix)\(R.noun) '\(id)' not found")
    }

    /// `ALREADY_EXISTS`: a client-chosen id the user already has.
    static func alreadyExists<R: StoredRecord>(_ type: R.Type, _ id: String) -> BusError {
        .alreadyExists("\(R.noun) '\(id)' already exists")
    }
}

/// Field checks shared by every method; each failure is `INVALID_ARGUMENT` naming the field and
/// the limit.
enum Validate {
    private static let idCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:".utf8)

    /// A new id: a lowercase UUID of version 7 (RFC 9562), whose leading milliseconds make
    /// new rows land at the end of the id indexes instead of all over them.
    static func newID() -> String {
        let high = UInt64(Date().unixMilliseconds) << 16 | 0x7000 | UInt64.random(in: 0...0x0FFF)
        let low = 0x8000_0000_0000_0000 | UInt64.random(in: 0...0x3FFF_FFFF_FFFF_FFFF)
        // Written in place: a put makes an id for each of thousands of rows.
        return String(unsafeUninitializedCapacity: 36) { text in
            var nibble = 0
            for index in 0..<36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    text[index] = UInt8(ascii: "-")
                    continue
                }
                let word = nibble < 16 ? high : low
                let value = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (nibble % 16)) & 0xF)
                text[index] = value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
                nibble += 1
            }
            return 36
        }
    }

    /// An id: 1…64 characters of letters, digits, `-`, `_`, `.`, `:`.
    static func id(_ id: String, field: String = "id") throws(BusError) {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= StoreLimits.idLength, bytes.allSatisfy(idCharacters.contains) else {
            throw .invalidArgument("field '\(field)' must be an id of 1 to \(StoreLimits.idLength) letters, digits, '-', '_', '.' or ':'")
        }
    }

    /// A client-chosen id, or a new one.
    static func idOrNew(_ id: String?, field: String = "id") throws(BusError) -> String {
        guard let id else { return newID() }
        try self.id(id, field: field)
        return id
    }

    /// A reference that may be cleared: nil and "" both mean none.
    static func reference(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    // Field names are autoclosures: they are built only for an error message, not for each of
    // the thousands of fields a `materials.put` checks.

    /// Text that must not be blank and has at most `maximum` characters.
    @discardableResult
    static func text(_ value: String, field: @autoclosure () -> String, maximum: Int) throws(BusError) -> String {
        guard !value.allSatisfy(\.isWhitespace) else { throw .invalidArgument("field '\(field())' must not be empty") }
        try length(value, field: field(), maximum: maximum)
        return value
    }

    /// Optional text of at most `maximum` characters; "" clears it (nil).
    static func optionalText(_ value: String?, field: @autoclosure () -> String, maximum: Int) throws(BusError) -> String? {
        guard let value, !value.isEmpty else { return nil }
        try length(value, field: field(), maximum: maximum)
        return value
    }

    /// At most `maximum` characters (text of any length may be empty). Characters are Unicode
    /// scalars (code points), as `characterCount` and chunk offsets count them.
    static func length(_ value: String, field: @autoclosure () -> String, maximum: Int) throws(BusError) {
        // UTF-8 bytes are never fewer than scalars: count scalars only when it matters.
        guard value.utf8.count > maximum, value.unicodeScalars.count > maximum else { return }
        throw .invalidArgument("field '\(field())' is longer than \(maximum) characters")
    }

    /// Labels (tags, keywords): at most `count` of them, each not blank and at most 100
    /// characters; surrounding spaces trimmed, duplicates dropped, order kept.
    static func labels(_ values: [String]?, field: @autoclosure () -> String, count: Int) throws(BusError) -> [String] {
        guard let values else { return [] }
        guard values.count <= count else { throw .invalidArgument("field '\(field())' has more than \(count) entries") }
        var seen = Set<String>()
        var result: [String] = []
        for (index, value) in values.enumerated() {
            let label = value.trimmingCharacters(in: .whitespacesAndNewlines)
            try text(label, field: "\(field())[\(index)]", maximum: StoreLimits.labelLength)
            if seen.insert(label).inserted { result.append(label) }
        }
        return result
    }

    /// A whole number in `range`.
    static func integer(_ value: Int?, field: @autoclosure () -> String, in range: ClosedRange<Int>) throws(BusError) -> Int? {
        guard let value else { return nil }
        guard range.contains(value) else {
            throw .invalidArgument("field '\(field())' must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }

    /// A number of seconds: finite and not negative.
    static func seconds(_ value: Double?, field: @autoclosure () -> String) throws(BusError) -> Double? {
        guard let value else { return nil }
        guard value.isFinite, value >= 0 else { throw .invalidArgument("field '\(field())' must be a number of seconds, 0 or more") }
        return value
    }

    /// A page size: 1…`maximum`, default `defaultValue`.
    static func limit(_ value: Int?, default defaultValue: Int = StoreLimits.defaultPageSize, maximum: Int = StoreLimits.maximumPageSize) throws(BusError) -> Int {
        try integer(value, field: "limit", in: 1...maximum) ?? defaultValue
    }
}
