import Foundation
import GRDB
import Storage
import Synchronization

/// Writes many requests' changes in one SQLite transaction (group commit): each request runs
/// in its own savepoint, so one that fails rolls back alone, and all of them are answered after
/// the single commit. Requests that arrive while a batch is being written form the next batch,
/// so a lone request is written at once and a busy service amortises the commit.
///
/// The batches are written one after another on a dispatch queue of their own: a task would
/// wait for a pool thread between two batches, behind the very requests the previous batch's
/// answers let in, while the writer had nothing to do.
///
/// Changes that many requests of a batch make to the same rows can be added up in memory and
/// written once per batch, through a ``BatchAccumulator`` given at init.
final class GroupCommit: Sendable {
    /// The most requests written in one transaction.
    static let maximumBatch = 256

    private struct Job: Sendable {
        /// Applies the request inside the batch's transaction (in its own savepoint).
        let run: @Sendable (Database) -> Void
        /// Answers the caller once the transaction ended: nil when it committed.
        let complete: @Sendable ((any Error)?) -> Void
    }

    private let database: ServiceDatabase
    private let accumulators: [any BatchAccumulator]
    private let state = Mutex<(queue: [Job], writing: Bool)>(([], false))
    private let loop = DispatchQueue(label: "scheduler.group-commit", qos: .userInitiated)

    init(database: ServiceDatabase, accumulators: [any BatchAccumulator] = []) {
        self.database = database
        self.accumulators = accumulators
    }

    /// Runs `body` in the next batch's transaction; returns its result after the commit.
    func write<Result: Sendable>(_ body: @escaping @Sendable (Database) throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = Mutex<Swift.Result<Result, any Error>?>(nil)
            let job = Job(
                run: { db in
                    let result = Swift.Result { () throws -> Result in try Self.inSavepoint(db) { try body(db) } }
                    let kept = if case .success = result { true } else { false }
                    for accumulator in self.accumulators { accumulator.writeEnded(kept: kept) }
                    outcome.withLock { $0 = result }
                },
                complete: { commitError in
                    if let commitError {
                        continuation.resume(throwing: commitError)
                    } else {
                        continuation.resume(with: outcome.withLock { $0 }!)
                    }
                })
            let startWriter = state.withLock { state -> Bool in
                state.queue.append(job)
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            if startWriter { loop.async { self.drain() } }
        }
    }

    /// Runs `body` in a savepoint of the batch's transaction: if it throws, its changes alone are
    /// undone and the batch goes on. The savepoint statements are prepared once: GRDB's
    /// `inSavepoint` parses them on every call, on the writer's path of every review.
    private static func inSavepoint<Result>(_ db: Database, _ body: () throws -> Result) throws -> Result {
        // After an error that ended the whole transaction (a full disk, say), GRDB refuses every
        // statement of the block, so no savepoint can start a transaction of its own here.
        try db.cachedStatement(sql: "SAVEPOINT job").execute()
        do {
            let value = try body()
            try db.cachedStatement(sql: "RELEASE SAVEPOINT job").execute()
            return value
        } catch {
            if db.isInsideTransaction {
                try db.cachedStatement(sql: "ROLLBACK TO SAVEPOINT job").execute()
                try db.cachedStatement(sql: "RELEASE SAVEPOINT job").execute()
            }
            throw error
        }
    }

    /// Writes batches until the queue is empty.
    private func drain() {
        while true {
            let batch = state.withLock { state -> [Job] in
                let batch = Array(state.queue.prefix(Self.maximumBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.writing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try database.pool.write { db in
                    for job in batch { job.run(db) }
                    for accumulator in accumulators { try accumulator.flush(db) }
                }
                for job in batch { job.complete(nil) }
            } catch {
                for job in batch { job.complete(error) }
            }
        }
    }
}

/// Changes the writes of one batch add up in memory (counters that most of them touch), written
/// once in the batch's transaction just before it commits. Called on the writer's queue only.
protocol BatchAccumulator: Sendable {
    /// The write that ran last is over: its savepoint was released (`kept`) or rolled back.
    func writeEnded(kept: Bool)
    /// Writes the kept writes' sums, and starts empty for the next batch even when that fails
    /// (the batch then does not commit).
    func flush(_ db: Database) throws
}
