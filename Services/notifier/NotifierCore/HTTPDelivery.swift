import Contracts
import Foundation
import HTTPClient

/// What bounds one HTTP delivery attempt: its time, and how much of the answer is read.
struct DeliveryLimits: Sendable {
    /// The whole attempt; connecting gets at most 10 s of it.
    var timeout: Duration
    /// The body is read up to this, the rest left unread.
    var maximumResponseBytes: Int

    /// A POST within these limits, asking for no compressed answer (nothing inflates).
    func post(url: String, headers: [(name: String, value: String)], body: Data) -> HTTPRequest {
        HTTPRequest(
            method: "POST", url: url, headers: headers, body: body, timeout: timeout, connectTimeout: min(timeout, .seconds(10)),
            version: .http2WhenOffered, maximumBodyBytes: maximumResponseBytes, decompress: false)
    }
}

/// The outcome of a plain HTTP delivery (webhook, ntfy), by status. The user reads `lastError`
/// back, so it holds the status or a classified transport failure, never the answer's body or
/// libcurl's details: an endpoint the user aims anywhere must not become a reader of what it
/// reaches.
enum HTTPOutcome {
    static func of(_ request: HTTPRequest, http: HTTPClient, now: Date) async -> DeliveryOutcome {
        let response: HTTPResponse
        do throws(HTTPClientError) {
            response = try await http.send(request)
        } catch .destinationNotAllowed(let kind) {
            // Not retried: the same name will most likely resolve to the same place again.
            return .failed(status: nil, error: HTTPClientError.destinationNotAllowed(kind).reason)
        } catch {
            return .retry(status: nil, error: error.reason, after: nil)
        }
        let status = response.status
        switch status {
        case 200..<300:
            return .sent(status: status)
        case 410:
            return .disableChannel(status: status, error: "HTTP 410 Gone: the endpoint asked for no more deliveries")
        case 408, 425, 429, 500..<600:
            return .retry(status: status, error: "HTTP \(status)", after: RetryPolicy.parseRetryAfter(response.header("retry-after"), now: now))
        case 300..<400:
            return .failed(status: status, error: "HTTP \(status): redirects are not followed")
        default:
            return .failed(status: status, error: "HTTP \(status)")
        }
    }
}
