import Foundation

/// Reads the flat JSON object of a header member by member, without building a tree: only the
/// members a header knows are parsed, the rest skipped (unknown keys are ignored, as the protocol
/// requires), and the whole document is checked. A member of the wrong type is reported by
/// ``finish()``, after the grammar: malformed JSON is named as such first.
struct HeaderReader {
    private var parser: JSONParser
    private let what: String
    private var beforeFirstMember = true
    /// The first member found of the wrong type.
    private var fieldError: BusError?

    init(_ bytes: UnsafeRawBufferPointer, what: String) throws(BusError) {
        parser = JSONParser(bytes: bytes)
        self.what = what
        do { try parser.enterObject() } catch { throw invalid(error) }
    }

    /// The next member's key, with the reader at its value (read it or ``skip()``); `nil` at the
    /// end of the document.
    mutating func nextKey() throws(BusError) -> UnsafeRawBufferPointer? {
        do { return try parser.nextMember(first: &beforeFirstMember) } catch { throw invalid(error) }
    }

    mutating func value() throws(BusError) -> JSONValue {
        do { return try parser.parseValue() } catch { throw invalid(error) }
    }

    mutating func skip() throws(BusError) {
        do { try parser.skipValue() } catch { throw invalid(error) }
    }

    /// A string member; `null` reads as nil.
    mutating func string(_ key: String) throws(BusError) -> String? {
        let value = try value()
        if value != .null && value.stringValue == nil { report(.invalidArgument("\(what) field '\(key)' must be a string")) }
        return value.stringValue
    }

    /// An integer member; `null` reads as nil.
    mutating func integer(_ key: String) throws(BusError) -> Int64? {
        let value = try value()
        if value != .null && value.intValue == nil { report(.invalidArgument("\(what) field '\(key)' must be an integer")) }
        return value.intValue
    }

    /// An integer member within `range`; `null` reads as nil. A value outside it is reported
    /// (and reads as nil) as a member of the wrong type is.
    mutating func integer(_ key: String, in range: ClosedRange<Int64>) throws(BusError) -> Int64? {
        guard let value = try integer(key) else { return nil }
        guard range.contains(value) else {
            report(.invalidArgument("\(what) field '\(key)' must be an integer from \(range.lowerBound) to \(range.upperBound), got \(value)",
                                    details: .object(["field": .string(key)])))
            return nil
        }
        return value
    }

    /// The `meta` member: an object of strings; `null` reads as empty.
    mutating func meta() throws(BusError) -> [String: String] {
        let value = try value()
        if value == .null { return [:] }
        guard let object = value.objectValue else {
            report(.invalidArgument("\(what) field 'meta' must be an object of strings"))
            return [:]
        }
        var meta: [String: String] = [:]
        for (key, entry) in object {
            guard let string = entry.stringValue else {
                report(.invalidArgument("\(what) field 'meta.\(key)' must be a string"))
                return [:]
            }
            meta[key] = string
        }
        return meta
    }

    /// The `caller` member (``BusIdentity``); `null` reads as nil. A malformed one rejects the
    /// header even if a later one is well formed: a request is never half trusted.
    mutating func caller() throws(BusError) -> BusIdentity? {
        let value = try value()
        if value == .null { return nil }
        do {
            return try BusIdentity.decode(value, what: what)
        } catch {
            report(error)
            return nil
        }
    }

    /// Notes a member of the wrong type; the first one noted is what ``finish()`` throws.
    mutating func report(_ error: BusError) {
        if fieldError == nil { fieldError = error }
    }

    /// Throws the first member of the wrong type, if any.
    func finish() throws(BusError) {
        if let fieldError { throw fieldError }
    }

    private func invalid(_ error: JSONParseError) -> BusError {
        error.reason == "expected a JSON object" ? .invalidArgument("\(what) must be a JSON object") : .invalidArgument("\(what) is not valid JSON: \(error)")
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes are exactly `key`'s (a header member's key as written).
    func `is`(_ key: StaticString) -> Bool {
        count == key.utf8CodeUnitCount && memcmp(key.utf8Start, baseAddress!, count) == 0
    }
}
