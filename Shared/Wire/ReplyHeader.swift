import Foundation

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
    package var encodedBytes: [UInt8] {
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
