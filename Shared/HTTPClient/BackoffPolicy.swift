import Foundation
import Wire

/// How failed calls to a remote API are retried: exponential back-off with full jitter, or the
/// delay the server asked for (`Retry-After`), capped. ai-gateway's providers and connectors'
/// Google calls share it.
public struct BackoffPolicy: Sendable {
    /// Retries after the first attempt.
    public var maxRetries: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// The longest wait a server's `Retry-After` gets (the server may ask for any, and the
    /// wait pauses every caller of that server).
    public var maxRetryAfter: Duration

    public init(maxRetries: Int = 2, baseDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(8), maxRetryAfter: Duration = .seconds(60)) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// The wait before retry number `retry`: what the server asked for, up to
    /// ``maxRetryAfter``, or else the back-off.
    public func delay(beforeRetry retry: Int, providerAsked asked: Duration?) -> Duration {
        guard let asked else { return delay(beforeRetry: retry) }
        return min(max(asked, .zero), maxRetryAfter)
    }

    /// The wait before retry number `retry` (0-based): uniformly random up to base × 2^retry,
    /// capped (AWS's "full jitter").
    public func delay(beforeRetry retry: Int) -> Duration {
        let ceiling = min(maxDelay, baseDelay * (1 << min(retry, 20)))
        let milliseconds = Double(ceiling.components.seconds) * 1000 + Double(ceiling.components.attoseconds) / 1e15
        return .milliseconds(Int64(Double.random(in: 0...max(1, milliseconds))))
    }

    /// The delay an answer asks for: `retry-after-ms` (milliseconds, OpenAI's), else
    /// `Retry-After` (RFC 9110) in seconds or as an HTTP date. The server's numbers may be
    /// anything: one that is not a number of 0 or more is ignored, a date in the past is no
    /// wait, and a huge one saturates; ``delay(beforeRetry:providerAsked:)`` caps the wait.
    /// - Parameter headers: the answer's header fields, names in lower case.
    public static func retryAfter(_ headers: [String: String], now: Date = Date()) -> Duration? {
        if let milliseconds = headers["retry-after-ms"].flatMap(decimal) { return .milliseconds(saturating: milliseconds) }
        guard let value = headers["retry-after"] else { return nil }
        if let seconds = decimal(value) { return .seconds(saturating: seconds) }
        guard let date = parseHTTPDate(value) else { return nil }
        return .seconds(saturating: max(0, date.timeIntervalSince(now)))
    }

    /// An IMF-fixdate, e.g. `Wed, 21 Oct 2015 07:28:00 GMT`.
    public static func parseHTTPDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    /// A number of 0 or more written in decimal (`20`, `1.5`); not NaN, infinity, a sign or hex.
    public static func decimal(_ text: String) -> Double? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Double(text)
    }
}
