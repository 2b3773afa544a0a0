import Bus
import Contracts
import Crypto
import Foundation
import GRDB
import HTTPClient
import Logging
import ServiceKit
import Storage
import Synchronization
import Wire

/// What one source's sync changed.
struct SourceOutcome: Sendable {
    var added = 0
    var updated = 0
    var removed = 0
}

/// Syncs accounts: one sync per account at a time (a second request joins the running one),
/// each source in turn, each source's failure recorded without stopping the others; the
/// account's status and `connector.synced` written in one transaction at the end.
final class Syncer: Sendable {
    let database: ServiceDatabase
    let outbox: Outbox
    let bus: Bus
    let google: GoogleHTTP
    let oauth: GoogleOAuth
    let tokens = AccessTokens()
    let sealer: Sealer
    let configuration: ConnectorsConfiguration
    let logger: Logger
    /// Calendar's and Drive's quotas are per project; Gmail's per user.
    let calendarBucket: TokenBucket
    let driveBucket: TokenBucket
    private let gmailBuckets = Mutex<[String: TokenBucket]>([:])
    private let running = Mutex<[String: Task<ConnectorStatus, any Error>]>([:])

    init(database: ServiceDatabase, outbox: Outbox, bus: Bus, google: GoogleHTTP, configuration: ConnectorsConfiguration, logger: Logger) {
        self.database = database
        self.outbox = outbox
        self.bus = bus
        self.google = google
        self.configuration = configuration
        self.logger = logger
        oauth = GoogleOAuth(
            http: google, tokenURL: configuration.tokenURL, revokeURL: configuration.revokeURL, clientID: configuration.clientID,
            clientSecret: configuration.clientSecret)
        sealer = Sealer(key: configuration.sealingKey)
        calendarBucket = TokenBucket.google(requestsPer100Seconds: configuration.calendarRequestsPer100Seconds)
        driveBucket = TokenBucket.google(requestsPer100Seconds: configuration.driveRequestsPer100Seconds)
    }

    var now: Date { configuration.wallClock.now() }

    /// The Gmail quota of `user`.
    func gmailBucket(_ user: String) -> TokenBucket {
        gmailBuckets.withLock { buckets in
            if let bucket = buckets[user] { return bucket }
            // Bounded: a user whose bucket is full again needs no state, so forget them all
            // rather than keep one per user ever seen.
            if buckets.count >= 10_000 { buckets.removeAll() }
            let bucket = TokenBucket.google(unitsPerSecond: configuration.gmailUnitsPerSecond)
            buckets[user] = bucket
            return bucket
        }
    }

    /// Syncs `accountId` of `user` now, or waits for the sync already running.
    func sync(accountId: String, user: String) async throws(BusError) -> ConnectorStatus {
        let task = running.withLock { tasks -> Task<ConnectorStatus, any Error> in
            if let task = tasks[accountId] { return task }
            let task = Task { [self] () async throws -> ConnectorStatus in
                defer { _ = running.withLock { $0.removeValue(forKey: accountId) } }
                return try await run(accountId: accountId, user: user)
            }
            tasks[accountId] = task
            return task
        }
        do {
            return try await task.value
        } catch let error as BusError {
            throw error
        } catch {
            throw .internal("sync failed: \(error)")
        }
    }

    /// A valid access token for the account, refreshed when less than the margin is left. An
    /// `invalid_grant` marks the account `needsReauth` and publishes `connector.failed`.
    func accessToken(_ row: AccountRow) async throws(BusError) -> String {
        let account = row.account
        if let token = tokens.valid(account.id, now: now, margin: configuration.refreshMargin) { return token }
        let refreshToken = try sealer.open(row.sealedRefreshToken, account: account.id)
        let grant: TokenGrant
        do throws(GoogleError) {
            grant = try await oauth.refresh(refreshToken)
        } catch .invalidGrant(let detail) {
            logger.warning("refresh token refused; the account needs to be linked again", metadata: ["account": "\(account.id)"])
            let reason = "Google refused the refresh token (invalid_grant: \(detail)); link the account again"
            let now = now
            try await write { db in
                try db.execute(
                    sql: "UPDATE account SET state = ?, last_error = ?, updated_at = ? WHERE id = ?",
                    arguments: [ConnectorAccountState.needsReauth.rawValue, reason, now.unixMilliseconds, account.id])
                _ = try Outbox.append(db, Connectors.failed, ConnectorFailed(accountId: account.id, userId: account.userId, reason: reason, needsReauth: true), user: account.userId)
            }
            tokens.forget(account.id)
            throw BusError.failedPrecondition(reason, details: .object(["needsReauth": .bool(true), "accountId": .string(account.id)]))
        } catch {
            throw error.busError
        }
        do {
            tokens.countRefresh()
            tokens.store(account.id, token: grant.accessToken, expiresAt: now.addingTimeInterval(grant.expiresIn))
            // Google may rotate the refresh token; keep the new one.
            if let rotated = grant.refreshToken, rotated != refreshToken {
                let sealed = try sealer.seal(rotated, account: account.id)
                try await write { db in
                    try db.execute(sql: "UPDATE account SET sealed_refresh_token = ? WHERE id = ?", arguments: [sealed, account.id])
                }
            }
            return grant.accessToken
        }
    }

    private func run(accountId: String, user: String) async throws -> ConnectorStatus {
        let row = try await database.pool.read { db in try AccountRow.require(db, id: accountId, user: user) }
        guard row.account.state == .active else {
            throw BusError.failedPrecondition(
                "account \(accountId) needs to be linked again (Google refused its refresh token)",
                details: .object(["needsReauth": .bool(true), "accountId": .string(accountId)]))
        }
        let token: String
        do throws(BusError) {
            token = try await accessToken(row)
        } catch {
            // Reauth is recorded where it is found; any other failure to get a token (Google
            // unreachable, a key that does not open the token) is the whole sync's.
            if error.details?["needsReauth"] == nil { try await recordFailure(row.account, error) }
            throw error
        }
        let context = SyncContext(syncer: self, account: row.account, accessToken: token)
        var results: [(ConnectorSource, Result<SourceOutcome, BusError>)] = []
        if !row.account.calendarIds.isEmpty {
            results.append((.calendar, await capture { () async throws(BusError) in try await CalendarSync(context: context).run() }))
        }
        if !row.account.gmailLabelIds.isEmpty || row.account.gmailQuery != nil {
            results.append((.gmail, await capture { () async throws(BusError) in try await GmailSync(context: context).run() }))
        }
        if !row.account.driveFolderIds.isEmpty {
            results.append((.drive, await capture { () async throws(BusError) in try await DriveSync(context: context).run() }))
        }
        let finished = now.unixMilliseconds
        let errors = results.compactMap { source, result -> String? in
            if case .failure(let error) = result { return "\(source.rawValue): \(error.message)" }
            return nil
        }
        let lastError = errors.isEmpty ? nil : errors.joined(separator: "; ")
        let outcomes = results
        return try await write { db in
            for (source, result) in outcomes {
                switch result {
                case .success(let outcome):
                    try db.execute(sql: """
                        INSERT INTO source_status (account_id, source, last_sync_at, added, updated, removed, last_error)
                        VALUES (?, ?, ?, ?, ?, ?, NULL)
                        ON CONFLICT (account_id, source) DO UPDATE SET last_sync_at = excluded.last_sync_at, added = excluded.added,
                            updated = excluded.updated, removed = excluded.removed, last_error = NULL
                        """, arguments: [accountId, source.rawValue, finished, outcome.added, outcome.updated, outcome.removed])
                case .failure(let error):
                    try db.execute(sql: """
                        INSERT INTO source_status (account_id, source, last_error) VALUES (?, ?, ?)
                        ON CONFLICT (account_id, source) DO UPDATE SET added = 0, updated = 0, removed = 0, last_error = excluded.last_error
                        """, arguments: [accountId, source.rawValue, String(error.message.prefix(500))])
                }
            }
            try db.execute(
                sql: "UPDATE account SET last_sync_at = ?, last_error = ? WHERE id = ?",
                arguments: [finished, lastError.map { String($0.prefix(1000)) }, accountId])
            let status = try Self.status(db, accountId: accountId, user: user)
            _ = try Outbox.append(db, Connectors.synced, status, user: user)
            return status
        }
    }

    /// The account's last error and `connector.failed` (not needing reauth), in one transaction.
    private func recordFailure(_ account: ConnectorAccount, _ error: BusError) async throws(BusError) {
        let reason = String(error.message.prefix(1000))
        let now = now.unixMilliseconds
        try await write { db in
            try db.execute(sql: "UPDATE account SET last_error = ?, last_sync_at = ? WHERE id = ?", arguments: [reason, now, account.id])
            _ = try Outbox.append(db, Connectors.failed, ConnectorFailed(accountId: account.id, userId: account.userId, reason: reason, needsReauth: false), user: account.userId)
        }
    }

    private func capture(_ body: () async throws(BusError) -> SourceOutcome) async -> Result<SourceOutcome, BusError> {
        do {
            return .success(try await body())
        } catch {
            logger.notice("source sync failed", metadata: ["error": "\(error.message)"])
            return .failure(error)
        }
    }

    /// A write transaction, then the outbox told.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(BusError) -> T {
        do {
            let value = try await database.pool.write(body)
            outbox.notifyCommitted()
            return value
        } catch let error as BusError {
            throw error
        } catch {
            throw .internal("database write failed: \(error)")
        }
    }

    /// The account's status from its rows.
    static func status(_ db: Database, accountId: String, user: String) throws -> ConnectorStatus {
        let account = try AccountRow.require(db, id: accountId, user: user).account
        var sources: [ConnectorSourceStatus] = []
        for row in try Row.fetchAll(db, sql: "SELECT * FROM source_status WHERE account_id = ? ORDER BY source", arguments: [accountId]) {
            guard let source = ConnectorSource(rawValue: row["source"]) else { continue }
            let items = try Int.fetchOne(
                db, sql: "SELECT count(*) FROM entry WHERE account_id = ? AND source = ? AND record_kind != 'skipped'",
                arguments: [accountId, source.rawValue]) ?? 0
            sources.append(ConnectorSourceStatus(
                source: source, lastSyncAt: (row["last_sync_at"] as Int64?).map(Date.init(unixMilliseconds:)), items: items,
                added: row["added"], updated: row["updated"], removed: row["removed"], lastError: row["last_error"]))
        }
        return ConnectorStatus(
            accountId: account.id, userId: account.userId, state: account.state, lastSyncAt: account.lastSyncAt, lastError: account.lastError,
            sources: sources)
    }

    /// A deterministic record id for a synced item: the same event is the same task on every sync.
    static func recordID(prefix: String, _ parts: String...) -> String {
        prefix + SHA256.hash(data: Data(parts.joined(separator: "\n").utf8)).prefix(20).map { String(format: "%02x", $0) }.joined()
    }
}

/// What an entry says of a synced item.
struct KnownEntry: Sendable {
    var kind: String
    var recordID: String
    var version: String?
}

/// A change to an item's entry, committed with its page.
enum EntryChange: Sendable {
    case save(item: String, kind: String, recordID: String, version: String?)
    case seen(String)
    case delete(String)
}

/// What a source's sync works with.
struct SyncContext: Sendable {
    let syncer: Syncer
    let account: ConnectorAccount
    let accessToken: String

    var google: GoogleHTTP { syncer.google }
    var configuration: ConnectorsConfiguration { syncer.configuration }
    var user: String { account.userId }

    /// Calls another service for the account's user.
    func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, attachment: Data? = nil) async throws(BusError) -> Response {
        try await syncer.bus.call(method, request, options: CallOptions(user: user, timeout: .seconds(60), attachment: attachment))
    }

    /// A cursor row: (token, page token, full-sync epoch).
    func cursor(_ source: ConnectorSource, key: String) async throws(BusError) -> (token: String?, pageToken: String?, epoch: Int64?) {
        do {
            return try await syncer.database.pool.read { [account] db in
                let row = try Row.fetchOne(
                    db, sql: "SELECT token, page_token, full_sync_epoch FROM cursor WHERE account_id = ? AND source = ? AND key = ?",
                    arguments: [account.id, source.rawValue, key])
                return (row?["token"], row?["page_token"], row?["full_sync_epoch"])
            }
        } catch {
            throw .internal("cannot read the cursor: \(error)")
        }
    }

    func saveCursor(_ source: ConnectorSource, key: String, token: String?, pageToken: String?, epoch: Int64?) async throws(BusError) {
        try await syncer.write { [account] db in
            try db.execute(sql: """
                INSERT INTO cursor (account_id, source, key, token, page_token, full_sync_epoch) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (account_id, source, key) DO UPDATE SET token = excluded.token, page_token = excluded.page_token,
                    full_sync_epoch = excluded.full_sync_epoch
                """, arguments: [account.id, source.rawValue, key, token, pageToken, epoch])
        }
    }

    /// The entry of one item: (record kind, record id, version).
    func entry(_ source: ConnectorSource, key: String, item: String) async throws(BusError) -> (kind: String, recordID: String, version: String?)? {
        do {
            return try await syncer.database.pool.read { [account] db in
                try Row.fetchOne(
                    db, sql: "SELECT record_kind, record_id, version FROM entry WHERE account_id = ? AND source = ? AND key = ? AND item_id = ?",
                    arguments: [account.id, source.rawValue, key, item]).map { ($0["record_kind"], $0["record_id"], $0["version"]) }
            }
        } catch {
            throw .internal("cannot read an entry: \(error)")
        }
    }

    func saveEntry(_ source: ConnectorSource, key: String, item: String, kind: String, recordID: String, version: String?, epoch: Int64) async throws(BusError) {
        try await syncer.write { [account] db in
            try db.execute(sql: """
                INSERT INTO entry (account_id, source, key, item_id, record_kind, record_id, version, seen_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (account_id, source, key, item_id) DO UPDATE SET record_kind = excluded.record_kind, record_id = excluded.record_id,
                    version = excluded.version, seen_epoch = excluded.seen_epoch
                """, arguments: [account.id, source.rawValue, key, item, kind, recordID, version, epoch])
        }
    }

    func markSeen(_ source: ConnectorSource, key: String, item: String, epoch: Int64) async throws(BusError) {
        try await syncer.write { [account] db in
            try db.execute(
                sql: "UPDATE entry SET seen_epoch = ? WHERE account_id = ? AND source = ? AND key = ? AND item_id = ?",
                arguments: [epoch, account.id, source.rawValue, key, item])
        }
    }

    func deleteEntry(_ source: ConnectorSource, key: String, item: String) async throws(BusError) {
        try await syncer.write { [account] db in
            try db.execute(
                sql: "DELETE FROM entry WHERE account_id = ? AND source = ? AND key = ? AND item_id = ?",
                arguments: [account.id, source.rawValue, key, item])
        }
    }

    /// A sync pass's number for `key`: above every entry's `seen_epoch`, so what a complete
    /// listing did not see is what has a lower one (wall-clock time could repeat or go back).
    func nextEpoch(_ source: ConnectorSource, key: String) async throws(BusError) -> Int64 {
        do {
            return try await syncer.database.pool.read { [account] db in
                let entries = try Int64.fetchOne(
                    db, sql: "SELECT max(seen_epoch) FROM entry WHERE account_id = ? AND source = ? AND key = ?",
                    arguments: [account.id, source.rawValue, key]) ?? 0
                let cursor = try Int64.fetchOne(
                    db, sql: "SELECT full_sync_epoch FROM cursor WHERE account_id = ? AND source = ? AND key = ?",
                    arguments: [account.id, source.rawValue, key]) ?? 0
                return max(entries, cursor) + 1
            }
        } catch {
            throw .internal("cannot read entries: \(error)")
        }
    }

    /// The entries of `items` (a page's), read at once.
    func entries(_ source: ConnectorSource, key: String, items: [String]) async throws(BusError) -> [String: KnownEntry] {
        guard !items.isEmpty else { return [:] }
        do {
            return try await syncer.database.pool.read { [account] db in
                var found: [String: KnownEntry] = [:]
                for start in stride(from: 0, to: items.count, by: 500) {
                    let chunk = Array(items[start..<min(start + 500, items.count)])
                    let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                    let arguments = StatementArguments([account.id, source.rawValue, key]) + StatementArguments(chunk)
                    for row in try Row.fetchAll(db, sql: """
                        SELECT item_id, record_kind, record_id, version FROM entry WHERE account_id = ? AND source = ? AND key = ? AND item_id IN (\(marks))
                        """, arguments: arguments) {
                        found[row["item_id"]] = KnownEntry(kind: row["record_kind"], recordID: row["record_id"], version: row["version"])
                    }
                }
                return found
            }
        } catch {
            throw .internal("cannot read entries: \(error)")
        }
    }

    /// A page's entry changes and the cursor after it, in one transaction (one commit per page,
    /// not per item). Safe to lose in a crash: record ids are derived, so the page done again
    /// writes the same records.
    func commit(_ source: ConnectorSource, key: String, changes: [EntryChange], epoch: Int64, cursor: (token: String?, pageToken: String?, epoch: Int64?)?) async throws(BusError) {
        try await syncer.write { [account] db in
            for change in changes {
                switch change {
                case .save(let item, let kind, let recordID, let version):
                    try db.execute(sql: """
                        INSERT INTO entry (account_id, source, key, item_id, record_kind, record_id, version, seen_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (account_id, source, key, item_id) DO UPDATE SET record_kind = excluded.record_kind, record_id = excluded.record_id,
                            version = excluded.version, seen_epoch = excluded.seen_epoch
                        """, arguments: [account.id, source.rawValue, key, item, kind, recordID, version, epoch])
                case .seen(let item):
                    try db.execute(
                        sql: "UPDATE entry SET seen_epoch = ? WHERE account_id = ? AND source = ? AND key = ? AND item_id = ?",
                        arguments: [epoch, account.id, source.rawValue, key, item])
                case .delete(let item):
                    try db.execute(
                        sql: "DELETE FROM entry WHERE account_id = ? AND source = ? AND key = ? AND item_id = ?",
                        arguments: [account.id, source.rawValue, key, item])
                }
            }
            if let cursor {
                try db.execute(sql: """
                    INSERT INTO cursor (account_id, source, key, token, page_token, full_sync_epoch) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (account_id, source, key) DO UPDATE SET token = excluded.token, page_token = excluded.page_token,
                        full_sync_epoch = excluded.full_sync_epoch
                    """, arguments: [account.id, source.rawValue, key, cursor.token, cursor.pageToken, cursor.epoch])
            }
        }
    }

    /// Entries of `key` not seen since `epoch`: (item, kind, record id).
    func unseen(_ source: ConnectorSource, key: String, before epoch: Int64) async throws(BusError) -> [(item: String, kind: String, recordID: String)] {
        do {
            return try await syncer.database.pool.read { [account] db in
                try Row.fetchAll(
                    db, sql: "SELECT item_id, record_kind, record_id FROM entry WHERE account_id = ? AND source = ? AND key = ? AND seen_epoch < ?",
                    arguments: [account.id, source.rawValue, key, epoch]).map { ($0["item_id"], $0["record_kind"], $0["record_id"]) }
            }
        } catch {
            throw .internal("cannot read entries: \(error)")
        }
    }

    /// Deletes a store record, already gone or not.
    func deleteRecord(kind: String, id: String) async throws(BusError) {
        do throws(BusError) {
            switch kind {
            case "task": _ = try await call(Store.deleteTask, RecordID(id: id))
            case "session": _ = try await call(Store.deleteSession, RecordID(id: id))
            case "material": _ = try await call(Store.deleteMaterial, RecordID(id: id))
            default: return
            }
        } catch where error.code == .notFound {
            return
        }
    }
}

extension String {
    /// At most `limit` Unicode scalars.
    func clippedScalars(_ limit: Int) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: unicodeScalars.prefix(limit))
        return String(view)
    }
}
