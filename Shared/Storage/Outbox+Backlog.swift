import Foundation
import GRDB
import Synchronization
import Wire

extension Outbox {
    /// What is committed but not yet published: how many events, and how long the oldest has
    /// waited (nil when none waits). Before the outbox first published in this run, the cursor
    /// saved in the database counts.
    public func backlog() async throws -> (events: Int64, oldestAge: Duration?) {
        let publishedInRun = publishedSeq.load(ordering: .relaxed)
        return try await database.pool.read { db in
            let published = publishedInRun > 0
                ? publishedInRun
                : try Int64.fetchOne(db, sql: "SELECT published_seq FROM bus_outbox_state WHERE singleton = 1") ?? 0
            let newest = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'bus_outbox'") ?? 0
            guard newest > published,
                  let oldest = try Int64.fetchOne(db, sql: "SELECT ts FROM bus_outbox WHERE seq > ? ORDER BY seq LIMIT 1", arguments: [published])
            else { return (0, nil) }
            return (newest - published, .milliseconds(max(0, Date().unixMilliseconds - oldest)))
        }
    }
}
