import Crypto
import CryptoExtras
import EdgeCore
import Foundation
import JWTKit
import TestSupport
import Testing
import Wire

@Suite("Who the caller is")
struct AuthTests {
    /// The 401 every refused token gets: the error body and an RFC 6750 challenge.
    private func expectRefused(_ answer: HTTPAnswer, error: String? = "invalid_token", sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer.status == 401, sourceLocation: sourceLocation)
        #expect(answer.json.objectValue?["status"] == .string("UNAUTHENTICATED"), sourceLocation: sourceLocation)
        let challenge = answer.header("WWW-Authenticate") ?? ""
        #expect(challenge.hasPrefix(#"Bearer realm="studybus""#), sourceLocation: sourceLocation)
        if let error {
            #expect(challenge.contains(#"error="\#(error)""#), sourceLocation: sourceLocation)
        } else {
            #expect(!challenge.contains("error="), sourceLocation: sourceLocation)
        }
    }

    @Test("no token, a malformed one, a bad signature, wrong iss or aud, expired, not yet valid, alg none: 401")
    func badTokensAreRefused() async throws {
        try await EdgeWorld.with { world in
            expectRefused(try await world.call("probe/whoami", token: nil), error: nil)
            expectRefused(try await world.call("probe/whoami", token: nil, headers: ["Authorization": "Basic YWxpY2U6cHc="]), error: "invalid_request")
            for malformed in ["abc", "a.b", "a.b.c", "..", "eyJhbGciOiJIUzI1NiJ9.e30.", String(repeating: "x", count: 9000)] {
                expectRefused(try await world.call("probe/whoami", token: malformed))
            }
            let otherSecret = Array("another-secret-0123456789abcdef0123".utf8)
            expectRefused(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice"), secret: otherSecret)))
            expectRefused(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice", audience: "another-app"))))
            expectRefused(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice", audience: nil))))
            expectRefused(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice", issuer: "someone-else"))))
            expectRefused(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice", expires: -120))))
            expectRefused(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice", notBefore: 600))))
            expectRefused(try await world.call("probe/whoami", token: try unsecured(TestClaims("alice"))))
            // A valid token still works after all that, within the clocks' leeway.
            #expect(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice", expires: -5))).status == 200)
        }
    }

    @Test("a token whose signature was made for other claims is refused")
    func tamperedClaimsAreRefused() async throws {
        try await EdgeWorld.with { world in
            let parts = try await token("alice").split(separator: ".")
            let bobClaims = try JSONEncoder().encode(TestClaims("bob"))
            let forged = "\(parts[0]).\(base64URL(bobClaims)).\(parts[2])"
            expectRefused(try await world.call("probe/whoami", token: forged))
        }
    }

    @Test("RS256 and ES256 tokens are checked with the JWKS key their kid names, of the matching type")
    func jwksKeysVerifyTheirAlgorithms() async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let ec = P256.Signing.PrivateKey()
        let rsaPublic = try rsa.publicKey.getKeyPrimitives()
        let ecPublic = ec.publicKey.rawRepresentation
        let jwks = """
            {"keys":[
              {"kty":"RSA","kid":"rsa-1","alg":"RS256","n":"\(base64URL(rsaPublic.modulus))","e":"\(base64URL(rsaPublic.publicExponent))"},
              {"kty":"EC","kid":"ec-1","alg":"ES256","crv":"P-256","x":"\(base64URL(ecPublic.prefix(32)))","y":"\(base64URL(ecPublic.suffix(32)))"}
            ]}
            """
        try await EdgeWorld.with({ $0.tokens = TokenSettings(hmacSecret: nil, jwks: jwks) }) { world in
            let signers = JWTKeyCollection()
            await signers.add(rsa: try Insecure.RSA.PrivateKey(pem: rsa.pemRepresentation), digestAlgorithm: .sha256, kid: "rsa-1")
            await signers.add(ecdsa: try ES256PrivateKey(pem: ec.pemRepresentation), kid: "ec-1")
            let rs256 = try await signers.sign(TestClaims("carol"), kid: "rsa-1")
            let es256 = try await signers.sign(TestClaims("dave"), kid: "ec-1")
            #expect(try await world.call("probe/whoami", token: rs256).decode(ProbeSeen.self).user == "carol")
            #expect(try await world.call("probe/whoami", token: es256).decode(ProbeSeen.self).user == "dave")

            // The ES256 token relabelled as RS256 names an EC key: refused before any check.
            expectRefused(try await world.call("probe/whoami", token: try relabelled(es256, header: #"{"alg":"RS256","kid":"ec-1","typ":"JWT"}"#)))
            // An unknown kid, and HS256 where no secret is configured.
            expectRefused(try await world.call("probe/whoami", token: try relabelled(rs256, header: #"{"alg":"RS256","kid":"rsa-2","typ":"JWT"}"#)))
            expectRefused(try await world.call("probe/whoami", token: try await hs256(TestClaims("carol"))))
        }
    }

    @Test("a subject that is not a bus user id becomes a stable hashed id")
    func foreignSubjectsAreHashed() async throws {
        try await EdgeWorld.with { world in
            let first = try await world.call("probe/whoami", token: try await hs256(TestClaims("auth0|65f1 a/b"))).decode(ProbeSeen.self).user
            let again = try await world.call("probe/whoami", token: try await hs256(TestClaims("auth0|65f1 a/b"))).decode(ProbeSeen.self).user
            let user = try #require(first)
            #expect(user == again)
            #expect(user.hasPrefix("sub:") && user.count == 68)
            #expect(try await world.call("probe/whoami", token: try await hs256(TestClaims("alice@example.org"))).decode(ProbeSeen.self).user == "alice@example.org")
        }
    }
}

/// An unsigned token (`alg: none`, empty signature).
func unsecured(_ claims: TestClaims) throws -> String {
    "\(base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))).\(base64URL(try JSONEncoder().encode(claims)))."
}

/// `token` with its header replaced and its claims and signature kept.
func relabelled(_ token: String, header: String) throws -> String {
    let parts = token.split(separator: ".")
    return "\(base64URL(Data(header.utf8))).\(parts[1]).\(parts[2])"
}

func base64URL(_ data: some DataProtocol) -> String {
    Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}
