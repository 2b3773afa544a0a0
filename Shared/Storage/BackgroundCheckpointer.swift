import Foundation
import GRDB
import Logging
import Synchronization
import Threads
import Wire

/// Copies a database's write-ahead log back into the database file from a thread and a
/// connection of its own, so that the writer does not stop to do it.
///
/// SQLite's automatic checkpoint runs in the writer's connection right after a commit: every
/// page the log holds is written to the file and both files are synced while the transaction
/// that follows waits. Passive checkpoints from another connection take neither the write lock
/// nor a reader's, so the writer and the readers go on meanwhile. The writer's own automatic
/// checkpoint stays on as a bound: once the log reaches its size, the writer copies what is left
/// (little, when this thread keeps up), after which the next transaction starts the log afresh.
/// A second connection to the file is safe here: SQLite coordinates the connections of one
/// process through the file's shared locks, and this one never writes a row.
final class BackgroundCheckpointer: Sendable {
    /// The pause after a pass that copied frames, and the longest pause while the log is idle.
    static let busyPauseMs = 2
    static let idlePauseMs = 250

    private let connection: DatabaseQueue
    private let stopping = Atomic<Bool>(false)
    /// Signalled to end a pause early (on stop).
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled by the thread as it ends.
    private let finished = DispatchSemaphore(value: 0)
    private let logger: Logger

    /// Opens a connection to the WAL-mode database at `path` and starts checkpointing.
    init(path: String, synchronous: String, logger: Logger) throws {
        var configuration = Configuration()
        configuration.label = "checkpointer"
        // The checkpointing connection decides whether a checkpoint syncs the files.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        connection = try DatabaseQueue(path: path, configuration: configuration)
        self.logger = logger
        startThread(named: "wal-checkpointer", qualityOfService: .utility) { [self] in run() }
    }

    /// Ends the thread after its current pass and waits for it.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        finished.wait()
    }

    private func run() {
        defer {
            // Closed before stop() returns: the thread's closure, and with it this object, may
            // outlive stop() for a moment, and a connection closing then still takes the file's
            // locks (the last one out checkpoints and removes the log).
            try? connection.close()
            finished.signal()
        }
        var pauseMs = Self.busyPauseMs
        var last = (walFrameCount: -1, checkpointedFrameCount: -1)
        var lastError = ""
        while !stopping.load(ordering: .acquiring) {
            do {
                let now = try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
                let copied = now != last
                last = now
                pauseMs = copied ? Self.busyPauseMs : min(pauseMs * 2, Self.idlePauseMs)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                // The writer is checkpointing itself; look again soon.
                pauseMs = Self.busyPauseMs
            } catch {
                if "\(error)" != lastError {
                    lastError = "\(error)"
                    logger.warning("background checkpoint failed; the writer still checkpoints by itself", metadata: ["error": "\(error)"])
                }
                pauseMs = Self.idlePauseMs
            }
            _ = wake.wait(timeout: .now() + .milliseconds(pauseMs))
        }
    }
}
