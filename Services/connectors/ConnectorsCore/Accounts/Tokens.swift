import Foundation
import Logging
import ServiceKit
import Synchronization
import Wire

/// What Google's token endpoint answered.
struct TokenGrant: Sendable {
    var accessToken: String
    var expiresIn: TimeInterval
    var refreshToken: String?
    var scopes: [String]
    /// From the OpenID `id_token`, when the grant had `openid`/`email`: the account's stable id and address.
    var subject: String?
    var email: String?
}

/// Google's OAuth 2.0 token endpoint: the code exchange, refreshes and revocation.
struct GoogleOAuth: Sendable {
    let http: GoogleHTTP
    let tokenURL: String
    let revokeURL: String
    let clientID: String
    let clientSecret: String

    /// `grant_type=authorization_code`.
    func exchange(code: String, redirectURI: String, verifier: String?) async throws(GoogleError) -> TokenGrant {
        var form = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("client_id", clientID)]
        if !clientSecret.isEmpty { form.append(("client_secret", clientSecret)) }
        if let verifier { form.append(("code_verifier", verifier)) }
        return try Self.grant(try await http.json(tokenURL, method: "POST", accessToken: nil, form: form, bucket: nil))
    }

    /// `grant_type=refresh_token`.
    func refresh(_ refreshToken: String) async throws(GoogleError) -> TokenGrant {
        var form = [("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", clientID)]
        if !clientSecret.isEmpty { form.append(("client_secret", clientSecret)) }
        return try Self.grant(try await http.json(tokenURL, method: "POST", accessToken: nil, form: form, bucket: nil))
    }

    /// Revokes the grant (a refresh token revokes its access tokens too).
    func revoke(_ token: String) async throws(GoogleError) {
        _ = try await http.send(revokeURL, method: "POST", accessToken: nil, form: [("token", token)], bucket: nil)
    }

    /// Reads a token answer: `access_token` (1...4096 bytes), `expires_in` (1...86,400 s; Google
    /// gives 3,599), `refresh_token`, `scope` (space-separated), `id_token`.
    static func grant(_ json: [String: JSONValue]) throws(GoogleError) -> TokenGrant {
        guard let access = json["access_token"]?.stringValue, (1...4096).contains(access.utf8.count) else {
            throw .malformed("the token answer has no access_token")
        }
        guard let expires = json["expires_in"]?.intValue, (1...86_400).contains(expires) else {
            throw .malformed("the token answer's expires_in is not 1...86400 seconds")
        }
        var refresh: String?
        if let value = json["refresh_token"], value != .null {
            guard let text = value.stringValue, (1...4096).contains(text.utf8.count) else { throw .malformed("the token answer's refresh_token is not a token") }
            refresh = text
        }
        let scopes = (GoogleJSON.string(json["scope"], maximum: 8192) ?? "").split(separator: " ").prefix(64).map(String.init)
        var subject: String?, email: String?
        if let idToken = GoogleJSON.string(json["id_token"], maximum: 16_384) {
            // Received straight from Google's token endpoint over TLS, so OpenID Connect Core
            // (3.1.3.7) lets the client take its claims without checking the signature.
            let parts = idToken.split(separator: ".", omittingEmptySubsequences: false)
            if parts.count == 3, let payload = base64URL(String(parts[1])), let claims = try? JSONValue.parse(payload) {
                subject = GoogleJSON.string(claims["sub"], maximum: 255)
                email = GoogleJSON.string(claims["email"], maximum: 320)
            }
        }
        return TokenGrant(accessToken: access, expiresIn: TimeInterval(expires), refreshToken: refresh, scopes: scopes, subject: subject, email: email)
    }

    static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 = base64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// Access tokens in memory only (never on disk), per account, with their expiry. A token is
/// used while it has more than the margin left, and refreshed before that.
final class AccessTokens: Sendable {
    private struct Entry {
        var token: String
        var expiresAt: Date
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let refreshes = Atomic<Int>(0)

    func valid(_ account: String, now: Date, margin: TimeInterval) -> String? {
        entries.withLock { entries in
            guard let entry = entries[account], entry.expiresAt.timeIntervalSince(now) > margin else { return nil }
            return entry.token
        }
    }

    func store(_ account: String, token: String, expiresAt: Date) {
        entries.withLock { $0[account] = Entry(token: token, expiresAt: expiresAt) }
    }

    func forget(_ account: String) {
        _ = entries.withLock { $0.removeValue(forKey: account) }
    }

    /// Refreshes done since start (for tests and metrics).
    var refreshCount: Int { refreshes.load(ordering: .relaxed) }

    func countRefresh() { refreshes.add(1, ordering: .relaxed) }
}
