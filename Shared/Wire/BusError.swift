
/// An error with a gRPC status code: what services throw and what clients catch.
///
/// Services throw it (or any ``BusErrorConvertible``) from handlers; the host puts `code`,
/// `message` and `details` in the reply header. Clients receive the same value back.
///
/// ```swift
/// guard !title.isEmpty else { throw BusError.invalidArgument("title must not be empty") }
/// ```
public struct BusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status code; never `.ok`.
    public var code: StatusCode
    /// A human-readable reason; for `INVALID_ARGUMENT` it names the offending field.
    public var message: String
    /// Machine-readable details, sent as the reply header's `details`.
    public var details: JSONValue?

    public init(_ code: StatusCode, _ message: String, details: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    public var description: String { "\(code.name): \(message)" }

    public static func invalidArgument(_ message: String, details: JSONValue? = nil) -> BusError {
        BusError(.invalidArgument, message, details: details)
    }
    public static func notFound(_ message: String) -> BusError { BusError(.notFound, message) }
    public static func alreadyExists(_ message: String) -> BusError { BusError(.alreadyExists, message) }
    public static func failedPrecondition(_ message: String, details: JSONValue? = nil) -> BusError {
        BusError(.failedPrecondition, message, details: details)
    }
    public static func resourceExhausted(_ message: String) -> BusError { BusError(.resourceExhausted, message) }
    public static func unavailable(_ message: String) -> BusError { BusError(.unavailable, message) }
    public static func deadlineExceeded(_ message: String) -> BusError { BusError(.deadlineExceeded, message) }
    public static func unimplemented(_ message: String) -> BusError { BusError(.unimplemented, message) }
    public static func `internal`(_ message: String) -> BusError { BusError(.internal, message) }
    public static func cancelled(_ message: String) -> BusError { BusError(.cancelled, message) }
    public static func permissionDenied(_ message: String) -> BusError { BusError(.permissionDenied, message) }
    public static func aborted(_ message: String) -> BusError { BusError(.aborted, message) }
    public static func outOfRange(_ message: String) -> BusError { BusError(.outOfRange, message) }

    /// RESOURCE_EXHAUSTED for a message larger than the broker accepts. Such a frame never
    /// arrives: the broker drops the connection that sent it, failing everything else in flight
    /// on it, so senders refuse it first with this error.
    /// - Parameters:
    ///   - what: the message, as the sentence's subject ("the reply of store/export").
    ///   - advice: what the caller can do, after a semicolon.
    public static func messageTooLarge(_ what: String, bytes: Int, limit: Int64, advice: String) -> BusError {
        let setting = "BROKER_MAX_MESSAGE_BYTES"
        return BusError(
            .resourceExhausted,
            "\(what) is \(bytes) bytes, more than the largest message the broker accepts (\(setting) = \(limit)); \(advice)",
            details: .object(["bytes": .int(Int64(bytes)), "limit": .int(limit), "setting": .string(setting)]))
    }
}

/// A service's own error type that knows its status code. Handlers may throw these directly;
/// the host turns them into replies through ``busError``.
public protocol BusErrorConvertible: Error {
    var busError: BusError { get }
}
