import ArgumentParser
import EdgeCore
import Foundation
import ServiceKit
import Wire

extension BusCtl {
    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bearer tokens for the HTTP edge.",
            subcommands: [Issue.self])
    }
}

extension BusCtl.Token {
    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a development token for a user, signed with the edge's HS256 secret.",
            discussion: """
            Reads the edge's settings: EDGE_JWT_SECRET or EDGE_JWT_SECRET_FILE, EDGE_JWT_ISSUER \
            and EDGE_JWT_AUDIENCE (`eval "$(scripts/dev env)"` sets them for the local system). \
            Production apps get their tokens from an identity provider instead.

            Example:
              curl -H "Authorization: Bearer $(busctl token issue --user alice)" \\
                   -d '{}' http://127.0.0.1:8080/v1/store/materials.list
            """)

        @Option(help: "The user id the token authenticates (its sub).") var user: String
        @Option(help: "How long it is valid: 90s, 15m, 1h, 7d (at most 30d).") var ttl: String = "1h"

        func run() async throws {
            guard let lifetime = TokenIssuer.lifetime(ttl) else { throw ValidationError("--ttl must be a number with s, m, h or d, such as 1h") }
            do {
                let settings = try TokenSettings(environment: Environment())
                print(try await TokenIssuer.issue(user: user, lifetime: lifetime, settings: settings))
            } catch {
                Output.error("\(error.code.name): \(error.message)")
                throw ExitCode(Int32(error.code.rawValue))
            }
        }
    }
}
