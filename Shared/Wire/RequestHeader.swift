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
    /// Who called, as the broker knows it from the caller's key (wire protocol, Addition 10).
    /// The broker appends it as the header's last member, and a header's last member of a name
    /// is the one read, so whatever a client wrote there is overridden.
    public var caller: BusIdentity?

    public init(id: String, deadline: Int64? = nil, user: String? = nil, meta: [String: String] = [:], idem: String? = nil, caller: BusIdentity? = nil) {
        self.id = id
        self.deadline = deadline
        self.user = user
        self.meta = meta
        self.idem = idem
        self.caller = caller
    }

    /// The longest `id` the protocol allows.
    public static let maximumIDLength = 64

    /// The header as compact JSON.
    public func encoded() -> Data { Data(encodedBytes) }

    /// ``encoded()`` as the bytes the bus sends.
    package var encodedBytes: [UInt8] {
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
        if let caller {
            writer.raw(",\"caller\":")
            caller.write(to: &writer)
        }
        writer.raw("}")
        return writer.bytes
    }

    /// `,"caller":{…}}`: what the broker writes in place of a header's closing brace to stamp
    /// `identity` on it (Addition 10). Made once per key, not per request.
    public static func callerMember(_ identity: BusIdentity) -> [UInt8] {
        var writer = JSONBytes()
        writer.raw(",\"caller\":")
        identity.write(to: &writer)
        writer.raw("}")
        return writer.bytes
    }

    /// `header` with `member` (from ``callerMember(_:)``) in place of its closing brace, without
    /// parsing it; nil when the header does not end with `}` (trailing whitespace aside). The
    /// comma is dropped for `{}`, which has no member to follow.
    public static func stamping(_ header: UnsafeRawBufferPointer, with member: [UInt8]) -> [UInt8]? {
        var end = header.count
        while end > 0, [0x20, 0x09, 0x0A, 0x0D].contains(header[end - 1]) { end -= 1 }
        guard end > 0, header[end - 1] == UInt8(ascii: "}") else { return nil }
        var body = end - 1
        while body > 0, [0x20, 0x09, 0x0A, 0x0D].contains(header[body - 1]) { body -= 1 }
        let isEmptyObject = body > 0 && header[body - 1] == UInt8(ascii: "{")
        var stamped = [UInt8](header[..<(end - 1)])
        stamped.reserveCapacity(end + member.count)
        stamped.append(contentsOf: isEmptyObject ? member.dropFirst() : member[...])
        return stamped
    }

    /// Parses and validates a request header; unknown keys are ignored. A key that appears more
    /// than once takes its last value (the broker's `caller` overrides a client's). The `user` is
    /// not checked here: ``checkUser()`` does that, where the user is acted on.
    /// - Throws: `INVALID_ARGUMENT` naming the field that is wrong (`deadline` outside
    ///   ``WireLimits/deadline`` included).
    public static func decode(_ data: Data) throws(BusError) -> RequestHeader {
        try withBytes(of: data) { bytes throws(BusError) in try decode(bytes: bytes) }
    }

    /// The `id` of a header that ``decode(bytes:)`` refused for another member, so the refusal
    /// can still reach its caller under that id; nil when there is none to read (not JSON, no
    /// string `id`, or a header over 64 KiB, which no honest client sends).
    public static func idOfRefused(bytes data: UnsafeRawBufferPointer) -> String? {
        guard data.count <= 64 * 1024, let header = try? JSONValue.parse(Data(data)),
              let id = header["id"]?.stringValue, (1...maximumIDLength).contains(id.utf8.count) else { return nil }
        return id
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
                header.deadline = try reader.integer("deadline", in: WireLimits.deadline)
            } else if key.is("user") {
                header.user = try reader.string("user")
            } else if key.is("meta") {
                header.meta = try reader.meta()
            } else if key.is("idem") {
                header.idem = try reader.string("idem")
            } else if key.is("caller") {
                header.caller = try reader.caller()
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

extension RequestHeader {
    /// The longest `user` (docs/wire-protocol.md, addition 2).
    public static let maximumUserBytes = 128

    /// Checks this header's `user`, if it has one: see ``checkUser(_:)``.
    public func checkUser() throws(BusError) {
        if let user { try Self.checkUser(user) }
    }

    /// Checks that `user` is a user id as the protocol defines it (docs/wire-protocol.md,
    /// addition 2): 1 to ``maximumUserBytes`` bytes of ASCII letters, digits and `.` `_` `-`
    /// `@` `:` `+`. Every service stores the user on every row it writes and logs it, so
    /// nothing else — white space, control characters, terminal escapes, quotes, slashes,
    /// anything beyond ASCII — gets that far.
    /// - Throws: `INVALID_ARGUMENT` naming the field, without echoing the value.
    public static func checkUser(_ user: String) throws(BusError) {
        let bytes = user.utf8
        guard !bytes.isEmpty, bytes.count <= maximumUserBytes, bytes.allSatisfy(isUserByte) else {
            throw .invalidArgument(
                "request header field 'user' must be a user id of 1 to \(maximumUserBytes) ASCII letters, digits, '.', '_', '-', '@', ':' or '+'",
                details: .object(["field": .string("user")]))
        }
    }

    private static func isUserByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "@"), UInt8(ascii: ":"), UInt8(ascii: "+"):
            true
        default:
            false
        }
    }
}
