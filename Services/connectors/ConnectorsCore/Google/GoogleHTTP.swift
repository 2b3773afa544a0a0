import Foundation
import HTTPClient
import Logging
import Wire

/// Why a Google call failed, typed; each maps to a bus status code.
enum GoogleError: Error, Sendable, CustomStringConvertible {
    /// The token endpoint refused the grant (`invalid_grant`): code used or expired, refresh
    /// token revoked.
    case invalidGrant(String)
    /// The sync token or history id is no longer valid (Calendar 410 GONE, Gmail 404 on history):
    /// sync again from the start.
    case gone
    /// An HTTP error status, with Google's `error.message` and first `errors[].reason`.
    case http(status: Int, reason: String?, message: String)
    /// The answer is not what Google sends (not JSON, missing fields, absurd numbers).
    case malformed(String)
    /// The answer is larger than the limit.
    case tooLarge(String)
    /// No answer (timeout, connection refused, TLS).
    case transport(HTTPClientError)
    /// Not Google's: a call to another service or the database failed on the way.
    case bus(BusError)

    var description: String {
        switch self {
        case .invalidGrant(let detail): "Google refused the grant (invalid_grant): \(detail)"
        case .gone: "Google's sync cursor expired (a full sync follows)"
        case .http(let status, let reason, let message): "Google answered HTTP \(status)\(reason.map { " (\($0))" } ?? ""): \(message)"
        case .malformed(let detail): "Google's answer is malformed: \(detail)"
        case .tooLarge(let detail): "Google's answer is too large: \(detail)"
        case .transport(let error): "Google could not be reached: \(error.reason)"
        case .bus(let error): error.message
        }
    }

    var busError: BusError {
        switch self {
        case .invalidGrant: .failedPrecondition(description, details: .object(["needsReauth": .bool(true)]))
        case .gone: .aborted(description)
        case .http(let status, _, _) where status == 401 || status == 403: .permissionDenied(description)
        case .http(let status, _, _) where status == 404: .notFound(description)
        case .http(let status, _, _) where status == 429: .resourceExhausted(description)
        case .http(let status, _, _) where status == 400: .invalidArgument(description)
        case .http: .unavailable(description)
        case .malformed: .internal(description)
        case .tooLarge: .resourceExhausted(description)
        case .transport(let error): error.busError
        case .bus(let error): error
        }
    }
}

extension TokenBucket {
    /// Calendar's and Drive's "requests per 100 seconds": a burst of a tenth of it.
    static func google(requestsPer100Seconds: Int) -> TokenBucket {
        TokenBucket(perSecond: Double(requestsPer100Seconds) / 100, burst: max(1, Double(requestsPer100Seconds) / 10))
    }

    /// Gmail's "units per second per user": a burst of one second's worth.
    static func google(unitsPerSecond: Int) -> TokenBucket {
        TokenBucket(perSecond: Double(unitsPerSecond), burst: Double(unitsPerSecond))
    }

    /// Takes `units`, sleeping until they are there (first come, first served), so a burst of
    /// requests is spread to the quota instead of being refused by Google.
    func take(_ units: Double) async throws {
        let wait = reserve(units) ?? .zero
        if wait > .zero { try await Task.sleep(for: wait) }
    }
}

/// Google's HTTP: every call bounded (time, body size), paced by its quota bucket, retried as
/// ``BackoffPolicy`` says, and its errors read from Google's JSON error format.
struct GoogleHTTP: Sendable {
    let http: HTTPClient
    /// Retried on 429, on 403 with reason `rateLimitExceeded` or `userRateLimitExceeded`, on 5xx
    /// and on transport failures, after Google's `Retry-After` (capped) or the back-off: the
    /// policy ai-gateway's providers use.
    let retry: BackoffPolicy
    let timeout: Duration
    let maximumResponseBytes: Int
    let logger: Logger

    /// Sends a request (with `accessToken` as bearer, if given) and returns a 2xx answer.
    /// - Parameters:
    ///   - bucket: the quota it counts against, `units` of it.
    ///   - maximumBytes: the largest body taken (default: the JSON limit).
    func send(
        _ url: String, method: String = "GET", accessToken: String?, form: [(String, String)]? = nil,
        bucket: TokenBucket?, units: Double = 1, maximumBytes: Int? = nil
    ) async throws(GoogleError) -> HTTPResponse {
        let limit = maximumBytes ?? maximumResponseBytes
        var headers: [(name: String, value: String)] = [("accept", "application/json")]
        if let accessToken { headers.append(("authorization", "Bearer \(accessToken)")) }
        var body: Data?
        if let form {
            headers.append(("content-type", "application/x-www-form-urlencoded"))
            body = Data(Self.formEncode(form).utf8)
        }
        let request = HTTPRequest(
            method: method, url: url, headers: headers, body: body, timeout: timeout, maximumBodyBytes: limit + 1, decompress: false)
        var attempt = 0
        while true {
            do {
                try await bucket?.take(units)
            } catch {
                throw .transport(.cancelled)
            }
            let outcome: Result<HTTPResponse, GoogleError>
            do {
                outcome = .success(try await http.send(request))
            } catch {
                outcome = .failure(.transport(error))
            }
            var asked: Duration?
            switch outcome {
            case .success(let response):
                if response.bodyTruncated || response.body.count > limit {
                    throw .tooLarge("more than \(limit) bytes from \(Self.redacted(url))")
                }
                if (200..<300).contains(response.status) { return response }
                let error = Self.error(response)
                guard Self.retryable(error), attempt < retry.maxRetries else { throw error }
                asked = BackoffPolicy.retryAfter(response.headers, now: Date())
                if let asked { bucket?.pause(until: .now + min(asked, retry.maxRetryAfter)) }
                logger.notice("google asked to retry", metadata: [
                    "status": "\(response.status)", "attempt": "\(attempt + 1)", "url": "\(Self.redacted(url))",
                    "retry_after_ms": "\(asked.map { $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000 } ?? -1)",
                ])
            case .failure(let error):
                guard case .transport(let transport) = error, transport != .cancelled, attempt < retry.maxRetries else { throw error }
            }
            let delay = retry.delay(beforeRetry: attempt, providerAsked: asked)
            attempt += 1
            do {
                try await Task.sleep(for: delay)
            } catch {
                throw .transport(.cancelled)
            }
        }
    }

    /// The JSON object of a 2xx answer.
    func json(
        _ url: String, method: String = "GET", accessToken: String?, form: [(String, String)]? = nil, bucket: TokenBucket?, units: Double = 1
    ) async throws(GoogleError) -> [String: JSONValue] {
        let response = try await send(url, method: method, accessToken: accessToken, form: form, bucket: bucket, units: units)
        return try Self.object(response.body)
    }

    static func object(_ body: Data) throws(GoogleError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONValue.parse(body)
        } catch {
            throw .malformed("not JSON (\(error.reason) at byte \(error.offset))")
        }
        guard let object = value.objectValue else { throw .malformed("JSON that is not an object") }
        return object
    }

    /// Google's error format: `{"error": {"code", "message", "errors": [{"reason"}], "status"}}`,
    /// or OAuth's `{"error": "invalid_grant", "error_description"}`.
    static func error(_ response: HTTPResponse) -> GoogleError {
        let json = try? JSONValue.parse(response.body)
        if let oauth = json?["error"]?.stringValue {
            let description = json?["error_description"]?.stringValue ?? ""
            if oauth == "invalid_grant" { return .invalidGrant(String(description.prefix(200))) }
            return .http(status: response.status, reason: String(oauth.prefix(64)), message: String(description.prefix(300)))
        }
        let error = json?["error"]
        let reason = error?["errors"]?.arrayValue?.first?["reason"]?.stringValue ?? error?["status"]?.stringValue
        let message = error?["message"]?.stringValue ?? String(decoding: response.body.prefix(200), as: UTF8.self)
        if response.status == 410 { return .gone }
        return .http(status: response.status, reason: reason.map { String($0.prefix(64)) }, message: String(message.prefix(300)))
    }

    /// 429, 403 rate errors, 5xx.
    static func retryable(_ error: GoogleError) -> Bool {
        guard case .http(let status, let reason, _) = error else { return false }
        if status == 429 || (500...599).contains(status) { return true }
        return status == 403 && ["rateLimitExceeded", "userRateLimitExceeded"].contains(reason ?? "")
    }

    /// The URL without its query (which may hold a token or a user's search).
    static func redacted(_ url: String) -> String {
        String(url.prefix { $0 != "?" })
    }

    static func formEncode(_ fields: [(String, String)]) -> String {
        fields.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    static func escape(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        var result = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80, allowed.contains(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    /// `base?name=value&…`, values escaped; nil values left out.
    static func url(_ base: String, _ query: [(String, String?)]) -> String {
        let parts = query.compactMap { name, value in value.map { "\(escape(name))=\(escape($0))" } }
        return parts.isEmpty ? base : base + "?" + parts.joined(separator: "&")
    }
}

/// Reading fields of Google's answers, range-checked.
enum GoogleJSON {
    /// A string field of at most `maximum` bytes, else nil.
    static func string(_ value: JSONValue?, maximum: Int = 4096) -> String? {
        guard let text = value?.stringValue, text.utf8.count <= maximum else { return nil }
        return text
    }

    /// An id: 1...256 bytes of letters, digits and `-_.@`, else a malformed error.
    static func id(_ value: JSONValue?, _ what: String) throws(GoogleError) -> String {
        guard let text = value?.stringValue, (1...256).contains(text.utf8.count),
              text.utf8.allSatisfy({ $0 < 0x80 && (isalnum(Int32($0)) != 0 || "-_.@".utf8.contains($0)) })
        else { throw .malformed("\(what) is not an id") }
        return text
    }

    /// A page token: 1...4096 bytes, or nil when absent.
    static func token(_ value: JSONValue?, _ what: String) throws(GoogleError) -> String? {
        guard let value, value != .null else { return nil }
        guard let text = value.stringValue, (1...4096).contains(text.utf8.count) else { throw .malformed("\(what) is not a token") }
        return text
    }

    /// RFC 3339 (`2026-12-02T10:00:00Z`, `…+01:00`, fractions) or a date (`2026-12-02`, at
    /// midnight UTC), between 1970 and 2200; else nil.
    static func date(_ text: String?) -> Date? {
        guard let text, text.utf8.count <= 64 else { return nil }
        var date: Date?
        if text.utf8.count == 10 {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd"
            date = formatter.date(from: text)
        } else {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            date = formatter.date(from: text)
            if date == nil {
                formatter.formatOptions = [.withInternetDateTime]
                date = formatter.date(from: text)
            }
        }
        guard let date, (0...7_258_118_400).contains(date.timeIntervalSince1970) else { return nil }
        return date
    }

    /// RFC 3339 in UTC with milliseconds, as Drive's queries take.
    static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
