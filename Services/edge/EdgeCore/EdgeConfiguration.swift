import Contracts
import Foundation
import ServiceKit
import Wire

/// The edge's settings, read from the environment in one place (docs/services/edge.md).
public struct EdgeConfiguration: ServiceConfiguration {
    public static let serviceName = "edge"

    /// The address the HTTP server binds (`EDGE_HOST`, default `0.0.0.0`).
    public var host = "0.0.0.0"
    /// The HTTP port (`EDGE_PORT`, default 8080; 0 picks a free one, for tests).
    public var port = 8080
    /// The certificate chain and private key (PEM files) to serve HTTPS with, HTTP/2 offered
    /// by ALPN (`EDGE_TLS_CERT_FILE`, `EDGE_TLS_KEY_FILE`; default none: plain HTTP/1.1 for a
    /// proxy in front).
    public var tls: (certificateFile: String, keyFile: String)?
    /// How tokens are checked.
    public var tokens: TokenSettings
    /// Requests a user may make per second, on average (`EDGE_RATE_PER_SECOND`, default 20).
    public var ratePerSecond = 20.0
    /// Requests a user may make at once after a quiet spell (`EDGE_RATE_BURST`, default 40).
    public var rateBurst = 40
    /// A call's deadline when the request has no `Request-Timeout` (`EDGE_DEFAULT_TIMEOUT_MS`, default 30,000).
    public var defaultTimeout: Duration = .seconds(30)
    /// The longest `Request-Timeout` taken (`EDGE_MAX_TIMEOUT_MS`, default 300,000); longer ones are cut to it.
    public var maximumTimeout: Duration = .seconds(300)
    /// The largest JSON body (`EDGE_MAX_BODY_BYTES`, default 1 MiB).
    public var maximumBodyBytes = 1 << 20
    /// The largest uploaded file (`EDGE_MAX_UPLOAD_BYTES`, default 50 MiB: ingest's largest format).
    public var maximumUploadBytes = StoreLimits.materialBytes
    /// The `/v1/events` and streamed chat connections the edge keeps open in all
    /// (`EDGE_MAX_EVENT_STREAMS`, default 20,000) and for one user
    /// (`EDGE_MAX_EVENT_STREAMS_PER_USER`, default 8); more are 429.
    public var maximumEventStreams = 20_000
    public var maximumEventStreamsPerUser = 8
    /// Web origins whose pages may call the edge (`EDGE_CORS_ORIGINS`, comma-separated, `*` for
    /// any; default none): browsers get the CORS headers for them only.
    public var corsOrigins: [String] = []
    /// Which services and methods the edge routes: every contract's methods of audience `.app`.
    public var contracts: [any ServiceContract] = Catalog.contracts

    /// The defaults, with tokens checked by `tokens`.
    public init(tokens: TokenSettings) {
        self.tokens = tokens
    }

    /// Reads `EDGE_*` variables.
    /// - Throws: `INVALID_ARGUMENT` naming a variable with a bad value, `FAILED_PRECONDITION` for
    ///   a key file that cannot be read or no key at all.
    public init(environment: Environment) throws(BusError) {
        self.init(tokens: try TokenSettings(environment: environment))
        host = environment.string("EDGE_HOST", default: host)
        port = try environment.int("EDGE_PORT", default: port, in: 0...65_535)
        ratePerSecond = Double(try environment.int("EDGE_RATE_PER_SECOND", default: Int(ratePerSecond), in: 1...1_000_000))
        rateBurst = try environment.int("EDGE_RATE_BURST", default: rateBurst, in: 1...1_000_000)
        defaultTimeout = try environment.milliseconds("EDGE_DEFAULT_TIMEOUT_MS", default: defaultTimeout)
        maximumTimeout = try environment.milliseconds("EDGE_MAX_TIMEOUT_MS", default: maximumTimeout)
        maximumBodyBytes = try environment.int("EDGE_MAX_BODY_BYTES", default: maximumBodyBytes, in: 1024...(64 << 20))
        maximumUploadBytes = try environment.int("EDGE_MAX_UPLOAD_BYTES", default: maximumUploadBytes, in: 1024...(1 << 30))
        maximumEventStreams = try environment.int("EDGE_MAX_EVENT_STREAMS", default: maximumEventStreams, in: 1...1_000_000)
        maximumEventStreamsPerUser = try environment.int("EDGE_MAX_EVENT_STREAMS_PER_USER", default: maximumEventStreamsPerUser, in: 1...10_000)
        switch (environment.optionalString("EDGE_TLS_CERT_FILE"), environment.optionalString("EDGE_TLS_KEY_FILE")) {
        case (let certificate?, let key?): tls = (certificate, key)
        case (nil, nil): tls = nil
        default: throw .invalidArgument("set both EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE, or neither")
        }
        corsOrigins = environment.string("EDGE_CORS_ORIGINS", default: "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    public static var usage: String {
        """
        USAGE: edge

        The StudyBus HTTP edge: apps call app-facing methods as `POST /v1/SERVICE/METHOD` with a
        JSON body and `Authorization: Bearer JWT`; the token's `sub` is the user every call acts
        for. Configured by environment variables (defaults in brackets):
          EDGE_HOST [0.0.0.0], EDGE_PORT [8080]
          EDGE_TLS_CERT_FILE, EDGE_TLS_KEY_FILE     PEM files: HTTPS with HTTP/2 (default: plain HTTP)
          EDGE_JWT_SECRET or EDGE_JWT_SECRET_FILE   HS256 secret (at least 32 bytes)
          EDGE_JWKS_FILE                            RS256/ES256 public keys (a JWKS document)
          EDGE_JWT_ISSUER [studybus], EDGE_JWT_AUDIENCE [studybus], EDGE_JWT_LEEWAY_SECONDS [30]
          EDGE_RATE_PER_SECOND [20], EDGE_RATE_BURST [40]            per-user token bucket
          EDGE_DEFAULT_TIMEOUT_MS [30000], EDGE_MAX_TIMEOUT_MS [300000]
          EDGE_MAX_BODY_BYTES [1048576], EDGE_MAX_UPLOAD_BYTES [52428800]
          EDGE_MAX_EVENT_STREAMS [20000], EDGE_MAX_EVENT_STREAMS_PER_USER [8]   open SSE streams
          EDGE_CORS_ORIGINS []                      web origins allowed to call (comma-separated, * for any)
        and the bus's (BUS_RPC, BUS_PUB, BUS_SUB; BUS_SECURITY, BUS_KEY, BUS_BROKER_KEY: the edge's
        key has role `edge`), LOG_LEVEL, LOG_FORMAT (docs/operations.md, Settings).
        Exit status: 0 after SIGTERM or SIGINT, 1 on a runtime error, 2 on a configuration error.
        """
    }
}

/// How the edge checks bearer tokens: the keys, and the issuer and audience they must name.
public struct TokenSettings: Sendable {
    /// The HS256 secret, if tokens may be signed with one.
    public var hmacSecret: [UInt8]?
    /// A JWKS document (JSON) with the public keys of RS256 and ES256 tokens.
    public var jwks: String?
    /// The `iss` every token must carry (`EDGE_JWT_ISSUER`).
    public var issuer = "studybus"
    /// The value `aud` must hold (`EDGE_JWT_AUDIENCE`).
    public var audience = "studybus"
    /// How far `exp` and `nbf` may be off, for clocks that disagree (`EDGE_JWT_LEEWAY_SECONDS`).
    public var leeway: TimeInterval = 30

    /// The shortest HS256 secret taken: RFC 7518 §3.2 asks for a key as long as the hash.
    public static let minimumSecretBytes = 32

    public init(hmacSecret: [UInt8]? = nil, jwks: String? = nil) {
        self.hmacSecret = hmacSecret
        self.jwks = jwks
    }

    /// Reads `EDGE_JWT_SECRET` or `EDGE_JWT_SECRET_FILE`, `EDGE_JWKS_FILE`, `EDGE_JWT_ISSUER`,
    /// `EDGE_JWT_AUDIENCE` and `EDGE_JWT_LEEWAY_SECONDS`; `busctl token issue` reads the same.
    /// - Throws: `FAILED_PRECONDITION` for a file that cannot be read or when no key is set,
    ///   `INVALID_ARGUMENT` for a secret that is too short.
    public init(environment: Environment) throws(BusError) {
        self.init()
        hmacSecret = try Self.secret(environment)
        if let path = environment.optionalString("EDGE_JWKS_FILE") {
            jwks = String(decoding: try Self.read(path, "EDGE_JWKS_FILE"), as: UTF8.self)
        }
        guard hmacSecret != nil || jwks != nil else {
            throw .failedPrecondition("set EDGE_JWT_SECRET, EDGE_JWT_SECRET_FILE or EDGE_JWKS_FILE: the edge cannot check tokens without a key")
        }
        issuer = environment.string("EDGE_JWT_ISSUER", default: issuer)
        audience = environment.string("EDGE_JWT_AUDIENCE", default: audience)
        leeway = TimeInterval(try environment.int("EDGE_JWT_LEEWAY_SECONDS", default: Int(leeway), in: 0...3600))
    }

    /// The HS256 secret from `EDGE_JWT_SECRET` or the file `EDGE_JWT_SECRET_FILE` names (a
    /// trailing newline dropped), or nil when neither is set.
    public static func secret(_ environment: Environment) throws(BusError) -> [UInt8]? {
        var secret: [UInt8]
        if let path = environment.optionalString("EDGE_JWT_SECRET_FILE") {
            secret = try read(path, "EDGE_JWT_SECRET_FILE")
            while let last = secret.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { secret.removeLast() }
        } else if let text = environment.optionalString("EDGE_JWT_SECRET") {
            secret = Array(text.utf8)
        } else {
            return nil
        }
        guard secret.count >= minimumSecretBytes else {
            throw .invalidArgument("the JWT secret (EDGE_JWT_SECRET or EDGE_JWT_SECRET_FILE) must be at least \(minimumSecretBytes) bytes")
        }
        return secret
    }

    private static func read(_ path: String, _ variable: String) throws(BusError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .failedPrecondition("cannot read \(variable) \(path)")
        }
        guard data.count <= 1 << 20 else { throw .invalidArgument("\(variable) \(path) is larger than 1 MiB") }
        return Array(data)
    }
}
