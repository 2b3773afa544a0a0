import Crypto
import Foundation
import Synchronization
import JWTKit
import Wire

/// The claims the edge reads from a bearer token. `exp` is required; `nbf` is optional.
struct EdgeClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?
    var iat: IssuedAtClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?

    // The checks that need the edge's settings run in `TokenVerifier.verify`; jwt-kit calls
    // this after the signature holds.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Why a token was refused: what `WWW-Authenticate` and the 401 body say. Never the token.
public struct TokenRefusal: Error, Sendable, Equatable {
    /// RFC 6750's error code: `invalid_request` when there is no usable `Authorization`
    /// header, `invalid_token` otherwise.
    public var error: String
    public var description: String

    static func token(_ description: String) -> TokenRefusal { TokenRefusal(error: "invalid_token", description: description) }
    /// No `Authorization` header at all.
    static let missing = TokenRefusal(error: "invalid_request", description: "an Authorization: Bearer token is required")
}

/// Checks bearer tokens: the algorithm against the key it names, the signature, `exp`, `nbf`,
/// `iss` and `aud`; maps `sub` to a bus user id.
///
/// Algorithms are fixed by the key, never by the token: HS256 tokens are checked with the
/// shared secret only, RS256 and ES256 tokens with the JWKS key their `kid` names, of the
/// matching key type. `alg: none` and anything else is refused before jwt-kit sees the token.
public struct TokenVerifier: Sendable {
    private struct Keys: Sendable {
        var hmac: JWTKeyCollection?
        var jwks: JWTKeyCollection?
    }

    private let settings: TokenSettings
    /// jwt-kit's key collections are actors, filled asynchronously; the service's initializer
    /// is not async, so they are built by a task started here and awaited by ``ready()``
    /// before the server listens.
    private let keys: Task<Keys, any Error>
    /// Tokens already verified, so that a token's signature is checked once, not per request.
    private let verified = VerifiedTokens(capacity: 10_000)
    /// The JWKS keys' types by `kid`, to refuse an RS256 token naming an EC key and the like.
    private let jwksKeyTypes: [String: JWK.KeyType]

    /// The longest `Authorization` value read; longer ones are refused unread.
    public static let maximumTokenBytes = 8192

    /// - Throws: `INVALID_ARGUMENT` for a JWKS document that does not decode.
    public init(settings: TokenSettings) throws(BusError) {
        self.settings = settings
        var jwks: JWKS?
        if let json = settings.jwks {
            do {
                jwks = try JSONDecoder().decode(JWKS.self, from: Data(json.utf8))
            } catch {
                throw .invalidArgument("EDGE_JWKS_FILE is not a JWKS document: \(error)")
            }
        }
        var types: [String: JWK.KeyType] = [:]
        for key in jwks?.keys ?? [] { if let kid = key.keyIdentifier?.string { types[kid] = key.keyType } }
        jwksKeyTypes = types
        let secret = settings.hmacSecret
        keys = Task { [jwks] in
            var keys = Keys()
            if let secret {
                let collection = JWTKeyCollection()
                await collection.add(hmac: HMACKey(key: SymmetricKey(data: secret)), digestAlgorithm: .sha256)
                keys.hmac = collection
            }
            if let jwks { keys.jwks = try await JWTKeyCollection().add(jwks: jwks) }
            return keys
        }
    }

    /// Waits until the keys are loaded.
    /// - Throws: `FAILED_PRECONDITION` for a JWKS key jwt-kit cannot use.
    public func ready() async throws(BusError) {
        do {
            _ = try await keys.value
        } catch {
            throw .failedPrecondition("EDGE_JWKS_FILE holds a key jwt-kit cannot use: \(error)")
        }
    }

    /// The bus user an `Authorization` header value authenticates.
    /// - Throws: ``TokenRefusal`` saying why not.
    public func user(authorization: String?, now: Date = Date()) async throws(TokenRefusal) -> String {
        guard let authorization, !authorization.isEmpty else { throw .missing }
        guard authorization.utf8.count <= Self.maximumTokenBytes else { throw .token("the token is too long") }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw TokenRefusal(error: "invalid_request", description: "the Authorization header must be 'Bearer <token>'")
        }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        // An app sends the same token with every request until it expires: its signature and
        // fixed claims are checked once, its times on every use.
        if let known = verified.claims(of: token) {
            try check(known, now: now)
            return Self.busUser(subject: known.sub.value)
        }
        let header = try Self.header(of: token)
        guard let loaded = try? await keys.value else { throw .token("the edge has no usable keys") }
        let collection = try collection(for: header, in: loaded)
        let claims: EdgeClaims
        do {
            claims = try await collection.verify(token, as: EdgeClaims.self)
        } catch {
            throw .token("the token's signature or claims are not valid")
        }
        try check(claims, now: now)
        verified.remember(claims, of: token)
        return Self.busUser(subject: claims.sub.value)
    }

    private func check(_ claims: EdgeClaims, now: Date) throws(TokenRefusal) {
        guard claims.exp.value.timeIntervalSince(now) > -settings.leeway else { throw .token("the token has expired") }
        if let nbf = claims.nbf, nbf.value.timeIntervalSince(now) > settings.leeway {
            throw .token("the token is not valid yet")
        }
        guard claims.iss?.value == settings.issuer else { throw .token("the token's issuer is not accepted") }
        guard claims.aud?.value.contains(settings.audience) == true else { throw .token("the token is not meant for this audience") }
        guard !claims.sub.value.isEmpty else { throw .token("the token has no subject") }
    }

    /// The key collection that may check a token with `header`.
    private func collection(for header: (alg: String, kid: String?), in keys: Keys) throws(TokenRefusal) -> JWTKeyCollection {
        switch header.alg {
        case "HS256":
            if let hmac = keys.hmac { return hmac }
        case "RS256", "ES256":
            let expected: JWK.KeyType = header.alg == "RS256" ? .rsa : .ecdsa
            if let jwks = keys.jwks, let kid = header.kid, jwksKeyTypes[kid] == expected { return jwks }
            throw .token("the token's key id does not name a \(header.alg) key")
        default:
            break
        }
        throw .token("the token's algorithm is not accepted")
    }

    /// Reads `alg` and `kid` from a compact JWS's header, refusing anything that is not one.
    static func header(of token: String) throws(TokenRefusal) -> (alg: String, kid: String?) {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, !segments[2].isEmpty, let bytes = base64URLDecode(segments[0]),
              let object = try? JSONValue.parse(bytes).objectValue, let alg = object["alg"]?.stringValue
        else { throw .token("the token is malformed") }
        return (alg, object["kid"]?.stringValue)
    }

    private static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    /// The bus user for a token subject: the subject itself when it is a user id as the wire
    /// protocol defines it (Addition 2), otherwise `sub:` and the hex SHA-256 of the subject,
    /// so identity providers' other forms (`auth0|…`, long OIDC subjects) map to one stable id.
    public static func busUser(subject: String) -> String {
        if (try? RequestHeader.checkUser(subject)) != nil { return subject }
        return "sub:" + SHA256.hash(data: Array(subject.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Tokens whose signature and claims held, with their claims: at most `capacity`, the whole
/// set forgotten when it is full (a token is then verified again on its next use).
final class VerifiedTokens: Sendable {
    private let capacity: Int
    private let claims = Mutex<[String: EdgeClaims]>([:])

    init(capacity: Int) {
        self.capacity = capacity
    }

    func claims(of token: String) -> EdgeClaims? {
        claims.withLock { $0[token] }
    }

    func remember(_ verified: EdgeClaims, of token: String) {
        claims.withLock { claims in
            if claims.count >= capacity { claims.removeAll(keepingCapacity: true) }
            claims[token] = verified
        }
    }
}
