import Bus
import Foundation
import TestSupport
import Testing
import Wire

@Suite("The broker's allowlist: one key per line with its role; errors name the line")
struct AllowlistTests {
    @Test("roles, labels, comments and two keys for one identity are read; lookups by key and by Z85")
    func reads() throws {
        let keys = try (0..<6).map { _ in try CurveKeyPair.generate().publicKey }
        let text = """
            # key                                    role      name
            \(keys[0].z85) service   store
            \(keys[1].z85)\toperator
            \(keys[2].z85) operator  alice   # busctl on alice's laptop
              \(keys[3].z85) edge web
            \(keys[4].z85) user u-42\r

            \(keys[5].z85) service store    # the new key while store's key is rotated
            #\(keys[0].z85) service old     (commented out)
            """
        let list = try Allowlist.parse(text, source: "allowlist")
        #expect(list.entries.map(\.line) == [2, 3, 4, 5, 6, 8])
        #expect(list.identity(of: keys[0]) == (try BusIdentity(role: .service, name: "store")))
        #expect(list.identity(of: keys[5]) == list.identity(of: keys[0]))
        #expect(list.identity(of: keys[1]) == (try BusIdentity(role: .operator, name: nil)))
        #expect(list.identity(of: keys[2])?.description == "operator alice")
        #expect(list.identity(of: keys[3])?.description == "edge web")
        #expect(list.identity(of: keys[4]) == (try BusIdentity(role: .user, name: "u-42")))
        #expect(list.identity(of: try CurveKeyPair.generate().publicKey) == nil)
        // What `busctl keys new` prints parses back to the same entry.
        let line = Allowlist.line(for: keys[2], try BusIdentity(role: .operator, name: "alice"))
        #expect(try Allowlist.parse(line, source: "line").entries.first?.identity.description == "operator alice")
    }

    @Test("no key starts with #, so a word starting with # always starts a comment")
    func hashStartsNoKey() {
        // '#' is Z85's digit 84, and 84 × 85⁴ is more than 2³² − 1: no group of four bytes starts with it.
        #expect(Z85.decode("#0000") == nil)
        #expect(Z85.encode([0xFF, 0xFF, 0xFF, 0xFF]) == "%nSc0")
    }

    @Test("each kind of error names its line, and nothing of the file is used")
    func errors() throws {
        let key = try CurveKeyPair.generate().publicKey, other = try CurveKeyPair.generate().publicKey
        func failure(_ text: String) -> String? {
            do {
                _ = try Allowlist.parse(text, source: "list")
                return nil
            } catch {
                #expect(error.code == .failedPrecondition)
                return error.message
            }
        }
        #expect(failure("\n\(key.z85)") == "list, line 2: the key has no role: write one of service NAME, operator [LABEL], edge [LABEL], user USERID")
        #expect(failure("\(key.z85) admin root") == "list, line 1: unknown role 'admin': the roles are service, operator, edge, user")
        #expect(failure("\(key.z85) service") == "list, line 1: a service identity needs a name (the service)")
        #expect(failure("\(key.z85) user") == "list, line 1: a user identity needs a name (the user id)")
        #expect(failure("\(key.z85) service store extra") == "list, line 1: unexpected 'extra' after the name (a comment starts with #)")
        #expect(failure("store service store")?.hasPrefix("list, line 1: 'store' is not a CURVE public key") == true)
        #expect(failure("\(key.z85.dropLast()) service store")?.contains("is not a CURVE public key") == true)
        #expect(failure("\(key.z85) service store\n\(other.z85) edge\n\(key.z85) edge web")
            == "list, line 3: key \(key.z85) is already listed on line 1")
        #expect(failure("\(key.z85) service \(String(repeating: "s", count: 129))")?.contains("1 to 128 characters") == true)
        #expect(failure("\(key.z85) user \u{7}bell")?.contains("without blanks or control characters") == true)
    }

    @Test("a file is read whole, and a file too large or missing is refused")
    func file() throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let key = try keys.make("store").publicKey
        let path = keys.directory + "/allowlist"
        try "\(key.z85) service store\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try Allowlist.read(path: path).identity(of: key)?.description == "service store")
        let missing = #expect(throws: BusError.self) { try Allowlist.read(path: keys.directory + "/none") }
        #expect(missing?.message.hasPrefix("cannot read the allowlist") == true)
        try Data(count: Allowlist.maximumBytes + 1).write(to: URL(fileURLWithPath: path))
        let large = #expect(throws: BusError.self) { try Allowlist.read(path: path) }
        #expect(large?.message.contains("is larger than") == true)
    }
}
