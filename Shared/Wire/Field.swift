import Foundation

/// Checks of request fields, with one message style: every failure is `INVALID_ARGUMENT`, its
/// message names the field and what it must be ("field 'label' must be at most 100
/// characters"), and its details carry the field (`{"field":"label"}`) so a client can point at
/// the input.
///
/// Field names are autoclosures: they are built for an error only, not for each of the
/// thousands of fields a large request checks. Lengths count Unicode scalars (code points), as
/// `characterCount` and chunk offsets do; byte limits say bytes.
///
/// ```swift
/// let label = try Field.text(request.label, "label", maximum: 100)
/// let limit = try Field.int(request.limit, "limit", in: 1...500, default: 50)
/// ```
public enum Field {
    /// `INVALID_ARGUMENT`: "field '`name`' `requirement`", with the field in the details.
    public static func invalid(_ name: String, _ requirement: String) -> BusError {
        .invalidArgument("field '\(name)' \(requirement)", details: .object(["field": .string(name)]))
    }

    /// Text with a visible character and at most `maximum` characters; returned as given, or
    /// without surrounding white space when `trimming`.
    @discardableResult
    public static func text(_ value: String, _ name: @autoclosure () -> String, maximum: Int, trimming: Bool = false) throws(BusError) -> String {
        let text = trimming ? value.trimmingCharacters(in: .whitespacesAndNewlines) : value
        guard text.contains(where: { !$0.isWhitespace }) else { throw invalid(name(), "must not be empty") }
        try length(text, name(), maximum: maximum)
        return text
    }

    /// Optional text of at most `maximum` characters; absent, empty (or, when `trimming`, blank)
    /// text is nil.
    public static func optionalText(_ value: String?, _ name: @autoclosure () -> String, maximum: Int, trimming: Bool = false) throws(BusError) -> String? {
        guard let value else { return nil }
        let text = trimming ? value.trimmingCharacters(in: .whitespacesAndNewlines) : value
        guard !text.isEmpty else { return nil }
        try length(text, name(), maximum: maximum)
        return text
    }

    /// Text of any length up to `maximum` characters, empty included.
    public static func length(_ value: String, _ name: @autoclosure () -> String, maximum: Int) throws(BusError) {
        // UTF-8 bytes are never fewer than scalars: count scalars only when it matters.
        guard value.utf8.count > maximum, value.unicodeScalars.count > maximum else { return }
        throw invalid(name(), "must be at most \(maximum) characters")
    }

    /// Text of at most `maximum` bytes of UTF-8 (limits of size rather than of length).
    public static func bytes(_ value: String, _ name: @autoclosure () -> String, maximum: Int) throws(BusError) {
        let count = value.utf8.count
        guard count > maximum else { return }
        throw invalid(name(), "must be at most \(maximum) bytes of UTF-8, got \(count)")
    }

    /// The characters of a store id and most others: letters, digits, `-`, `_`, `.`, `:`.
    public static let idCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:".utf8)

    /// An id of 1…`maximum` characters from `allowed` (letters, digits, `-`, `_`, `.`, `:` by default).
    @discardableResult
    public static func id(_ value: String, _ name: @autoclosure () -> String, maximum: Int = 64, allowed: Set<UInt8> = idCharacters) throws(BusError) -> String {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= maximum, bytes.allSatisfy(allowed.contains) else {
            let what = allowed == idCharacters ? "letters, digits, '-', '_', '.' or ':'" : "characters"
            throw invalid(name(), "must be an id of 1 to \(maximum) \(what)")
        }
        return value
    }

    /// An optional id; absent is nil.
    public static func optionalID(_ value: String?, _ name: @autoclosure () -> String, maximum: Int = 64, allowed: Set<UInt8> = idCharacters) throws(BusError) -> String? {
        guard let value else { return nil }
        return try id(value, name(), maximum: maximum, allowed: allowed)
    }

    /// A whole number in `range`.
    @discardableResult
    public static func int<Number: BinaryInteger>(_ value: Number, _ name: @autoclosure () -> String, in range: ClosedRange<Number>) throws(BusError) -> Number {
        guard range.contains(value) else { throw invalid(name(), "must be between \(range.lowerBound) and \(range.upperBound), got \(value)") }
        return value
    }

    /// A whole number in `range`, or `defaultValue` when absent.
    public static func int<Number: BinaryInteger>(
        _ value: Number?, _ name: @autoclosure () -> String, in range: ClosedRange<Number>, default defaultValue: Number
    ) throws(BusError) -> Number {
        guard let value else { return defaultValue }
        return try int(value, name(), in: range)
    }

    /// A finite number in `range`.
    @discardableResult
    public static func number(_ value: Double, _ name: @autoclosure () -> String, in range: ClosedRange<Double>) throws(BusError) -> Double {
        guard value.isFinite, range.contains(value) else {
            throw invalid(name(), "must be a number between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
        return value
    }

    /// A number of seconds: finite, 0 or more, and at most `maximum` — by default the span the
    /// wire's dates can express (``WireLimits/maximumSeconds``, about 10,000 years), so that
    /// adding it to a date or converting it to milliseconds cannot overflow.
    @discardableResult
    public static func seconds(_ value: Double, _ name: @autoclosure () -> String, maximum: Double = WireLimits.maximumSeconds) throws(BusError) -> Double {
        guard value.isFinite, value >= 0, value <= maximum else {
            throw invalid(name(), "must be a number of seconds, 0 or more and at most \(maximum)")
        }
        return value
    }

    /// A list of `range` entries.
    public static func count<Items: Collection>(_ items: Items, _ name: @autoclosure () -> String, in range: ClosedRange<Int>) throws(BusError) {
        guard range.contains(items.count) else {
            let requirement = range.lowerBound == 0
                ? "must hold at most \(range.upperBound) entries, got \(items.count)"
                : "must hold \(range.lowerBound) to \(range.upperBound) entries, got \(items.count)"
            throw invalid(name(), requirement)
        }
    }

    /// A value the contract lists: one of `allowed`.
    public static func oneOf<Value: Equatable & CustomStringConvertible>(_ value: Value, _ name: @autoclosure () -> String, _ allowed: [Value]) throws(BusError) -> Value {
        guard allowed.contains(value) else {
            throw invalid(name(), "must be one of \(allowed.map(\.description).joined(separator: ", ")), got \(value)")
        }
        return value
    }
}
