import Foundation

/// One server-sent event (the `text/event-stream` format of the HTML standard).
public struct ServerSentEvent: Sendable, Equatable {
    /// The `event:` field; "message" when absent.
    public var event: String
    /// The `data:` lines joined with newlines.
    public var data: String
    /// The `id:` field, if any.
    public var id: String?
    /// The `retry:` field in milliseconds, if any.
    public var retry: Int?

    public init(event: String = "message", data: String, id: String? = nil, retry: Int? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
    }
}

/// Turns body chunks into server-sent events. Lines may end in LF, CRLF or CR, and chunks may
/// split lines (even a CRLF) anywhere; an event ends at an empty line.
public struct ServerSentEventParser: Sendable {
    private var pending: [UInt8] = []
    private var lastWasCR = false
    private var event = ""
    private var data: [String] = []
    private var id: String?
    private var retry: Int?
    private var hasData = false

    public init() {}

    /// Feeds one chunk; returns the events it completed.
    public mutating func feed(_ chunk: Data) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in chunk {
            if lastWasCR {
                lastWasCR = false
                if byte == 0x0A { continue }
            }
            if byte == 0x0A || byte == 0x0D {
                lastWasCR = byte == 0x0D
                if let completed = line(String(decoding: pending, as: UTF8.self)) { events.append(completed) }
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(byte)
            }
        }
        return events
    }

    /// Ends the stream; a final event without its blank line is delivered, as browsers do not,
    /// because providers sometimes close right after the last `data:`.
    public mutating func finish() -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        if !pending.isEmpty, let completed = line(String(decoding: pending, as: UTF8.self)) { events.append(completed) }
        pending.removeAll()
        if let completed = line("") { events.append(completed) }
        return events
    }

    private mutating func line(_ text: String) -> ServerSentEvent? {
        if text.isEmpty {
            defer { event = ""; data = []; hasData = false; retry = nil }
            guard hasData else { return nil }
            return ServerSentEvent(event: event.isEmpty ? "message" : event, data: data.joined(separator: "\n"), id: id, retry: retry)
        }
        if text.hasPrefix(":") { return nil }
        let field: Substring, value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            var rest = text[text.index(after: colon)...]
            if rest.first == " " { rest = rest.dropFirst() }
            value = rest
        } else {
            field = Substring(text)
            value = ""
        }
        switch field {
        case "event": event = String(value)
        case "data":
            data.append(String(value))
            hasData = true
        case "id": if !value.contains("\u{0}") { id = String(value) }
        case "retry": retry = Int(value)
        default: break
        }
        return nil
    }
}

/// A `multipart/form-data` body (RFC 7578), e.g. for Whisper-style transcription uploads.
public struct MultipartFormData: Sendable {
    public let boundary: String
    private var body = Data()

    public init(boundary: String = "studybus-" + UUID().uuidString) {
        self.boundary = boundary
    }

    /// The `content-type` header value.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Adds a text field.
    public mutating func add(name: String, value: String) {
        body.append(Data("--\(boundary)\r\ncontent-disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
    }

    /// Adds a file field.
    public mutating func add(name: String, fileName: String, contentType: String, data: Data) {
        body.append(Data("--\(boundary)\r\ncontent-disposition: form-data; name=\"\(name)\"; filename=\"\(fileName)\"\r\ncontent-type: \(contentType)\r\n\r\n".utf8))
        body.append(data)
        body.append(Data("\r\n".utf8))
    }

    /// The complete body, with the closing boundary.
    public var encoded: Data { body + Data("--\(boundary)--\r\n".utf8) }
}
