import Foundation

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
    package enum EncodedID {
        case whole(String)
        case prefixed(String, Int64)
    }

    /// The header with these members as compact JSON (the publisher stamps events with this).
    package static func encoded(
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
    /// - Throws: `INVALID_ARGUMENT` naming the field that is missing, of the wrong type, or out
    ///   of range (`seq` in ``WireLimits/seq``, `ts` in ``WireLimits/unixMilliseconds``).
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
                seq = try reader.integer("seq", in: WireLimits.seq)
            } else if key.is("ts") {
                ts = try reader.integer("ts", in: WireLimits.unixMilliseconds)
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
package func withBytes<R>(of data: Data, _ body: (UnsafeRawBufferPointer) throws(BusError) -> R) throws(BusError) -> R {
    let result: Result<R, BusError> = data.withUnsafeBytes { bytes in
        do throws(BusError) { return .success(try body(bytes)) } catch { return .failure(error) }
    }
    return try result.get()
}

extension EventHeader: Codable {
    private enum CodingKeys: String, CodingKey { case id, source, instance, seq, ts, user, meta }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func integer(_ key: CodingKeys, in range: ClosedRange<Int64>) throws -> Int64 {
            let value = try container.decode(Int64.self, forKey: key)
            guard range.contains(value) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "must be from \(range.lowerBound) to \(range.upperBound), got \(value)")
            }
            return value
        }
        self.init(
            id: try container.decode(String.self, forKey: .id),
            source: try container.decode(String.self, forKey: .source),
            instance: try container.decode(String.self, forKey: .instance),
            seq: try integer(.seq, in: WireLimits.seq),
            ts: try integer(.ts, in: WireLimits.unixMilliseconds),
            user: try container.decodeIfPresent(String.self, forKey: .user),
            meta: try container.decodeIfPresent([String: String].self, forKey: .meta) ?? [:]
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(source, forKey: .source)
        try container.encode(instance, forKey: .instance)
        try container.encode(seq, forKey: .seq)
        try container.encode(ts, forKey: .ts)
        try container.encodeIfPresent(user, forKey: .user)
        if !meta.isEmpty { try container.encode(meta, forKey: .meta) }
    }
}
