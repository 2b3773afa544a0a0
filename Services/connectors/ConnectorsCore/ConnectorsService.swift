import Bus
import Contracts
import Foundation
import GRDB
import HTTPClient
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// The connectors service: users' Google accounts in its own SQLite file (refresh tokens sealed),
/// the syncs into store and ingest, the periodic sync and the methods on the bus.
public final class ConnectorsService: StudyBusService {
    /// The bus connection, database, outbox and host.
    public let owner: DataOwner
    /// Reaches Google's endpoints, which the operator configures (as ai-gateway's providers).
    private let http: HTTPClient
    let accounts: AccountMethods
    private let periodic: PeriodicSync

    /// Opens (or creates) the database and registers the methods.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened.
    public init(context: ServiceContext<ConnectorsConfiguration>) throws {
        let configuration = context.configuration, logger = context.logger
        owner = try DataOwner(
            context: context, contract: Connectors, database: .init(url: configuration.databaseURL, migrator: Schema.migrator()),
            credit: configuration.credit, events: .init())
        http = try HTTPClient(logger: logger)
        let google = GoogleHTTP(
            http: http, retry: configuration.retry, timeout: configuration.httpTimeout, maximumResponseBytes: configuration.maximumResponseBytes,
            logger: logger)
        let syncer = Syncer(database: owner.database, outbox: owner.outbox!, bus: owner.bus, google: google, configuration: configuration, logger: logger)
        accounts = AccountMethods(syncer: syncer)
        periodic = PeriodicSync(syncer: syncer, interval: configuration.syncInterval, logger: logger)
        let handlers = owner.host.handlers(for: self)
        AccountMethods.register(handlers)
    }

    /// Access-token refreshes since start (tests check a token is refreshed before it expires, and only then).
    public var tokenRefreshes: Int { accounts.syncer.tokens.refreshCount }

    /// The HTTP client before the periodic sync, so it closes after it; the host drains first.
    public var services: [any Service] { owner.services(running: [http, periodic]) }
}

/// Syncs every active account whose last sync is older than the interval, one at a time, until
/// graceful shutdown.
struct PeriodicSync: Service {
    let syncer: Syncer
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: min(interval, .seconds(60)))
                } catch {
                    return
                }
                await round()
            }
        }
    }

    private func round() async {
        let cutoff = syncer.now.unixMilliseconds - interval.components.seconds * 1000
        let due: [(String, String)]
        do {
            due = try await syncer.database.pool.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT id, user_id FROM account WHERE state = 'active' AND coalesce(last_sync_at, 0) <= ? ORDER BY coalesce(last_sync_at, 0) LIMIT 1000
                    """, arguments: [cutoff]).map { ($0["id"], $0["user_id"]) }
            }
        } catch {
            logger.warning("cannot read the accounts due", metadata: ["error": "\(error)"])
            return
        }
        for (account, user) in due {
            if Task.isCancelled { return }
            do {
                _ = try await syncer.sync(accountId: account, user: user)
            } catch {
                logger.notice("periodic sync failed", metadata: ["account": "\(account)", "error": "\(error.message)"])
            }
        }
    }
}
