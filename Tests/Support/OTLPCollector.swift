import Foundation
import Glibc
import Synchronization
import Threads

/// A stand-in for an OpenTelemetry collector: real HTTP/1.1 (keep-alive, `Content-Length` or
/// chunked bodies) on 127.0.0.1, answering OTLP/HTTP exports as a collector does (200 with an
/// empty `ExportTraceServiceResponse`), and decoding each `ExportTraceServiceRequest` from the
/// protobuf wire format itself — field numbers as in opentelemetry-proto's `trace.proto`,
/// `common.proto` and `resource.proto` — so a test sees exactly what went over the wire.
///
/// Blocking sockets on threads of its own (one to accept, one per connection), never on the
/// cooperative pool.
public final class OTLPCollector: Sendable {
    /// A span as exported, with the `service.name` of its resource.
    public struct Span: Sendable, Equatable, CustomStringConvertible {
        public var service: String
        public var traceID: String
        public var spanID: String
        /// Empty for a root span.
        public var parentSpanID: String
        public var name: String
        public var kind: Kind
        public var attributes: [String: Value]
        /// 0 unset, 1 ok, 2 error (`Status.StatusCode`).
        public var statusCode: Int
        public var statusMessage: String

        public var description: String {
            "\(service) \(kind) '\(name)' \(traceID)/\(spanID) parent \(parentSpanID.isEmpty ? "-" : parentSpanID) status \(statusCode)"
        }
    }

    /// `Span.SpanKind`.
    public enum Kind: Int, Sendable {
        case unspecified, `internal`, server, client, producer, consumer
    }

    /// An attribute's value (`AnyValue`; arrays and maps are not decoded).
    public enum Value: Sendable, Equatable {
        case string(String), bool(Bool), int(Int64), double(Double), other
    }

    /// What one export request was: its path, content type and whether its body decoded.
    public struct Export: Sendable {
        public var path: String
        public var contentType: String
        public var decoded: Bool
    }

    public let port: Int
    private let listener: Int32
    private let state = Mutex<(spans: [Span], exports: [Export], connections: Int)>(([], [], 0))

    /// Listens on 127.0.0.1:`port`, a free one by default.
    public init(port: Int = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let error = POSIXError(.init(rawValue: errno) ?? .EADDRINUSE)
            close(fd)
            throw error
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        startThread(named: "otlp-accept") { [self] in acceptLoop() }
    }

    /// `http://127.0.0.1:PORT`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Every span received so far.
    public var spans: [Span] { state.withLock { $0.spans } }

    /// Every export request received so far.
    public var exports: [Export] { state.withLock { $0.exports } }

    /// How many connections were made to it so far.
    public var connections: Int { state.withLock { $0.connections } }

    /// Stops accepting; open connections end when their clients close them.
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            state.withLock { $0.connections += 1 }
            var limit = timeval(tv_sec: 120, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            startThread(named: "otlp-conn") { [self] in serve(connection) }
        }
    }

    /// Serves one keep-alive connection until the client closes it.
    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var reader = ConnectionReader(fd: connection)
        while let request = reader.nextRequest() {
            let decoded: [Span]?
            if request.path.hasSuffix("/v1/traces") && request.contentType.hasPrefix("application/x-protobuf") && request.contentEncoding == nil {
                decoded = try? Self.decodeExport(request.body)
            } else {
                decoded = nil
            }
            state.withLock { state in
                state.exports.append(Export(path: request.path, contentType: request.contentType, decoded: decoded != nil))
                state.spans += decoded ?? []
            }
            let answer = decoded != nil
                ? "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"
                : "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n"
            let bytes = Array(answer.utf8)
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
            if request.closes { return }
        }
    }

    // MARK: OTLP protobuf

    /// The spans of an `ExportTraceServiceRequest`.
    public static func decodeExport(_ body: [UInt8]) throws -> [Span] {
        var spans: [Span] = []
        var request = ProtoReader(body[...])
        while let (field, wire) = try request.next() {
            guard field == 1, wire == 2 else { try request.skip(wire); continue }
            // ResourceSpans: resource = 1, scope_spans = 2.
            var resourceSpans = ProtoReader(try request.bytes())
            var service = ""
            var scopeSpans: [ArraySlice<UInt8>] = []
            while let (field, wire) = try resourceSpans.next() {
                switch (field, wire) {
                case (1, 2):
                    // Resource: attributes = 1.
                    var resource = ProtoReader(try resourceSpans.bytes())
                    while let (field, wire) = try resource.next() {
                        guard field == 1, wire == 2 else { try resource.skip(wire); continue }
                        let (key, value) = try keyValue(try resource.bytes())
                        if key == "service.name", case .string(let name) = value { service = name }
                    }
                case (2, 2): scopeSpans.append(try resourceSpans.bytes())
                default: try resourceSpans.skip(wire)
                }
            }
            for scope in scopeSpans {
                // ScopeSpans: spans = 2.
                var reader = ProtoReader(scope)
                while let (field, wire) = try reader.next() {
                    guard field == 2, wire == 2 else { try reader.skip(wire); continue }
                    spans.append(try span(try reader.bytes(), service: service))
                }
            }
        }
        return spans
    }

    /// A `Span`: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, attributes 9, status 15.
    private static func span(_ bytes: ArraySlice<UInt8>, service: String) throws -> Span {
        var span = Span(service: service, traceID: "", spanID: "", parentSpanID: "", name: "", kind: .unspecified, attributes: [:], statusCode: 0, statusMessage: "")
        var reader = ProtoReader(bytes)
        while let (field, wire) = try reader.next() {
            switch (field, wire) {
            case (1, 2): span.traceID = hex(try reader.bytes())
            case (2, 2): span.spanID = hex(try reader.bytes())
            case (4, 2): span.parentSpanID = hex(try reader.bytes())
            case (5, 2): span.name = String(decoding: try reader.bytes(), as: UTF8.self)
            case (6, 0): span.kind = Kind(rawValue: Int(try reader.varint())) ?? .unspecified
            case (9, 2):
                let (key, value) = try keyValue(try reader.bytes())
                span.attributes[key] = value
            case (15, 2):
                // Status: message = 2, code = 3.
                var status = ProtoReader(try reader.bytes())
                while let (field, wire) = try status.next() {
                    switch (field, wire) {
                    case (2, 2): span.statusMessage = String(decoding: try status.bytes(), as: UTF8.self)
                    case (3, 0): span.statusCode = Int(try status.varint())
                    default: try status.skip(wire)
                    }
                }
            default: try reader.skip(wire)
            }
        }
        return span
    }

    /// A `KeyValue` (key 1, value 2) with its `AnyValue` (string 1, bool 2, int 3, double 4).
    private static func keyValue(_ bytes: ArraySlice<UInt8>) throws -> (String, Value) {
        var reader = ProtoReader(bytes)
        var key = "", value = Value.other
        while let (field, wire) = try reader.next() {
            switch (field, wire) {
            case (1, 2): key = String(decoding: try reader.bytes(), as: UTF8.self)
            case (2, 2):
                var any = ProtoReader(try reader.bytes())
                while let (field, wire) = try any.next() {
                    switch (field, wire) {
                    case (1, 2): value = .string(String(decoding: try any.bytes(), as: UTF8.self))
                    case (2, 0): value = .bool(try any.varint() != 0)
                    case (3, 0): value = .int(Int64(bitPattern: try any.varint()))
                    case (4, 1): value = .double(Double(bitPattern: try any.fixed64()))
                    default: try any.skip(wire)
                    }
                }
            default: try reader.skip(wire)
            }
        }
        return (key, value)
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// The protobuf wire format, just enough to walk messages: tags, varints, fixed64 and
/// length-delimited fields.
struct ProtoReader {
    struct Malformed: Error {}
    private var remaining: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { remaining = bytes }

    /// The next field's number and wire type; nil at the end.
    mutating func next() throws -> (Int, Int)? {
        guard !remaining.isEmpty else { return nil }
        let tag = try varint()
        return (Int(tag >> 3), Int(tag & 7))
    }

    mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0, shift: UInt64 = 0
        while let byte = remaining.popFirst() {
            guard shift < 64 else { throw Malformed() }
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        throw Malformed()
    }

    mutating func fixed64() throws -> UInt64 {
        guard remaining.count >= 8 else { throw Malformed() }
        let value = remaining.prefix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        remaining = remaining.dropFirst(8)
        return value
    }

    mutating func bytes() throws -> ArraySlice<UInt8> {
        let length = Int(try varint())
        guard length >= 0, remaining.count >= length else { throw Malformed() }
        let field = remaining.prefix(length)
        remaining = remaining.dropFirst(length)
        return field
    }

    mutating func skip(_ wire: Int) throws {
        switch wire {
        case 0: _ = try varint()
        case 1: _ = try fixed64()
        case 2: _ = try bytes()
        case 5:
            guard remaining.count >= 4 else { throw Malformed() }
            remaining = remaining.dropFirst(4)
        default: throw Malformed()
        }
    }
}

/// Reads HTTP/1.1 requests off a connection, one after another.
private struct ConnectionReader {
    struct Request {
        var path: String
        var contentType: String
        var contentEncoding: String?
        var closes: Bool
        var body: [UInt8]
    }

    let fd: Int32
    private var buffered: [UInt8] = []

    init(fd: Int32) { self.fd = fd }

    /// The next request, or nil when the connection closed (or sent something unreadable).
    mutating func nextRequest() -> Request? {
        guard let end = readUntil([13, 10, 13, 10]) else { return nil }
        let head = String(decoding: buffered[..<end], as: UTF8.self)
        buffered.removeFirst(end + 4)
        let lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body: [UInt8] = []
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            while true {
                guard let lineEnd = readUntil([13, 10]) else { return nil }
                let sizeText = String(decoding: buffered[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
                buffered.removeFirst(lineEnd + 2)
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), fill(size + 2) else { return nil }
                body += buffered[..<size]
                buffered.removeFirst(size + 2)
                if size == 0 { break }
            }
        } else {
            let length = Int(headers["content-length"] ?? "0") ?? 0
            guard fill(length) else { return nil }
            body = Array(buffered[..<length])
            buffered.removeFirst(length)
        }
        return Request(
            path: String(requestLine[1]), contentType: headers["content-type"] ?? "", contentEncoding: headers["content-encoding"],
            closes: headers["connection"]?.lowercased() == "close", body: body)
    }

    /// Reads until `marker` is buffered; returns where it starts.
    private mutating func readUntil(_ marker: [UInt8]) -> Int? {
        var searchFrom = 0
        while true {
            if buffered.count >= marker.count {
                for start in searchFrom...(buffered.count - marker.count) where buffered[start..<(start + marker.count)].elementsEqual(marker) {
                    return start
                }
                searchFrom = buffered.count - marker.count + 1
            }
            guard receive() else { return nil }
        }
    }

    /// Reads until at least `count` bytes are buffered.
    private mutating func fill(_ count: Int) -> Bool {
        while buffered.count < count {
            guard receive() else { return false }
        }
        return true
    }

    private mutating func receive() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { return false }
        buffered += chunk[..<n]
        return true
    }
}
