import Crypto
import Foundation
import JWTKit
import Wire

/// Mints HS256 tokens with the edge's shared secret: development tokens (`busctl token issue`)
/// and tests. Production apps get their tokens from an identity provider.
public enum TokenIssuer {
    /// A signed token for `user`, valid from now for `lifetime`, naming `settings`' issuer and audience.
    /// - Throws: `FAILED_PRECONDITION` without an HS256 secret, `INVALID_ARGUMENT` for a user
    ///   that is not a user id (wire protocol, Addition 2) or a lifetime out of range.
    public static func issue(user: String, lifetime: TimeInterval, settings: TokenSettings, now: Date = Date()) async throws(BusError) -> String {
        guard let secret = settings.hmacSecret else {
            throw .failedPrecondition("set EDGE_JWT_SECRET or EDGE_JWT_SECRET_FILE to the edge's secret to issue tokens")
        }
        try RequestHeader.checkUser(user)
        guard lifetime.isFinite, lifetime > 0, lifetime <= maximumLifetime else {
            throw .invalidArgument("a token's lifetime must be more than 0 and at most \(Int(maximumLifetime)) seconds")
        }
        // NumericDate in whole seconds: some verifiers refuse fractions.
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(key: SymmetricKey(data: secret)), digestAlgorithm: .sha256)
        let claims = EdgeClaims(
            sub: SubjectClaim(value: user), exp: ExpirationClaim(value: now.addingTimeInterval(lifetime)),
            nbf: NotBeforeClaim(value: now), iat: IssuedAtClaim(value: now),
            iss: IssuerClaim(value: settings.issuer), aud: AudienceClaim(value: [settings.audience]))
        do {
            return try await keys.sign(claims)
        } catch {
            throw .internal("cannot sign the token: \(error)")
        }
    }

    /// The longest lifetime a development token may have: 30 days.
    public static let maximumLifetime: TimeInterval = 30 * 86_400

    /// Reads a lifetime such as `90s`, `15m`, `1h` or `7d` (a bare number is seconds).
    public static func lifetime(_ text: String) -> TimeInterval? {
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var unit: TimeInterval = 1
        if let last = text.last, let scale = units[last] {
            unit = scale
            digits = text.dropLast()
        }
        guard let value = Double(digits), value.isFinite else { return nil }
        return value * unit
    }
}
