import Bus
import Foundation
import Glibc
import TestSupport
import Testing
import Wire
import ZMQ

@Suite("CURVE keys: Z85, key files in the zcert format, the environment's key settings")
struct KeyFileTests {
    @Test("Z85 encodes RFC 32's example and refuses what is not Z85")
    func z85() {
        let hello: [UInt8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
        #expect(Z85.encode(hello) == "HelloWorld")
        #expect(Z85.decode("HelloWorld") == hello)
        #expect(Z85.decode("Hello") == [0x86, 0x4F, 0xD2, 0x6F])
        #expect(Z85.decode("Hell") == nil, "not a multiple of 5")
        #expect(Z85.decode("Hell\"") == nil, "'\"' is not in the alphabet")
        #expect(Z85.decode("Hellé") == nil)
        // "%nSc1" is 2^32 exactly: more than four bytes can hold; it must not wrap or trap.
        #expect(Z85.decode("%nSc1") == nil)
        #expect(Z85.decode("%nSc0") == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(Z85.decode("#####") == nil)
    }

    @Test("keys libzmq generates read back through our Z85, and a pair is checked to belong together")
    func libzmqKeys() throws {
        #expect(ZMQCurve.isAvailable)
        let pair = try CurveKeyPair.generate()
        let (publicText, secretText) = try ZMQCurve.keyPair()
        #expect(CurveKey(z85: publicText)?.z85 == publicText)
        #expect(try ZMQCurve.publicKey(forSecretKey: secretText) == publicText)
        #expect(pair.description.contains(pair.publicKey.z85) && !pair.description.contains(pair.secretKey.z85))
        #expect(!String(reflecting: pair).contains(pair.secretKey.z85))
        let other = try CurveKeyPair.generate()
        #expect(throws: BusError.self) { try CurveKeyPair(publicKey: other.publicKey, secretKey: pair.secretKey) }
        #expect(CurveKey(z85: String(publicText.dropLast())) == nil)
    }

    @Test("a written pair reads back: NAME.key (644) holds the public key, NAME.key_secret (600) both; nothing is overwritten")
    func writeAndRead() throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let pair = try keys.make("store")
        #expect(try mode(keys.publicPath("store")) == 0o644)
        #expect(try mode(keys.secretPath("store")) == 0o600)
        #expect(try mode(keys.directory) == 0o700)
        #expect(try KeyFile.readSecret(path: keys.secretPath("store")) == pair)
        let publicFile = try KeyFile.readPublic(path: keys.publicPath("store"))
        #expect(publicFile == KeyFile(name: "store", publicKey: pair.publicKey))
        #expect(try KeyFile.readPublic(path: keys.secretPath("store")).publicKey == pair.publicKey)
        let text = try String(contentsOfFile: keys.publicPath("store"), encoding: .utf8)
        #expect(!text.contains("secret-key"))

        let again = #expect(throws: BusError.self) { try KeyFile.write(try CurveKeyPair.generate(), name: "store", directory: keys.directory) }
        #expect(again?.code == .alreadyExists)
        #expect(try KeyFile.readSecret(path: keys.secretPath("store")) == pair, "the first pair is untouched")
        for name in ["../escape", "a\"b", ".hidden", "", "two words"] {
            #expect(throws: BusError.self, "\(name)") { try KeyFile.write(pair, name: name, directory: keys.directory) }
        }
    }

    @Test("a secret key file that group or others may read is refused with the chmod that fixes it")
    func permissions() throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        _ = try keys.make("store")
        let path = keys.secretPath("store")
        for loose: mode_t in [0o644, 0o640, 0o604, 0o620] {
            chmod(path, loose)
            let error = #expect(throws: BusError.self) { try KeyFile.readSecret(path: path) }
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message.contains("chmod 600 \(path)") == true, "\(error?.message ?? "")")
        }
        chmod(path, 0o400)
        #expect(throws: Never.self) { try KeyFile.readSecret(path: path) }
        // A public key file may be read by anyone; it is not a secret key file.
        let noSecret = #expect(throws: BusError.self) { try KeyFile.readSecret(path: keys.publicPath("store")) }
        #expect(noSecret?.message.contains("has no curve secret-key") == true)
        let missing = #expect(throws: BusError.self) { try KeyFile.readSecret(path: keys.directory + "/nobody.key_secret") }
        #expect(missing?.message.contains("cannot open key file") == true)
        #expect(throws: BusError.self) { try KeyFile.readPublic(path: keys.directory) }
    }

    @Test("a certificate as CZMQ writes it is read; format errors name the line")
    func format() throws {
        let pair = try CurveKeyPair.generate()
        let czmq = """
            #   ****  Generated on 2026-11-27 10:00:00 by CZMQ  ****
            #   ZeroMQ CURVE **Secret** Certificate
            #   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.

            metadata
                name = "store"    # the service
                email = 'ops@example.com'
            curve
                public-key = "\(pair.publicKey.z85)"
                secret-key = "\(pair.secretKey.z85)"

            """
        let file = try KeyFile.parse(Array(czmq.utf8), path: "czmq.key_secret")
        #expect(file == KeyFile(name: "store", publicKey: pair.publicKey, secretKey: pair.secretKey))
        let windows = czmq.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try KeyFile.parse(Array(windows.utf8), path: "crlf.key_secret") == file)
        // Unquoted, a value ends at a `#` (a comment), which Z85 may contain: CZMQ always quotes keys.
        var unquotable = pair
        while unquotable.publicKey.z85.contains("#") { unquotable = try CurveKeyPair.generate() }
        let bare = try KeyFile.parse(Array("curve\n    public-key = \(unquotable.publicKey.z85)\n".utf8), path: "bare.key")
        #expect(bare.publicKey == unquotable.publicKey && bare.name == nil)

        func failure(_ text: String) -> String? { failure(bytes: Array(text.utf8)) }
        func failure(bytes: [UInt8]) -> String? {
            do {
                _ = try KeyFile.parse(bytes, path: "f")
                return nil
            } catch {
                return error.message
            }
        }
        #expect(failure("curve\n    public-key = \"short\"\n") == "key file f, line 2: public-key must be 40 characters of Z85")
        #expect(failure("curve\n   public-key = \"\(pair.publicKey.z85)\"\n") == "key file f, line 2: indentation must be a multiple of 4 spaces")
        #expect(failure("curve\n    public-key = \"\(pair.publicKey.z85)\n") == "key file f, line 2: the value's closing \" is missing")
        #expect(failure("metadata\n    name = x\n") == "key file f has no curve public-key")
        #expect(failure("curve\n\tpublic-key = \"\(pair.publicKey.z85)\"\n") == "key file f, line 2: indent with spaces, not tabs")
        #expect(failure("curve\n    public-key = \"\(pair.publicKey.z85)\"\n    public-key = \"\(pair.publicKey.z85)\"\n")
            == "key file f, line 3: public-key is given twice (first on line 2)")
        #expect(failure("curve\n    public-key = \"\(pair.publicKey.z85)\" extra\n") == "key file f, line 2: unexpected text after the value")
        #expect(failure(bytes: [0xFF]) == "key file f is not UTF-8 text")
    }

    @Test("BUS_SECURITY is on by default and then needs both key files; off needs none; errors name the variable")
    func environment() throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let pair = try keys.make("store")
        #expect(try BusSecurity.fromEnvironment(["BUS_SECURITY": "off"]) == .off)
        #expect(try BusSecurity.fromEnvironment(["BUS_SECURITY": "OFF", "BUS_KEY": "/nowhere"]) == .off)
        #expect(try BusSecurity.fromEnvironment(keys.environment("store")) == keys.security(pair))
        var unset = keys.environment("store")
        unset["BUS_SECURITY"] = nil
        #expect(try BusConfiguration.fromEnvironment(service: "store", unset).security == keys.security(pair))

        func failure(_ environment: [String: String]) -> BusError? {
            #expect(throws: BusError.self) { try BusConfiguration.fromEnvironment(service: "store", environment) }
        }
        let noKey = failure([:])
        #expect(noKey?.code == .failedPrecondition)
        #expect(noKey?.message.contains("BUS_KEY is not set") == true)
        #expect(noKey?.message.contains("BUS_SECURITY=off") == true)
        #expect(failure(["BUS_KEY": keys.secretPath("store")])?.message.contains("BUS_BROKER_KEY is not set") == true)
        #expect(failure(["BUS_SECURITY": "maybe"])?.code == .invalidArgument)
        chmod(keys.secretPath("store"), 0o644)
        let loose = failure(keys.environment("store"))
        #expect(loose?.message.hasPrefix("BUS_KEY: secret key file \(keys.secretPath("store")) may be accessed by others") == true)
        chmod(keys.secretPath("store"), 0o600)
        var wrongBroker = keys.environment("store")
        wrongBroker["BUS_BROKER_KEY"] = keys.directory + "/missing.key"
        #expect(failure(wrongBroker)?.message.hasPrefix("BUS_BROKER_KEY: cannot open key file") == true)
    }

    private func mode(_ path: String) throws -> mode_t {
        var status = stat()
        guard stat(path, &status) == 0 else { throw BusError.notFound(path) }
        return status.st_mode & 0o777
    }
}
