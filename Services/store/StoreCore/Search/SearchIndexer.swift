import Bus
import Foundation
import GRDB
import Logging
import ServiceLifecycle
import Storage
import Wire

/// Keeps the FTS5 `search_index` up to date from `search_queue`, which triggers fill in the
/// same transactions as the content changes.
///
/// Tokenizing text is most of the cost of writing it, so it is done here, after the write has
/// committed, in batches that let other writes in between. `search` first indexes what is
/// queued for its user, so a search always sees every committed change (read-your-writes); the
/// background loop indexes the rest soon after commit.
public final class SearchIndexer: Service, Sendable {
    /// Rows indexed per transaction.
    static let batchSize = 500

    private let database: ServiceDatabase
    private let logger: Logger
    private let wakeups: AsyncStream<Void>
    private let wakeup: AsyncStream<Void>.Continuation

    init(database: ServiceDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
        (wakeups, wakeup) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the background loop to index what was queued (after a commit).
    func wake() {
        wakeup.yield()
    }

    /// Indexes queued changes as they come (and once a second, for anything missed) until
    /// graceful shutdown; then checkpoints the WAL, so commits of requests rarely have to.
    public func run() async throws {
        wakeup.yield()
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [wakeup] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        wakeup.yield()
                    }
                }
                for await _ in wakeups {
                    do {
                        try await drain(user: nil)
                        try await database.pool.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
                    } catch {
                        logger.error("search indexing failed; will retry", metadata: ["error": "\(error)"])
                    }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: { [wakeup] in
            wakeup.finish()
        }
    }

    /// Indexes everything queued (for `user`, or for everyone), batch by batch.
    func drain(user: String?) async throws {
        while try await database.pool.write({ db in try Self.indexBatch(db, user: user) }) {}
    }

    /// Whether changes of `user` wait to be indexed.
    static func hasPending(_ db: Database, user: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM search_queue WHERE user_id = ?)", arguments: [user]) ?? false
    }

    /// Indexes one batch from the queue; returns whether it did anything.
    private static func indexBatch(_ db: Database, user: String?) throws -> Bool {
        let rows = if let user {
            try Row.fetchAll(db, sql: "SELECT kind, pk, user_id FROM search_queue WHERE user_id = ? LIMIT \(batchSize)", arguments: [user])
        } else {
            try Row.fetchAll(db, sql: "SELECT kind, pk, user_id FROM search_queue LIMIT \(batchSize)")
        }
        for row in rows {
            let kind: Int64 = row["kind"], pk: Int64 = row["pk"], owner: String = row["user_id"]
            let rowid = try userNumber(db, owner) << 40 | pk << 2 | kind
            try db.cachedStatement(sql: "DELETE FROM search_index WHERE rowid = ?").execute(arguments: [rowid])
            if let entry = try entry(db, kind: kind, pk: pk) {
                try db.cachedStatement(sql: """
                    INSERT INTO search_index (rowid, title, body, scope, user_id, record_id, subject_id, material_id)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [
                        rowid, entry["title"], entry["body"], scope(subject: entry["subject_id"], material: entry["material_id"]),
                        owner, entry["id"], entry["subject_id"], entry["material_id"],
                    ])
            }
            try db.cachedStatement(sql: "DELETE FROM search_queue WHERE user_id = ? AND kind = ? AND pk = ?").execute(arguments: [owner, kind, pk])
        }
        return !rows.isEmpty
    }

    /// What to index for a chunk, flashcard or note; nil when it is gone.
    private static func entry(_ db: Database, kind: Int64, pk: Int64) throws -> Row? {
        let sql = switch kind {
        case 1: """
            SELECT c.id, NULL AS title, c.text AS body, m.subject_id, c.material_id
            FROM chunk c JOIN material m ON m.user_id = c.user_id AND m.id = c.material_id WHERE c.pk = ?
            """
        case 2: "SELECT id, front AS title, back AS body, subject_id, material_id FROM flashcard WHERE pk = ?"
        default: """
            SELECT n.id, q.text AS title, n.answer AS body, NULL AS subject_id, NULL AS material_id
            FROM note n JOIN question q ON q.user_id = n.user_id AND q.id = n.question_id WHERE n.pk = ?
            """
        }
        return try Row.fetchOne(db.cachedStatement(sql: sql), arguments: [pk])
    }

    /// The user's number, the top bits of their entries' rowids (assigned on first use; 23 bits
    /// leave 40 for `pk << 2 | kind`).
    static func userNumber(_ db: Database, _ user: String) throws -> Int64 {
        if let number = try existingUserNumber(db, user) { return number }
        try db.execute(sql: "INSERT INTO search_user (user_id) VALUES (?)", arguments: [user])
        guard db.lastInsertedRowID < 1 << 23 else { throw BusError.resourceExhausted("the search index holds at most 8,388,607 users") }
        return db.lastInsertedRowID
    }

    static func existingUserNumber(_ db: Database, _ user: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT number FROM search_user WHERE user_id = ?"), arguments: [user])
    }

    /// The `scope` column: a token per filterable reference.
    static func scope(subject: String?, material: String?) -> String {
        [subject.map { token("s", $0) }, material.map { token("m", $0) }].compactMap { $0 }.joined(separator: " ")
    }

    /// `s` or `m` and a 64-bit FNV-1a hash of the id in decimal: one token for the tokenizer,
    /// which no stemming changes. Hash collisions are filtered out by comparing ids after the match.
    static func token(_ prefix: String, _ id: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return prefix + String(hash)
    }
}
