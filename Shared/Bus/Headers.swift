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
    public func encoded() -> Data {
        var writer = JSONWriter()
        writer.text += "{\"id\":"
        writer.writeString(id)
        if let deadline { writer.text += ",\"deadline\":\(deadline)" }
        if let user {
            writer.text += ",\"user\":"
            writer.writeString(user)
        }
        if !meta.isEmpty {
            writer.text += ",\"meta\":"
            writer.write(.object(meta.mapValues { .string($0) }), pretty: false, indent: 0)
        }
        if let idem {
            writer.text += ",\"idem\":"
            writer.writeString(idem)
        }
        writer.text += "}"
        return Data(writer.text.utf8)
    }

    /// Parses and validates a request header; unknown keys are ignored.
    /// - Throws: `INVALID_ARGUMENT` naming the field that is wrong.
    public static func decode(_ data: Data) throws(BusError) -> RequestHeader {
        let members = try HeaderFields.object(data, what: "request header")
        guard let id = members["id"]?.stringValue else {
            throw .invalidArgument("request header field 'id' is missing or not a string")
        }
        guard (1...maximumIDLength).contains(id.count) else {
            throw .invalidArgument("request header field 'id' must be 1 to \(maximumIDLength) characters")
        }
        return RequestHeader(
            id: id,
            deadline: try HeaderFields.optionalInt(members, "deadline", in: "request header"),
            user: try HeaderFields.optionalString(members, "user", in: "request header"),
            meta: try HeaderFields.meta(members, in: "request header"),
            idem: try HeaderFields.optionalString(members, "idem", in: "request header")
        )
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
    public func encoded() -> Data {
        var writer = JSONWriter()
        writer.text += "{\"id\":"
        writer.writeString(id)
        writer.text += ",\"code\":\(code.rawValue)"
        if let message {
            writer.text += ",\"message\":"
            writer.writeString(message)
        }
        if let details {
            writer.text += ",\"details\":"
            writer.write(details, pretty: false, indent: 0)
        }
        writer.text += "}"
        return Data(writer.text.utf8)
    }

    /// Parses a reply header; unknown keys are ignored and unknown codes read as `UNKNOWN`.
    public static func decode(_ data: Data) throws(BusError) -> ReplyHeader {
        let members = try HeaderFields.object(data, what: "reply header")
        guard let id = members["id"]?.stringValue else {
            throw .invalidArgument("reply header field 'id' is missing or not a string")
        }
        guard let code = members["code"]?.intValue else {
            throw .invalidArgument("reply header field 'code' is missing or not an integer")
        }
        return ReplyHeader(
            id: id,
            code: StatusCode(wireValue: Int(code)),
            message: members["message"]?.stringValue,
            details: members["details"]
        )
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
        var writer = JSONWriter()
        writer.text += "{\"id\":"
        writer.writeString(id)
        writer.text += ",\"source\":"
        writer.writeString(source)
        writer.text += ",\"instance\":"
        writer.writeString(instance)
        writer.text += ",\"seq\":\(seq),\"ts\":\(ts)"
        if let user {
            writer.text += ",\"user\":"
            writer.writeString(user)
        }
        if !meta.isEmpty {
            writer.text += ",\"meta\":"
            writer.write(.object(meta.mapValues { .string($0) }), pretty: false, indent: 0)
        }
        writer.text += "}"
        return Data(writer.text.utf8)
    }

    /// Parses an event header; unknown keys are ignored.
    public static func decode(_ data: Data) throws(BusError) -> EventHeader {
        let members = try HeaderFields.object(data, what: "event header")
        func required(_ key: String) throws(BusError) -> String {
            guard let value = members[key]?.stringValue else {
                throw .invalidArgument("event header field '\(key)' is missing or not a string")
            }
            return value
        }
        guard let seq = members["seq"]?.intValue else {
            throw .invalidArgument("event header field 'seq' is missing or not an integer")
        }
        guard let ts = members["ts"]?.intValue else {
            throw .invalidArgument("event header field 'ts' is missing or not an integer")
        }
        return EventHeader(
            id: try required("id"),
            source: try required("source"),
            instance: try required("instance"),
            seq: seq,
            ts: ts,
            user: try HeaderFields.optionalString(members, "user", in: "event header"),
            meta: try HeaderFields.meta(members, in: "event header")
        )
    }
}

/// Field readers shared by the header parsers.
enum HeaderFields {
    static func object(_ data: Data, what: String) throws(BusError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONValue.parse(data)
        } catch {
            throw .invalidArgument("\(what) is not valid JSON: \(error)")
        }
        guard let members = value.objectValue else { throw .invalidArgument("\(what) must be a JSON object") }
        return members
    }

    static func optionalString(_ members: [String: JSONValue], _ key: String, in what: String) throws(BusError) -> String? {
        guard let value = members[key], value != .null else { return nil }
        guard let string = value.stringValue else { throw .invalidArgument("\(what) field '\(key)' must be a string") }
        return string
    }

    static func optionalInt(_ members: [String: JSONValue], _ key: String, in what: String) throws(BusError) -> Int64? {
        guard let value = members[key], value != .null else { return nil }
        guard let number = value.intValue else { throw .invalidArgument("\(what) field '\(key)' must be an integer") }
        return number
    }

    static func meta(_ members: [String: JSONValue], in what: String) throws(BusError) -> [String: String] {
        guard let value = members["meta"], value != .null else { return [:] }
        guard let object = value.objectValue else {
            throw .invalidArgument("\(what) field 'meta' must be an object of strings")
        }
        var meta: [String: String] = [:]
        for (key, entry) in object {
            guard let string = entry.stringValue else {
                throw .invalidArgument("\(what) field 'meta.\(key)' must be a string")
            }
            meta[key] = string
        }
        return meta
    }
}
