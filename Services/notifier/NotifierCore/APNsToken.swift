import Bus
import Crypto
import Foundation
import ServiceKit
import Synchronization
import Wire

/// APNs provider tokens: a JWT `{"alg":"ES256","kid":keyID}.{"iss":teamID,"iat":now}` signed
/// with the team's P-256 key. One token is reused until it is `refreshAfter` old (Apple rejects
/// tokens older than an hour and throttles re-signing more often than every 20 minutes).
final class APNsTokenProvider: Sendable {
    /// The key's raw scalar: the key type is not Sendable, so it is rebuilt for each signature
    /// (once per token, every 20 to 60 minutes).
    private let keyBytes: Data
    private let keyID: String
    private let teamID: String
    private let refreshAfter: Duration
    private let clock: any WallClock
    private let current = Mutex<(token: String, issuedAt: Int64)?>(nil)

    /// The shortest age at which Apple accepts a new token.
    static let minimumAge: Duration = .seconds(20 * 60)

    /// - Throws: `INVALID_ARGUMENT` when the key is not a P-256 private key in PEM.
    init(configuration: APNsConfiguration, clock: any WallClock) throws(BusError) {
        do {
            keyBytes = try P256.Signing.PrivateKey(pemRepresentation: configuration.privateKeyPEM).rawRepresentation
        } catch {
            throw .invalidArgument("NOTIFIER_APNS_KEY_FILE is not a P-256 private key in PEM (.p8): \(error)")
        }
        keyID = configuration.keyID
        teamID = configuration.teamID
        refreshAfter = min(max(configuration.tokenRefresh, Self.minimumAge), .seconds(59 * 60))
        self.clock = clock
    }

    /// The current token, signed anew when it is `refreshAfter` old.
    func token() -> String {
        let now = Int64(clock.now().timeIntervalSince1970)
        return current.withLock { current in
            if let existing = current, now - existing.issuedAt < refreshAfter.components.seconds { return existing.token }
            let token = sign(issuedAt: now)
            current = (token, now)
            return token
        }
    }

    /// Drops the token after APNs called it expired or invalid, if Apple lets us re-sign yet.
    /// Returns whether the next request gets a new token.
    @discardableResult
    func invalidate(_ token: String) -> Bool {
        let now = Int64(clock.now().timeIntervalSince1970)
        return current.withLock { current in
            guard let existing = current, existing.token == token else { return true }
            guard now - existing.issuedAt >= Self.minimumAge.components.seconds else { return false }
            current = nil
            return true
        }
    }

    private func sign(issuedAt: Int64) -> String {
        let header = Self.base64URL(Data(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Self.base64URL(Data(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
        let input = header + "." + claims
        let key = try? P256.Signing.PrivateKey(rawRepresentation: keyBytes)
        let signature = (try? key?.signature(for: Data(input.utf8)))??.rawRepresentation ?? Data()
        return input + "." + Self.base64URL(signature)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
