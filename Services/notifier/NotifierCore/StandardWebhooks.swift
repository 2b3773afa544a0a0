import Bus
import Crypto
import Foundation
import Wire

/// Signing per the Standard Webhooks specification: `webhook-signature` is `v1,` + base64 of
/// HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}` with the endpoint's secret, which
/// is shown to users as `whsec_` + base64 of the key bytes.
public enum StandardWebhooks {
    /// The key bytes of a `whsec_…` secret (the prefix is optional, as receivers' libraries accept).
    /// - Throws: `INVALID_ARGUMENT` naming `field` unless it is base64 of 24 to 64 bytes.
    public static func key(fromSecret secret: String, field: String = "secret") throws(BusError) -> SymmetricKey {
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        guard let bytes = Data(base64Encoded: encoded), (24...64).contains(bytes.count) else {
            throw Field.invalid(field, "must be whsec_ followed by base64 of 24 to 64 random bytes")
        }
        return SymmetricKey(data: bytes)
    }

    /// A new random secret, `whsec_` + base64 of 32 bytes.
    public static func newSecret() -> String {
        "whsec_" + SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// The `webhook-signature` value for one attempt.
    public static func signature(id: String, timestamp: Int64, body: Data, key: SymmetricKey) -> String {
        var content = Data("\(id).\(timestamp).".utf8)
        content.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: content, using: key)
        return "v1," + Data(mac).base64EncodedString()
    }

    /// Whether any `v1` entry of a (space-separated) signature header matches, compared in
    /// constant time — what a receiver does.
    public static func verify(id: String, timestamp: Int64, body: Data, signatureHeader: String, key: SymmetricKey) -> Bool {
        var content = Data("\(id).\(timestamp).".utf8)
        content.append(body)
        for entry in signatureHeader.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let mac = Data(base64Encoded: String(parts[1])) else { continue }
            if HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: content, using: key) { return true }
        }
        return false
    }
}
