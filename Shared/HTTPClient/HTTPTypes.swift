import Foundation
import Wire

/// An outgoing HTTP request.
public struct HTTPRequest: Sendable {
    /// HTTP versions the client may use.
    public enum Version: Sendable {
        /// HTTP/1.1 only.
        case http1
        /// HTTP/2 when the TLS server offers it (ALPN), else HTTP/1.1 — libcurl's default.
        case http2WhenOffered
        /// HTTP/2 required: over TLS by ALPN, over plain TCP with prior knowledge (h2c).
        case http2Only
    }

    public var method: String
    public var url: String
    /// Header lines in order; names are case-insensitive on the wire.
    public var headers: [(name: String, value: String)]
    public var body: Data?
    /// The whole exchange must finish within this.
    public var timeout: Duration
    /// Connecting must finish within this.
    public var connectTimeout: Duration
    public var version: Version
    /// A PEM file of certificate authorities to trust instead of the system's (tests, private CAs).
    public var caFile: String?
    /// Read at most this many bytes of the body; the rest is not read (the connection is
    /// closed). ``HTTPClient/send(_:)``'s response then says ``HTTPResponse/bodyTruncated``; a
    /// stream ends after that many bytes as if the body ended there (ask one byte more than you
    /// take to tell). Nil: the whole body (a streaming caller stops by ending its iteration, but
    /// what arrives before it does is buffered).
    public var maximumBodyBytes: Int?
    /// Ask for a compressed body (`Accept-Encoding`) and decompress it. Off, no `Accept-Encoding`
    /// is sent and a body arrives as the server sent it, so a small answer cannot inflate.
    public var decompress: Bool

    public init(
        method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: Data? = nil,
        timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10), version: Version = .http2WhenOffered,
        caFile: String? = nil, maximumBodyBytes: Int? = nil, decompress: Bool = true
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.version = version
        self.caFile = caFile
        self.maximumBodyBytes = maximumBodyBytes
        self.decompress = decompress
    }
}

/// A complete HTTP response.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header fields with lower-cased names; a repeated field keeps its last value.
    public var headers: [String: String]
    public var body: Data
    /// `"1.1"` or `"2"`.
    public var httpVersion: String
    /// The body was longer than the request's ``HTTPRequest/maximumBodyBytes``: `body` is its start.
    public var bodyTruncated: Bool

    public init(status: Int, headers: [String: String], body: Data, httpVersion: String, bodyTruncated: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.bodyTruncated = bodyTruncated
    }

    /// The header field `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// What a streaming exchange delivers: the head once, then body chunks as they arrive.
public enum HTTPStreamEvent: Sendable {
    case head(status: Int, headers: [String: String])
    case body(Data)
}

/// Why an exchange failed below HTTP (an HTTP error status is a response, not an error).
public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request's timeout passed.
    case timedOut
    /// The host name did not resolve.
    case couldNotResolve(String)
    /// The destination refused the connection (nothing listens on the port).
    case connectionRefused(String)
    /// No connection could be made (host or network unreachable, reset).
    case couldNotConnect(String)
    /// The client's ``DestinationPolicy`` refused an address the host resolved to, and no other
    /// address was connected to: nothing was sent. The class is that of the last one refused.
    case destinationNotAllowed(AddressClass)
    /// TLS failed (certificate, handshake).
    case tls(String)
    /// Any other transport failure, with libcurl's explanation.
    case transport(String)
    /// The caller cancelled, or the client shut down.
    case cancelled

    public var description: String {
        switch self {
        case .timedOut: "the HTTP request timed out"
        case .couldNotResolve(let detail): "could not resolve the host: \(detail)"
        case .connectionRefused(let detail): "connection refused: \(detail)"
        case .couldNotConnect(let detail): "could not connect: \(detail)"
        case .destinationNotAllowed(let kind): "destination not allowed: \(kind)"
        case .tls(let detail): "TLS failed: \(detail)"
        case .transport(let detail): "HTTP transport failed: \(detail)"
        case .cancelled: "the HTTP request was cancelled"
        }
    }

    /// The failure's class without libcurl's details (addresses, ports, timings), for showing to
    /// whoever aimed the request: `timed out`, `connection refused`, `destination not allowed:
    /// private address`, …
    public var reason: String {
        switch self {
        case .timedOut: "timed out"
        case .couldNotResolve: "could not resolve host"
        case .connectionRefused: "connection refused"
        case .couldNotConnect: "could not connect"
        case .destinationNotAllowed(let kind): "destination not allowed: \(kind)"
        case .tls: "TLS failed"
        case .transport: "transport error"
        case .cancelled: "cancelled"
        }
    }

    /// The status code a service reports for this failure.
    public var busError: BusError {
        switch self {
        case .timedOut: .deadlineExceeded(description)
        case .cancelled: .cancelled(description)
        case .destinationNotAllowed: .permissionDenied(description)
        case .couldNotResolve, .connectionRefused, .couldNotConnect, .tls, .transport: .unavailable(description)
        }
    }
}
