import Bus
import Contracts
import Foundation
import GRDB
@testable import SchedulerCore
import Storage
import TestSupport
import Testing
import Wire

@Suite("Due index")
struct DueIndexTests {
    static let now = instant("2026-11-22T10:00:00Z")

    /// A user's cards in sets "s0"..."s4" and in none, due at one of a few instants (so that
    /// many tie) with 0-2 reviews; another user's cards due earlier than all of them.
    static func seed(_ db: Database, seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let sets: [String?] = [nil, "s0", "s1", "s2", "s3", "s4"]
        let cards = (0..<240).map { ReviewCardAdd(cardId: "c\($0)", setId: sets.randomElement(using: &random)!) }
        _ = try ReviewBook.add(cards, db, user: "u1", now: now)
        _ = try ReviewBook.add((0..<20).map { ReviewCardAdd(cardId: "o\($0)", setId: "s\($0 % 3)") }, db, user: "u2", now: now)
        for card in cards {
            try db.execute(sql: "UPDATE card SET due_at = ?, review_count = ? WHERE user_id = 'u1' AND card_id = ?",
                           arguments: [now.unixMilliseconds + Int64.random(in: 0..<12, using: &random) * 3_600_000,
                                       Int.random(in: 0...2, using: &random), card.cardId])
        }
        try db.execute(sql: "UPDATE card SET due_at = 0 WHERE user_id = 'u2'")
    }

    /// Every card of u1 due by `at`, sorted by due date, reviews and id: what the index merge must give.
    static func expected(_ db: Database, dueBy at: Int64) throws -> [String] {
        try Row.fetchAll(db, sql: "SELECT card_id, due_at, review_count FROM card WHERE user_id = 'u1' AND due_at <= ?", arguments: [at])
            .map { DueIndex.Entry(dueAt: $0["due_at"], reviewCount: $0["review_count"], cardId: $0["card_id"]) }
            .sorted().map(\.cardId)
    }

    @Test("review.due over all sets is the user's due cards in due order, whatever the limit and instant")
    func dueAcrossSets() throws {
        let database = try openDatabase()
        defer { try? database.close() }
        try database.pool.write { db in
            try Self.seed(db, seed: 7)
            #expect(try DueIndex.sets(db, user: "u1") == [nil, "s0", "s1", "s2", "s3", "s4"])
            #expect(try DueIndex.sets(db, user: "nobody").isEmpty)
            for hours in [0, 3, 11, 30] {
                let at = Self.now.addingTimeInterval(Double(hours) * 3600)
                let all = try Self.expected(db, dueBy: at.unixMilliseconds)
                #expect(!all.isEmpty)
                for limit in [1, 7, 50, 239, 240, 1000] {
                    let response = try ReviewBook.due(DueRequest(limit: limit, at: at), db, user: "u1", now: Self.now)
                    #expect(response.cards.map(\.cardId) == Array(all.prefix(limit)), "limit \(limit) at +\(hours) h")
                    #expect(response.hasMore == (all.count > limit), "limit \(limit) at +\(hours) h")
                }
            }
        }
    }

    @Test("due counts per range over all sets match the user's cards, new cards of a set left out on request")
    func countsAcrossSets() throws {
        let database = try openDatabase()
        defer { try? database.close() }
        try database.pool.write { db in
            try Self.seed(db, seed: 11)
            let sets = try DueIndex.sets(db, user: "u1")
            let hour: Int64 = 3_600_000, start = Self.now.unixMilliseconds
            func expected(_ from: Int64, _ to: Int64, leavingOutNewOf planned: String? = nil) throws -> Int {
                try Int.fetchOne(db, sql: """
                    SELECT COUNT(*) FROM card WHERE user_id = 'u1' AND due_at >= ? AND due_at < ? AND NOT (set_id IS ? AND review_count = 0)
                    """, arguments: [from, to, planned ?? ""]) ?? 0
            }
            var leftOut = 0
            for edges in [[Int64.min, start + 1, start + 5 * hour, start + 5 * hour + 1, start + 24 * hour],
                          [start + 2 * hour, start + 3 * hour], [start + 11 * hour, Int64.max]] {
                let ranges = zip(edges, edges.dropFirst())
                let all = try DueIndex.counts(db, user: "u1", sets: sets, between: edges)
                let expectedAll = try ranges.map { try expected($0, $1) }
                #expect(all == expectedAll && all.contains { $0 > 0 }, "\(edges): \(all) against \(expectedAll)")
                let planned = try DueIndex.counts(db, user: "u1", sets: sets, between: edges, newCardsLeftOutOf: "s2")
                #expect(planned == (try ranges.map { try expected($0, $1, leavingOutNewOf: "s2") }), "\(edges)")
                leftOut += zip(all, planned).map { $0 - $1 }.reduce(0, +)
            }
            #expect(leftOut > 0)
            #expect(try DueIndex.counts(db, user: "u1", sets: sets, between: [start]).isEmpty)
        }
    }

    @Test("a database from before the single due index gets it at open, and lists its cards due in order")
    func migratesFromTwoIndexes() throws {
        let directory = try temporaryDirectory()
        let file = directory.appending(path: "scheduler.sqlite")
        let before = try DatabaseQueue(path: file.path)
        try SchedulerDatabase.migrator.migrate(before, upTo: "bus.idempotency.v1")
        try before.write { db in try Self.seed(db, seed: 3) }
        try before.close()

        let database = try openDatabase(in: directory)
        defer { try? database.close() }
        try database.pool.read { db in
            let indexes = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'card' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            #expect(indexes == ["card_due_by_set", "card_subject_due"])
            let tomorrow = Self.now.addingTimeInterval(86_400)
            let due = try ReviewBook.due(DueRequest(limit: 100), db, user: "u1", now: tomorrow)
            #expect(due.cards.map(\.cardId) == Array(try Self.expected(db, dueBy: tomorrow.unixMilliseconds).prefix(100)))
        }
    }
}
