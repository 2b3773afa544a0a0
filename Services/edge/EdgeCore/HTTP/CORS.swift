import HTTPTypes
import Hummingbird

/// Cross-origin access for web apps served from the configured origins: the headers a browser
/// needs on every answer to such an origin, and the answer to its preflight `OPTIONS`.
/// Requests from other origins get no CORS headers, so browsers keep their pages out; apps
/// that are not in a browser are not affected either way.
struct CORS: Sendable {
    let origins: Set<String>

    init(origins: [String]) {
        self.origins = Set(origins)
    }

    /// The origin to name in `Access-Control-Allow-Origin`, if a request with these headers
    /// comes from an allowed one.
    func allowedOrigin(_ requestHeaders: HTTPFields) -> String? {
        guard let origin = requestHeaders[.origin], !origins.isEmpty else { return nil }
        return origins.contains("*") || origins.contains(origin) ? origin : nil
    }

    /// Whether `request` is a preflight: `OPTIONS` asking which method and headers it may use.
    static func isPreflight(_ request: Request) -> Bool {
        request.method == .options && request.headers[.accessControlRequestMethod] != nil
    }

    /// The preflight's answer: 204, with what may be sent when the origin is allowed.
    func preflight(_ request: Request) -> Response {
        var headers: HTTPFields = [:]
        if let origin = allowedOrigin(request.headers) {
            headers[.accessControlAllowOrigin] = origin
            headers[.accessControlAllowMethods] = "GET, POST, OPTIONS"
            headers[.accessControlAllowHeaders] = "Authorization, Content-Type, Content-Disposition, Idempotency-Key, Request-Timeout, traceparent, Last-Event-ID"
            headers[.accessControlMaxAge] = "600"
        }
        headers[.vary] = "Origin"
        return Response(status: .noContent, headers: headers)
    }

    /// Adds the headers of an answer to an allowed origin.
    func decorate(_ response: inout Response, for request: Request) {
        decorate(&response.headers, for: request.headers)
    }

    /// Adds the headers of an answer to an allowed origin, to `headers`.
    func decorate(_ headers: inout HTTPFields, for requestHeaders: HTTPFields) {
        guard let origin = allowedOrigin(requestHeaders) else { return }
        headers[.accessControlAllowOrigin] = origin
        headers[.accessControlExposeHeaders] = "Retry-After, WWW-Authenticate, Content-Disposition"
        headers[.vary] = "Origin"
    }
}
