import HTTPTypes
import Wire

/// Who a request acts for: the bearer token's user, if the token holds and the user's bucket
/// has a token left. Calls and event streams are admitted alike.
struct Admission: Sendable {
    let verifier: TokenVerifier
    let rateLimiter: RateLimiter

    /// The user of the `Authorization` header's token, or the answer that refuses the request:
    /// 401 with `WWW-Authenticate` (RFC 6750) or 429 with `Retry-After`.
    func user(authorization: String?) async -> Result<String, ErrorAnswer> {
        let user: String
        do {
            user = try await verifier.user(authorization: authorization)
        } catch {
            var challenge = #"Bearer realm="studybus""#
            // RFC 6750 §3.1: a request without credentials gets the bare challenge.
            if error != .missing {
                challenge += #", error="\#(error.error)", error_description="\#(error.description)""#
            }
            return .failure(ErrorAnswer(BusError(.unauthenticated, error.description), headers: [.wwwAuthenticate: challenge]))
        }
        if let wait = rateLimiter.take(user) {
            let seconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
            let error = BusError(
                .resourceExhausted, "too many requests for this user; retry after \(seconds) s", details: .object(["retryAfterSeconds": .int(Int64(seconds))]))
            return .failure(ErrorAnswer(error, headers: [.retryAfter: String(seconds)]))
        }
        return .success(user)
    }
}
