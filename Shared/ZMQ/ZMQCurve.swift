import CZMQ

/// libzmq's CurveZMQ helpers (RFC 26): key generation and the public key of a secret key.
/// Keys are 32 bytes; libzmq hands them over as Z85 text (40 characters, RFC 32).
public enum ZMQCurve {
    /// Whether this libzmq was built with CURVE (Debian's is, through libsodium).
    public static var isAvailable: Bool { zmq_has("curve") != 0 }

    /// A new key pair from libsodium's random source, as Z85 text.
    /// - Throws: when libzmq has no CURVE (`ENOTSUP`).
    public static func keyPair() throws(ZMQError) -> (publicKey: String, secretKey: String) {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw .last("zmq_curve_keypair") }
        return (text(publicKey), text(secretKey))
    }

    /// The public key that belongs to `secretKey` (both Z85 text).
    /// - Throws: when `secretKey` is not 40 characters of Z85, or libzmq has no CURVE.
    public static func publicKey(forSecretKey secretKey: String) throws(ZMQError) -> String {
        guard secretKey.utf8.count == 40 else { throw ZMQError(code: EINVAL, operation: "zmq_curve_public: a Z85 key has 40 characters") }
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secretKey) == 0 else { throw .last("zmq_curve_public") }
        return text(publicKey)
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
