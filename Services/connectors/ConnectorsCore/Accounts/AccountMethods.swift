import Bus
import Contracts
import Foundation
import Storage
import GRDB
import Logging
import ServiceKit
import Wire

/// `connectors.link`, `list`, `unlink`, `configure`, `sync` and `status`. Every method acts for
/// the header's `user` (never a user named in the body).
final class AccountMethods: Sendable {
    let syncer: Syncer

    init(syncer: Syncer) {
        self.syncer = syncer
    }

    static func register(_ handlers: Handlers<ConnectorsService>) {
        handlers.handle(Connectors.link) { service, request, context in try await service.accounts.link(request, user: try context.requireUser()) }
        handlers.handle(Connectors.list) { service, _, context in try await service.accounts.list(user: try context.requireUser()) }
        handlers.handle(Connectors.unlink) { service, request, context in try await service.accounts.unlink(request, user: try context.requireUser()) }
        handlers.handle(Connectors.configure) { service, request, context in try await service.accounts.configure(request, user: try context.requireUser()) }
        handlers.handle(Connectors.sync) { service, request, context in
            let user = try context.requireUser()
            let id = try Field.id(request.accountId, "accountId")
            return try await service.accounts.syncer.sync(accountId: id, user: user)
        }
        handlers.handle(Connectors.status) { service, request, context in try await service.accounts.status(request, user: try context.requireUser()) }
    }

    private var database: ServiceDatabase { syncer.database }

    func link(_ request: ConnectorLinkRequest, user: String) async throws(BusError) -> ConnectorAccount {
        let code = try Field.text(request.code, "code", maximum: ConnectorLimits.maximumCodeLength, trimming: true)
        guard !code.isEmpty else { throw Field.invalid("code", "must not be empty") }
        let redirect = try Field.text(request.redirectUri, "redirectUri", maximum: ConnectorLimits.maximumRedirectURILength, trimming: true)
        guard !redirect.isEmpty, redirect.contains(":") else { throw Field.invalid("redirectUri", "must be the redirect URI the consent used") }
        if let scopes = request.scopes {
            try Field.count(scopes, "scopes", in: 0...ConnectorLimits.maximumScopes)
            for scope in scopes { _ = try Field.text(scope, "scopes[]", maximum: ConnectorLimits.maximumScopeLength) }
        }
        if let verifier = request.codeVerifier {
            guard (43...ConnectorLimits.maximumVerifierLength).contains(verifier.utf8.count) else {
                throw Field.invalid("codeVerifier", "must be 43 to 128 characters (RFC 7636)")
            }
        }
        guard !syncer.configuration.clientID.isEmpty else {
            throw .failedPrecondition("Google is not configured on this server (CONNECTORS_GOOGLE_CLIENT_ID is unset)")
        }
        let grant: TokenGrant
        do throws(GoogleError) {
            grant = try await syncer.oauth.exchange(code: code, redirectURI: redirect, verifier: request.codeVerifier)
        } catch .invalidGrant(let detail) {
            throw .invalidArgument("Google refused the authorization code (invalid_grant: \(detail)): it was used already, expired, or the redirectUri differs", details: .object(["field": .string("code")]))
        } catch {
            throw error.busError
        }
        guard let refreshToken = grant.refreshToken else {
            throw .failedPrecondition("Google gave no refresh token: ask for consent with access_type=offline and prompt=consent")
        }
        let now = syncer.now.unixMilliseconds
        let sealer = syncer.sealer
        let account = try await syncer.write { db -> ConnectorAccount in
            var id: String
            if let subject = grant.subject,
               let existing = try String.fetchOne(db, sql: "SELECT id FROM account WHERE user_id = ? AND provider = 'google' AND subject = ?", arguments: [user, subject]) {
                id = existing
            } else {
                let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM account WHERE user_id = ?", arguments: [user]) ?? 0
                guard count < ConnectorLimits.maximumAccounts else {
                    throw BusError.resourceExhausted("at most \(ConnectorLimits.maximumAccounts) accounts per user; unlink one first")
                }
                id = UUID().uuidString.lowercased()
                try db.execute(sql: """
                    INSERT INTO account (id, user_id, provider, subject, email, scopes, state, sealed_refresh_token, calendar_ids,
                        gmail_label_ids, gmail_query, drive_folder_ids, created_at, updated_at)
                    VALUES (?, ?, 'google', ?, ?, '[]', 'active', x'', ?, '[]', NULL, '[]', ?, ?)
                    """, arguments: [id, user, grant.subject, grant.email, AccountRow.json(["primary"]), now, now])
            }
            let sealed = try sealer.seal(refreshToken, account: id)
            try db.execute(sql: """
                UPDATE account SET sealed_refresh_token = ?, state = 'active', scopes = ?, email = coalesce(?, email), last_error = NULL,
                    updated_at = ? WHERE id = ?
                """, arguments: [sealed, AccountRow.json(grant.scopes), grant.email, now, id])
            return try AccountRow.require(db, id: id, user: user).account
        }
        syncer.tokens.store(account.id, token: grant.accessToken, expiresAt: syncer.now.addingTimeInterval(grant.expiresIn))
        syncer.logger.info("account linked", metadata: ["account": "\(account.id)", "scopes": "\(grant.scopes.count)"])
        return account
    }

    func list(user: String) async throws(BusError) -> ConnectorAccountList {
        do {
            return ConnectorAccountList(accounts: try await database.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM account WHERE user_id = ? ORDER BY created_at, id", arguments: [user]).map { AccountRow(row: $0).account }
            })
        } catch {
            throw .internal("cannot read accounts: \(error)")
        }
    }

    func unlink(_ request: ConnectorRef, user: String) async throws(BusError) -> Empty {
        let id = try Field.id(request.accountId, "accountId")
        let row = try await read { db in try AccountRow.require(db, id: id, user: user) }
        // Revoking is best effort: the tokens are forgotten here whatever Google says.
        if let token = try? syncer.sealer.open(row.sealedRefreshToken, account: id) {
            do {
                try await syncer.oauth.revoke(token)
            } catch {
                syncer.logger.notice("revoking at Google failed; the tokens are deleted anyway", metadata: ["account": "\(id)", "error": "\(error)"])
            }
        }
        try await syncer.write { db in try db.execute(sql: "DELETE FROM account WHERE id = ? AND user_id = ?", arguments: [id, user]) }
        syncer.tokens.forget(id)
        return Empty()
    }

    func configure(_ request: ConnectorConfigureRequest, user: String) async throws(BusError) -> ConnectorAccount {
        let id = try Field.id(request.accountId, "accountId")
        let calendars = try request.calendarIds.map { ids throws(BusError) in try Self.sources(ids, "calendarIds") }
        let labels = try request.gmailLabelIds.map { ids throws(BusError) in try Self.sources(ids, "gmailLabelIds") }
        let folders = try request.driveFolderIds.map { ids throws(BusError) in try Self.sources(ids, "driveFolderIds") }
        let query = try request.gmailQuery.map { text throws(BusError) -> String in
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? "" : try Field.text(trimmed, "gmailQuery", maximum: ConnectorLimits.maximumQueryLength)
        }
        let now = syncer.now.unixMilliseconds
        return try await syncer.write { db in
            _ = try AccountRow.require(db, id: id, user: user)
            if let calendars { try db.execute(sql: "UPDATE account SET calendar_ids = ? WHERE id = ?", arguments: [AccountRow.json(calendars), id]) }
            if let labels { try db.execute(sql: "UPDATE account SET gmail_label_ids = ? WHERE id = ?", arguments: [AccountRow.json(labels), id]) }
            if let folders { try db.execute(sql: "UPDATE account SET drive_folder_ids = ? WHERE id = ?", arguments: [AccountRow.json(folders), id]) }
            if let query {
                try db.execute(sql: "UPDATE account SET gmail_query = ? WHERE id = ?", arguments: [query.isEmpty ? nil : query, id])
                // Another query is another listing: start Gmail over (messages taken stay known).
                try db.execute(sql: "DELETE FROM cursor WHERE account_id = ? AND source = 'gmail'", arguments: [id])
            }
            if labels != nil { try db.execute(sql: "DELETE FROM cursor WHERE account_id = ? AND source = 'gmail'", arguments: [id]) }
            try db.execute(sql: "UPDATE account SET updated_at = ? WHERE id = ?", arguments: [now, id])
            return try AccountRow.require(db, id: id, user: user).account
        }
    }

    func status(_ request: ConnectorRef, user: String) async throws(BusError) -> ConnectorStatus {
        let id = try Field.id(request.accountId, "accountId")
        return try await read { db in try Syncer.status(db, accountId: id, user: user) }
    }

    /// Calendar ids, label ids or folder ids: at most 20, each 1...256 printable characters, no duplicates.
    static func sources(_ ids: [String], _ field: String) throws(BusError) -> [String] {
        try Field.count(ids, field, in: 0...ConnectorLimits.maximumSources)
        var result: [String] = []
        for id in ids {
            let text = try Field.text(id, "\(field)[]", maximum: ConnectorLimits.maximumSourceIDLength, trimming: true)
            guard !text.isEmpty, text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
                throw Field.invalid(field, "must hold ids without spaces or control characters")
            }
            if !result.contains(text) { result.append(text) }
        }
        return result
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(BusError) -> T {
        do {
            return try await database.pool.read(body)
        } catch let error as BusError {
            throw error
        } catch {
            throw .internal("database read failed: \(error)")
        }
    }
}
