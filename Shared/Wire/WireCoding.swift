import Foundation

/// The JSON conventions of payloads (wire protocol §5): camelCase keys as declared, dates as
/// ISO 8601 in UTC with milliseconds.
public enum WireCoding {
    /// An encoder for payloads. Each call makes its own: `JSONEncoder` keeps mutable options.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISO8601.format(date))
        }
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    /// A decoder for payloads; it reads dates with or without fractional seconds and offsets.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ISO8601.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an ISO 8601 date-time such as 2026-11-22T10:00:00.000Z, got '\(text)'")
            }
            return date
        }
        return decoder
    }

    // Shared: both are thread-safe once configured, and every payload uses the same options.
    private static let sharedEncoder = encoder()
    private static let sharedDecoder = decoder()
    private static let emptyObject = Data("{}".utf8)

    /// Encodes `value` as payload JSON (with ``PayloadEncoder``, or Foundation's encoder for a
    /// value that uses its containers out of order).
    public static func encode<T: Encodable>(_ value: T) throws -> Data {
        Data(try encodeBytes(value))
    }

    /// ``encode(_:)`` as the bytes the bus sends: a `Data` would be one more allocation and copy
    /// (two, for more than 14 bytes) on every call.
    package static func encodeBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        do {
            return try PayloadEncoder.encode(value)
        } catch is PayloadEncoder.Unsupported {
            return Array(try sharedEncoder.encode(value))
        }
    }

    /// Decodes payload JSON (with ``PayloadDecoder``, or Foundation's decoder where that one
    /// cannot decide, and for every error); an empty payload reads as `{}`, so types whose
    /// fields are all optional accept it.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try data.withUnsafeBytes { try decode(type, from: $0) }
    }

    /// ``decode(_:from:)-(_,Data)`` from bytes a message part holds; they are copied only when
    /// Foundation's decoder must decide.
    package static func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        if bytes.isEmpty { return try emptyObject.withUnsafeBytes { try decode(type, from: $0) } }
        return try PayloadDecoder.decode(type, from: bytes) ?? sharedDecoder.decode(type, from: Data(bytes))
    }
}
