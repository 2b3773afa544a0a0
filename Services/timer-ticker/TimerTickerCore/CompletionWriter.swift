import Bus
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Synchronization
import Wire

/// A due entry with the wall-clock time at which the engine fired it.
struct FiredEntry: Sendable {
    var entry: DueEntry
    var firedMs: Int64
}

/// The in-memory queue between the engine's thread and the completion writer.
final class FiredQueue: Sendable {
    private let wallClock: any WallClock
    private let entries = Mutex<[FiredEntry]>([])
    let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(wallClock: any WallClock) {
        self.wallClock = wallClock
        (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Takes entries that came due, stamped with the time of day; called on the engine's
    /// thread, so it only appends to memory.
    func enqueue(_ due: [DueEntry]) {
        let firedMs = wallClock.now().unixMilliseconds
        entries.withLock { entries in
            for entry in due { entries.append(FiredEntry(entry: entry, firedMs: firedMs)) }
        }
        wake.yield()
    }

    /// Removes and returns up to `limit` entries, oldest first.
    func take(_ limit: Int) -> [FiredEntry] {
        entries.withLock { entries in
            let count = min(entries.count, limit)
            defer { entries.removeFirst(count) }
            return Array(entries.prefix(count))
        }
    }

    /// Ends the wake-ups (graceful shutdown).
    func finish() { wake.finish() }
}

/// The single writer of completions: the engine hands it due entries (in memory, from its
/// thread), and it records them in batches, one transaction per batch, each completion with its
/// `timer.completed` row in the outbox. Then it schedules what follows (a discard deletion).
///
/// If the process dies with entries still queued, nothing of them was written: the timers are
/// still `running` in the database with an end in the past, and the next start fires them again.
final class CompletionWriter: Service, Sendable {
    private let database: ServiceDatabase
    private let outbox: Outbox
    private let engine: TimerEngine
    private let scheduler: EngineSync
    private let recorder: CompletionRecorder
    private let queue: FiredQueue
    private let logger: Logger
    /// Most entries written in one transaction.
    static let batchLimit = 1000

    init(database: ServiceDatabase, outbox: Outbox, engine: TimerEngine, scheduler: EngineSync, recorder: CompletionRecorder,
         queue: FiredQueue, logger: Logger) {
        self.database = database
        self.outbox = outbox
        self.engine = engine
        self.scheduler = scheduler
        self.recorder = recorder
        self.queue = queue
        self.logger = logger
    }

    /// Runs the engine's thread and writes what it fires, until graceful shutdown; then stops
    /// the engine and writes what is still queued.
    func run() async throws {
        engine.start()
        await withGracefulShutdownHandler {
            for await _ in queue.wakeups { await writeQueued() }
        } onGracefulShutdown: { [queue] in
            queue.finish()
        }
        engine.stop()
        await writeQueued()
    }

    private func writeQueued() async {
        while true {
            let batch = queue.take(Self.batchLimit)
            guard !batch.isEmpty else { return }
            await write(batch)
        }
    }

    /// Writes one batch, retrying while it fails. A batch that keeps failing is written entry by
    /// entry, so one bad row cannot hold up the others; an entry that still fails is left
    /// unwritten (logged): its timer stays `running` with an end in the past and fires again at
    /// the next start, so it is still recorded exactly once.
    private func write(_ batch: [FiredEntry]) async {
        var attempt = 0
        while true {
            do {
                let recorded = try await record(batch)
                if recorded > 0 { outbox.notifyCommitted() }
                logger.debug("fired entries written", metadata: ["entries": "\(batch.count)", "recorded": "\(recorded)"])
                return
            } catch {
                attempt += 1
                logger.error("cannot record completions; retrying", metadata: ["entries": "\(batch.count)", "attempt": "\(attempt)", "error": "\(error)"])
                if attempt >= 3 {
                    if batch.count > 1 {
                        for entry in batch { await write([entry]) }
                    } else {
                        logger.critical("giving up on a fired entry until the next start", metadata: [
                            "key": "\(batch[0].entry.key)", "run": "\(batch[0].entry.run)", "kind": "\(batch[0].entry.kind)",
                        ])
                    }
                    return
                }
                // Cancelled (shutdown took too long): the entries stay unwritten, and the next
                // start fires them again from the database.
                guard (try? await Task.sleep(for: .milliseconds(100 * attempt))) != nil else { return }
            }
        }
    }

    /// Records a batch in one transaction; returns how many entries changed something.
    private func record(_ batch: [FiredEntry]) async throws -> Int {
        try await database.pool.write { [recorder, scheduler] db -> Int in
            var recorded = 0
            for fired in batch {
                switch fired.entry.kind {
                case .completion:
                    if let row = try recorder.complete(db, key: fired.entry.key, run: Int(fired.entry.run), firedMs: fired.firedMs) {
                        scheduler.syncAfterCommit(db, row)
                        recorded += 1
                    }
                case .discard:
                    if try recorder.discard(db, key: fired.entry.key, run: Int(fired.entry.run), nowMs: fired.firedMs) {
                        recorded += 1
                    }
                }
            }
            return recorded
        }
    }
}
