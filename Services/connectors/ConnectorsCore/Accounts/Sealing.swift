import Crypto
import Foundation
import Logging
import Wire

/// Seals secrets at rest with ChaChaPoly (an AEAD: a changed byte, or a row's sealed token moved
/// to another account, fails to open). The account id is the associated data, so a sealed token
/// opens only in its own row. Layout: nonce (12) + ciphertext + tag (16), ChaChaPoly's combined form.
struct Sealer: Sendable {
    private let key: SymmetricKey

    init(key: [UInt8]) {
        precondition(key.count == 32, "the sealing key is 32 bytes (checked when it was read)")
        self.key = SymmetricKey(data: key)
    }

    func seal(_ secret: String, account: String) throws(BusError) -> Data {
        do {
            return try ChaChaPoly.seal(Data(secret.utf8), using: key, authenticating: Data(account.utf8)).combined
        } catch {
            throw .internal("cannot seal a token: \(error)")
        }
    }

    /// - Throws: `FAILED_PRECONDITION` when the box does not open (another key, or tampered).
    func open(_ sealed: Data, account: String) throws(BusError) -> String {
        do {
            let box = try ChaChaPoly.SealedBox(combined: sealed)
            return String(decoding: try ChaChaPoly.open(box, using: key, authenticating: Data(account.utf8)), as: UTF8.self)
        } catch {
            throw .failedPrecondition("the stored token of account \(account) does not open with CONNECTORS_KEY_FILE's key (another key, or the row was changed); link the account again")
        }
    }
}
