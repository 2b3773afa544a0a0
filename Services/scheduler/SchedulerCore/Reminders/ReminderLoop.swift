import Bus
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Synchronization
import Wire

/// Runs the ``ReminderEngine`` whenever the injected clock reaches the next reminder time, or
/// at once after a change that may move reminders (``invalidate()``). It looks at the clock
/// every `poll` interval, so a test's manual clock is honoured within one poll.
public final class ReminderLoop: Service, Sendable {
    private let database: ServiceDatabase
    private let outbox: Outbox
    private let clock: any WallClock
    private let poll: Duration
    private let logger: Logger
    /// When to run next (Unix ms; nil: as soon as possible), and a count of invalidations so
    /// that a change made during a run is not forgotten when the run stores its next time.
    private let schedule = Mutex<(next: Int64?, generation: Int)>((nil, 0))

    init(database: ServiceDatabase, outbox: Outbox, clock: any WallClock, poll: Duration, logger: Logger) {
        self.database = database
        self.outbox = outbox
        self.clock = clock
        self.poll = poll
        self.logger = logger
    }

    /// Makes the next poll run the engine (settings, tasks or tests changed).
    public func invalidate() {
        schedule.withLock { $0 = (nil, $0.generation + 1) }
    }

    /// Runs the engine once at the clock's now; returns how many reminders were published.
    @discardableResult
    public func runOnce() async throws -> Int {
        let now = clock.now().unixMilliseconds
        let generation = schedule.withLock { $0.generation }
        let engine = ReminderEngine()
        let (sent, nextWake) = try await database.pool.write { db in try engine.run(db, nowMs: now) }
        schedule.withLock { if $0.generation == generation { $0.next = nextWake } }
        if sent > 0 {
            outbox.notifyCommitted()
            logger.info("reminders published", metadata: ["count": "\(sent)"])
        }
        return sent
    }

    /// Polls until graceful shutdown.
    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let now = self.clock.now().unixMilliseconds
                let due = self.schedule.withLock { state in state.next.map { $0 <= now } ?? true }
                if due {
                    do {
                        try await self.runOnce()
                    } catch {
                        self.logger.error("reminder run failed; retrying next poll", metadata: ["error": "\(error)"])
                        self.invalidate()
                    }
                }
                try await Task.sleep(for: self.poll)
            }
        }
    }
}
