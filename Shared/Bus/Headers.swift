import Foundation

/// The request header (wire protocol §2.3), frame 4 of a client request.
public struct RequestHeader: Sendable, Equatable {
    /// Unique per client, 1...64 characters; echoed in the reply.
    public var id: String
    /// Absolute Unix time in milliseconds after which the caller no longer wants the answer.
    public var deadline: Int64?
    /// The end user the call acts for.
    public var user: String?
    /// Free metadata; `traceparent` is propagated to downstream calls.
    public var meta: [String: String]
    /// Idempotency key: a repeated call with the same key and user must not apply twice.
    public var idem: String?

    public init(id: String, deadline: Int64? = nil, user: String? = nil, meta: [String: String] = [:], idem: String? = nil) {
        self.id = id
        self.deadline = deadline
        self.user = user
        self.meta = meta
        self.idem = idem
    }

    /// The longest `id` the protocol allows.
    public static let maximumIDLength = 64

    /// The header as compact JSON.
    public func encoded() -> Data { Data(encodedBytes) }

    /// ``encoded()`` as the bytes the bus sends.
    var encodedBytes: [UInt8] {
        var writer = JSONBytes()
        writer.raw("{\"id\":")
        writer.string(id)
        if let deadline {
            writer.raw(",\"deadline\":")
            writer.int(deadline)
        }
        if let user {
            writer.raw(",\"user\":")
            writer.string(user)
        }
        if !meta.isEmpty {
            writer.raw(",\"meta\":")
            writer.meta(meta)
        }
        if let idem {
            writer.raw(",\"idem\":")
            writer.string(idem)
        }
        writer.raw("}")
        return writer.bytes
    }

    /// Parses and validates a request header; unknown keys are ignored.
    /// - Throws: `INVALID_ARGUMENT` naming the field that is wrong.
    public static func decode(_ data: Data) throws(BusError) -> RequestHeader {
        try withBytes(of: data) { bytes throws(BusError) in try decode(bytes: bytes) }
    }

    /// Parses and validates a request header from bytes a message part holds.
    public static func decode(bytes data: UnsafeRawBufferPointer) throws(BusError) -> RequestHeader {
        let missingID = BusError.invalidArgument("request header field 'id' is missing or not a string")
        var reader = try HeaderReader(data, what: "request header")
        var header = RequestHeader(id: "")
        var sawID = false
        while let key = try reader.nextKey() {
            if key.is("id") {
                if let id = try reader.value().stringValue {
                    header.id = id
                    sawID = true
                } else {
                    reader.report(missingID)
                }
            } else if key.is("deadline") {
                header.deadline = try reader.integer("deadline")
            } else if key.is("user") {
                header.user = try reader.string("user")
            } else if key.is("meta") {
                header.meta = try reader.meta()
            } else if key.is("idem") {
                header.idem = try reader.string("idem")
            } else {
                try reader.skip()
            }
        }
        try reader.finish()
        guard sawID else { throw missingID }
        guard (1...maximumIDLength).contains(header.id.count) else {
            throw .invalidArgument("request header field 'id' must be 1 to \(maximumIDLength) characters")
        }
        return header
    }
}

/// The reply header (wire protocol §2.3), frame 3 of a client reply.
public struct ReplyHeader: Sendable, Equatable {
    /// The request's `id`.
    public var id: String
    /// The status; `.ok` when the payload holds the response.
    public var code: StatusCode
    /// Why the call failed, when `code` is not `.ok`.
    public var message: String?
    /// Machine-readable error details.
    public var details: JSONValue?

    public init(id: String, code: StatusCode = .ok, message: String? = nil, details: JSONValue? = nil) {
        self.id = id
        self.code = code
        self.message = message
        self.details = details
    }

    /// A failure reply for request `id`.
    public init(id: String, error: BusError) {
        self.init(id: id, code: error.code, message: error.message, details: error.details)
    }

    /// The header as compact JSON.
    public func encoded() -> Data { Data(encodedBytes) }

    /// ``encoded()`` as the bytes the bus sends.
    var encodedBytes: [UInt8] {
        var writer = JSONBytes()
        writer.raw("{\"id\":")
        writer.string(id)
        writer.raw(",\"code\":")
        writer.int(Int64(code.rawValue))
        if let message {
            writer.raw(",\"message\":")
            writer.string(message)
        }
        if let details {
            writer.raw(",\"details\":")
            writer.value(details)
        }
        writer.raw("}")
        return writer.bytes
    }

    /// Parses a reply header; unknown keys are ignored and unknown codes read as `UNKNOWN`.
    public static func decode(_ data: Data) throws(BusError) -> ReplyHeader {
        try withBytes(of: data) { bytes throws(BusError) in try decode(bytes: bytes) }
    }

    /// Parses a reply header from bytes a message part holds.
    public static func decode(bytes data: UnsafeRawBufferPointer) throws(BusError) -> ReplyHeader {
        var id: String?, code: Int64?, message: String?, details: JSONValue?
        var reader = try HeaderReader(data, what: "reply header")
        while let key = try reader.nextKey() {
            if key.is("id") {
                id = try reader.value().stringValue
            } else if key.is("code") {
                code = try reader.value().intValue
            } else if key.is("message") {
                message = try reader.value().stringValue
            } else if key.is("details") {
                details = try reader.value()
            } else {
                try reader.skip()
            }
        }
        guard let id else { throw .invalidArgument("reply header field 'id' is missing or not a string") }
        guard let code else { throw .invalidArgument("reply header field 'code' is missing or not an integer") }
        return ReplyHeader(id: id, code: StatusCode(wireValue: Int(code)), message: message, details: details)
    }

    /// The failure this header reports, or `nil` when `code` is `.ok`.
    public var error: BusError? {
        guard code != .ok else { return nil }
        return BusError(code, message ?? code.name, details: details)
    }
}

/// The event header (wire protocol §3), frame 1 of every event.
public struct EventHeader: Sendable, Equatable {
    /// A unique event id.
    public var id: String
    /// The publishing service, e.g. `timer-ticker`.
    public var source: String
    /// The publishing stream's instance (process, or a durable outbox's stable name).
    public var instance: String
    /// Position in the `source`+`instance` stream: starts at 1, increases by exactly 1.
    public var seq: Int64
    /// Unix time in milliseconds when the event was produced.
    public var ts: Int64
    /// The user the event concerns.
    public var user: String?
    /// Metadata, e.g. `traceparent`.
    public var meta: [String: String]

    public init(id: String, source: String, instance: String, seq: Int64, ts: Int64, user: String? = nil, meta: [String: String] = [:]) {
        self.id = id
        self.source = source
        self.instance = instance
        self.seq = seq
        self.ts = ts
        self.user = user
        self.meta = meta
    }

    /// The header as compact JSON.
    public func encoded() -> Data {
        Self.encoded(id: .whole(id), source: source, instance: instance, seq: seq, ts: ts, user: user, meta: meta)
    }

    /// An event id to encode: whole, or `<prefix>-<seq>` written without building the string.
    enum EncodedID {
        case whole(String)
        case prefixed(String, Int64)
    }

    /// The header with these members as compact JSON (the publisher stamps events with this).
    static func encoded(
        id: EncodedID, source: String, instance: String, seq: Int64, ts: Int64, user: String?, meta: [String: String]
    ) -> Data {
        var writer = JSONBytes()
        writer.raw("{\"id\":")
        switch id {
        case .whole(let id):
            writer.string(id)
        case .prefixed(let prefix, let number):
            writer.raw("\"")
            writer.stringContents(prefix)
            writer.raw("-")
            writer.int(number)
            writer.raw("\"")
        }
        writer.raw(",\"source\":")
        writer.string(source)
        writer.raw(",\"instance\":")
        writer.string(instance)
        writer.raw(",\"seq\":")
        writer.int(seq)
        writer.raw(",\"ts\":")
        writer.int(ts)
        if let user {
            writer.raw(",\"user\":")
            writer.string(user)
        }
        if !meta.isEmpty {
            writer.raw(",\"meta\":")
            writer.meta(meta)
        }
        writer.raw("}")
        return writer.data
    }

    /// Parses an event header; unknown keys are ignored.
    public static func decode(_ data: Data) throws(BusError) -> EventHeader {
        try withBytes(of: data) { bytes throws(BusError) in try decode(bytes: bytes) }
    }

    /// Parses an event header from bytes a message part holds.
    public static func decode(bytes data: UnsafeRawBufferPointer) throws(BusError) -> EventHeader {
        var id: String?, source: String?, instance: String?
        var seq: Int64?, ts: Int64?, user: String?, meta: [String: String] = [:]
        var reader = try HeaderReader(data, what: "event header")
        while let key = try reader.nextKey() {
            if key.is("id") {
                id = try reader.value().stringValue
            } else if key.is("source") {
                source = try reader.value().stringValue
            } else if key.is("instance") {
                instance = try reader.value().stringValue
            } else if key.is("seq") {
                seq = try reader.value().intValue
            } else if key.is("ts") {
                ts = try reader.value().intValue
            } else if key.is("user") {
                user = try reader.string("user")
            } else if key.is("meta") {
                meta = try reader.meta()
            } else {
                try reader.skip()
            }
        }
        try reader.finish()
        guard let id else { throw .invalidArgument("event header field 'id' is missing or not a string") }
        guard let source else { throw .invalidArgument("event header field 'source' is missing or not a string") }
        guard let instance else { throw .invalidArgument("event header field 'instance' is missing or not a string") }
        guard let seq else { throw .invalidArgument("event header field 'seq' is missing or not an integer") }
        guard let ts else { throw .invalidArgument("event header field 'ts' is missing or not an integer") }
        return EventHeader(id: id, source: source, instance: instance, seq: seq, ts: ts, user: user, meta: meta)
    }
}

/// Calls `body` with the bytes of `data` (typed throws, which `Data.withUnsafeBytes` lacks).
func withBytes<R>(of data: Data, _ body: (UnsafeRawBufferPointer) throws(BusError) -> R) throws(BusError) -> R {
    let result: Result<R, BusError> = data.withUnsafeBytes { bytes in
        do throws(BusError) { return .success(try body(bytes)) } catch { return .failure(error) }
    }
    return try result.get()
}

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
