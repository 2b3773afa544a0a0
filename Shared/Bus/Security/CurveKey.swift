import Foundation
import Wire
import ZMQ

/// A CurveZMQ key (RFC 26): 32 bytes, written as 40 characters of Z85 (RFC 32) in key files,
/// allowlists and logs. The same type holds public and secret keys; a ``CurveKeyPair`` keeps
/// its secret half out of descriptions.
public struct CurveKey: Sendable, Hashable, CustomStringConvertible {
    /// The key's 32 bytes.
    public let bytes: [UInt8]

    /// The length of a key in bytes, and of its Z85 text.
    public static let byteCount = 32
    public static let textLength = 40

    /// A key from its 32 bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A key from its Z85 text; nil unless it is 40 characters of Z85.
    public init?(z85 text: some StringProtocol) {
        guard let bytes = Z85.decode(text), bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// The key as 40 characters of Z85.
    public var z85: String { Z85.encode(bytes) }

    public var description: String { z85 }
}

/// A process's key pair. Its description names the public key only, so that logging a
/// configuration never prints the secret.
public struct CurveKeyPair: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    public let publicKey: CurveKey
    public let secretKey: CurveKey

    /// A pair whose public key is checked to belong to the secret key.
    /// - Throws: `FAILED_PRECONDITION` when it does not (the files were mixed up).
    public init(publicKey: CurveKey, secretKey: CurveKey) throws(BusError) {
        guard try Self.publicKey(of: secretKey) == publicKey else {
            throw .failedPrecondition("public-key \(publicKey.z85) does not belong to the secret-key beside it")
        }
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A new random pair (libsodium's generator, through libzmq).
    /// - Throws: `FAILED_PRECONDITION` when libzmq has no CURVE.
    public static func generate() throws(BusError) -> CurveKeyPair {
        let texts: (publicKey: String, secretKey: String)
        do { texts = try ZMQCurve.keyPair() } catch { throw .failedPrecondition("cannot generate a CURVE key pair (is libzmq built with CURVE?): \(error)") }
        guard let publicKey = CurveKey(z85: texts.publicKey), let secretKey = CurveKey(z85: texts.secretKey) else {
            throw .internal("libzmq returned a key that is not Z85")
        }
        return try CurveKeyPair(publicKey: publicKey, secretKey: secretKey)
    }

    /// The public key that belongs to `secretKey`.
    static func publicKey(of secretKey: CurveKey) throws(BusError) -> CurveKey {
        let text: String
        do { text = try ZMQCurve.publicKey(forSecretKey: secretKey.z85) } catch { throw .failedPrecondition("cannot derive a CURVE public key (is libzmq built with CURVE?): \(error)") }
        guard let key = CurveKey(z85: text) else { throw .internal("libzmq returned a public key that is not Z85") }
        return key
    }

    public var description: String { "key pair \(publicKey.z85)" }
    public var customMirror: Mirror { Mirror(self, children: ["publicKey": publicKey]) }
}

/// Z85 (ZeroMQ RFC 32): 4 bytes as 5 printable characters, for keys in text files.
public enum Z85 {
    private static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)
    /// Each ASCII byte's digit value, or 0xFF for a byte outside the alphabet.
    private static let digits: [UInt8] = {
        var digits = [UInt8](repeating: 0xFF, count: 128)
        for (value, character) in alphabet.enumerated() { digits[Int(character)] = UInt8(value) }
        return digits
    }()

    /// The text of `bytes`, whose count must be a multiple of 4.
    public static func encode(_ bytes: [UInt8]) -> String {
        precondition(bytes.count % 4 == 0, "Z85 encodes a multiple of 4 bytes")
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count / 4 * 5)
        for start in stride(from: 0, to: bytes.count, by: 4) {
            var value = UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16 | UInt32(bytes[start + 2]) << 8 | UInt32(bytes[start + 3])
            var group = [UInt8](repeating: 0, count: 5)
            for index in stride(from: 4, through: 0, by: -1) {
                group[index] = alphabet[Int(value % 85)]
                value /= 85
            }
            text += group
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of `text`; nil when its length is not a multiple of 5, a character is not in
    /// the alphabet, or a group of 5 stands for more than 32 bits.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 5 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 5 * 4)
        for start in stride(from: 0, to: characters.count, by: 5) {
            var value: UInt64 = 0
            for character in characters[start..<start + 5] {
                guard character < 128, case let digit = digits[Int(character)], digit != 0xFF else { return nil }
                value = value * 85 + UInt64(digit)
            }
            guard value <= UInt64(UInt32.max) else { return nil }
            bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        return bytes
    }
}
