import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Storage
import Synchronization
import Wire

/// Requests, tokens, cache hits, errors and estimated cost per user, UTC day, provider and model.
///
/// Counting happens in memory (a request must not wait for a disk write); the gateway's
/// maintenance loop adds the counts to the database every second and once more at shutdown.
/// Reports read the database after a flush, so they include everything counted so far.
final class UsageLedger: Sendable {
    struct Key: Hashable {
        var user: String
        var day: String
        var provider: String
        var model: String
    }

    /// What one provider call adds.
    struct Counts {
        var requests = 0
        var cacheHits = 0
        var errors = 0
        var promptTokens = 0
        var completionTokens = 0
        var audioSeconds = 0.0
        var costUSD = 0.0

        mutating func add(_ other: Counts) {
            requests += other.requests
            cacheHits += other.cacheHits
            errors += other.errors
            promptTokens += other.promptTokens
            completionTokens += other.completionTokens
            audioSeconds += other.audioSeconds
            costUSD += other.costUSD
        }
    }

    private let pending = Mutex<[Key: Counts]>([:])
    private let flushing = Mutex(())
    private let database: ServiceDatabase
    private let clock: any WallClock
    private let logger: Logger

    init(database: ServiceDatabase, clock: any WallClock, logger: Logger) {
        self.database = database
        self.clock = clock
        self.logger = logger
    }

    /// Counts one call of `provider`/`model` for `user`.
    func record(user: String, provider: String, model: String, _ counts: Counts) {
        let key = Key(user: user, day: Self.day(clock.now()), provider: provider, model: model)
        pending.withLock { $0[key, default: Counts()].add(counts) }
        UsageMetrics.count(provider: provider, counts)
    }

    /// Writes what was counted since the last flush, in one transaction.
    func flush() {
        flushing.withLock { _ in
            let batch = pending.withLock { batch in
                defer { batch.removeAll() }
                return batch
            }
            guard !batch.isEmpty else { return }
            let now = clock.now().timeIntervalSince1970
            do {
                try database.pool.write { db in
                    for (key, counts) in batch {
                        try db.execute(sql: """
                            INSERT INTO usage_ledger (userId, day, provider, model, requests, cacheHits, errors, promptTokens,
                                completionTokens, audioSeconds, costUSD, createdAt, updatedAt)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            ON CONFLICT (userId, day, provider, model) DO UPDATE SET
                                requests = requests + excluded.requests, cacheHits = cacheHits + excluded.cacheHits,
                                errors = errors + excluded.errors, promptTokens = promptTokens + excluded.promptTokens,
                                completionTokens = completionTokens + excluded.completionTokens,
                                audioSeconds = audioSeconds + excluded.audioSeconds, costUSD = costUSD + excluded.costUSD,
                                updatedAt = excluded.updatedAt
                            """, arguments: [key.user, key.day, key.provider, key.model, counts.requests, counts.cacheHits, counts.errors,
                                             counts.promptTokens, counts.completionTokens, counts.audioSeconds, counts.costUSD, now, now])
                    }
                }
            } catch {
                // Put the counts back so the next flush tries again.
                pending.withLock { pending in for (key, counts) in batch { pending[key, default: Counts()].add(counts) } }
                logger.warning("usage ledger flush failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Usage per provider and model: `user`'s own, or everyone's when `user` is nil.
    func report(user: String?, since: Date?) throws(BusError) -> [UsageEntry] {
        flush()
        var sql = """
            SELECT provider, model, SUM(requests) AS requests, SUM(cacheHits) AS cacheHits, SUM(errors) AS errors,
                SUM(promptTokens) AS promptTokens, SUM(completionTokens) AS completionTokens,
                SUM(audioSeconds) AS audioSeconds, SUM(costUSD) AS costUSD
            FROM usage_ledger WHERE day >= ?
            """
        var arguments: StatementArguments = [since.map(Self.day) ?? ""]
        if let user {
            sql += " AND userId = ?"
            arguments += [user]
        }
        sql += " GROUP BY provider, model ORDER BY provider, model"
        do {
            return try database.pool.read { db in
                try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                    UsageEntry(provider: row["provider"], model: row["model"], requests: row["requests"], cacheHits: row["cacheHits"],
                               errors: row["errors"], promptTokens: row["promptTokens"], completionTokens: row["completionTokens"],
                               audioSeconds: row["audioSeconds"], estimatedCostUSD: ((row["costUSD"] as Double) * 1e6).rounded() / 1e6)
                }
            }
        } catch {
            throw .storage(error, doing: "reading the usage ledger")
        }
    }

    static func day(_ date: Date) -> String {
        String(ISO8601.format(date).prefix(10))
    }
}
