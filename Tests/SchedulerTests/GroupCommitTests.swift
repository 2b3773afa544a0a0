import Bus
import Foundation
import GRDB
@testable import SchedulerCore
import Storage
import TestSupport
import Testing
import Wire

@Suite("Group commit")
struct GroupCommitTests {
    /// A database and its writer; close the database when done.
    static func open(accumulators: [any BatchAccumulator] = []) throws -> (ServiceDatabase, GroupCommit) {
        let database = try openDatabase()
        return (database, GroupCommit(database: database, accumulators: accumulators))
    }

    static func insertDay(_ db: Database, _ date: String) throws {
        try db.execute(sql: "INSERT INTO study_day (user_id, date, reviews) VALUES ('u1', ?, 1)", arguments: [date])
    }

    static func days(_ database: ServiceDatabase) throws -> Set<String> {
        Set(try database.pool.read { db in try String.fetchAll(db, sql: "SELECT date FROM study_day") })
    }

    /// Holds the writer inside a batch until `release` is called, so that the writes started
    /// meanwhile form the next batch together.
    static func holdWriter(_ writer: GroupCommit) async throws -> (release: @Sendable () -> Void, done: Task<Void, any Error>) {
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let done = Task { try await writer.write { _ in entered.signal(); gate.wait() } }
        await withCheckedContinuation { continuation in DispatchQueue.global().async { entered.wait(); continuation.resume() } }
        return ({ gate.signal() }, done)
    }

    @Test("writes that fail after changing rows are undone alone; the others in their batch commit")
    func failedWritesUndoneAlone() async throws {
        let (database, writer) = try Self.open()
        defer { try? database.close() }
        let (release, held) = try await Self.holdWriter(writer)
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for n in 0..<40 {
                group.addTask {
                    do {
                        try await writer.write { db in
                            try Self.insertDay(db, "day-\(n)")
                            if n % 2 == 1 { throw BusError.invalidArgument("odd \(n)") }
                        }
                        return (n, true)
                    } catch let error as BusError where error.code == .invalidArgument {
                        return (n, false)
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            release()
            return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        try await held.value
        #expect(outcomes == Dictionary(uniqueKeysWithValues: (0..<40).map { ($0, $0 % 2 == 0) }))
        #expect(try Self.days(database) == Set((0..<40).filter { $0 % 2 == 0 }.map { "day-\($0)" }))
    }

    @Test("a write that ends its batch's transaction fails the batch, and no later write of it commits on its own")
    func abortedTransactionCommitsNothing() async throws {
        let (database, writer) = try Self.open()
        defer { try? database.close() }
        let (release, held) = try await Self.holdWriter(writer)
        let first = Task {
            try await writer.write { db in
                try Self.insertDay(db, "first")
                try db.execute(sql: "ROLLBACK")
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        let second = Task { try await writer.write { db in try Self.insertDay(db, "second") } }
        try await Task.sleep(for: .milliseconds(100))
        release()
        try await held.value
        await #expect(throws: (any Error).self) { try await first.value }
        await #expect(throws: (any Error).self) { try await second.value }
        #expect(try Self.days(database).isEmpty)
        // The writer goes on with the next batch.
        try await writer.write { db in try Self.insertDay(db, "third") }
        #expect(try Self.days(database) == ["third"])
    }

    /// The study-day count and the set's (reviews, recalled) for user u1.
    static func counts(_ database: ServiceDatabase) throws -> (day: Int?, reviews: Int?, recalled: Int?) {
        try database.pool.read { db in
            let day = try Int.fetchOne(db, sql: "SELECT reviews FROM study_day WHERE user_id = 'u1' AND date = '2026-11-26'")
            let set = try Row.fetchOne(db, sql: "SELECT reviews, recalled FROM set_stats WHERE user_id = 'u1' AND set_id = 's1'")
            return (day, set?["reviews"], set?["recalled"])
        }
    }

    static func count(_ tally: StudyTally, recalled: Bool = true, change: Int = 1) {
        tally.count(user: "u1", setId: "s1", localDate: "2026-11-26", recalled: recalled, change: change)
    }

    @Test("a batch's study counts are written at its commit, from the writes that were kept only")
    func talliedCountsOfKeptWrites() async throws {
        let tally = StudyTally()
        let (database, writer) = try Self.open(accumulators: [tally])
        defer { try? database.close() }
        let (release, held) = try await Self.holdWriter(writer)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<40 {
                group.addTask {
                    try? await writer.write { db in
                        Self.count(tally, recalled: n % 4 == 0)
                        if n % 2 == 1 { throw BusError.invalidArgument("odd \(n)") }
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            release()
            try await group.waitForAll()
        }
        try await held.value
        let counts = try Self.counts(database)
        #expect(counts.day == 20 && counts.reviews == 20 && counts.recalled == 10)

        // An undo in the same batch as its review nets to nothing; in a later batch it takes back.
        try await writer.write { _ in Self.count(tally); Self.count(tally, change: -1) }
        try await writer.write { _ in Self.count(tally, change: -1) }
        let after = try Self.counts(database)
        #expect(after.day == 19 && after.reviews == 19 && after.recalled == 9)
    }

    @Test("the counts of a batch that did not commit are forgotten, not carried into the next")
    func talliedCountsOfFailedBatchForgotten() async throws {
        let tally = StudyTally()
        let (database, writer) = try Self.open(accumulators: [tally])
        defer { try? database.close() }
        let (release, held) = try await Self.holdWriter(writer)
        // The first write is kept when it ends; the second then ends the transaction.
        let counted = Task { try await writer.write { _ in Self.count(tally) } }
        try await Task.sleep(for: .milliseconds(100))
        let aborting = Task {
            try await writer.write { db in
                Self.count(tally)
                try db.execute(sql: "ROLLBACK")
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        release()
        try await held.value
        await #expect(throws: (any Error).self) { try await aborting.value }
        await #expect(throws: (any Error).self) { try await counted.value }
        #expect(try Self.counts(database).day == nil)
        try await writer.write { _ in Self.count(tally) }
        let counts = try Self.counts(database)
        #expect(counts.day == 1 && counts.reviews == 1 && counts.recalled == 1)
    }
}
