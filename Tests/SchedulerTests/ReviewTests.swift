import Bus
import Contracts
import Foundation
import SchedulerCore
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("Reviews through the bus")
struct ReviewTests {
    @Test("_describe lists every method and event of the contract")
    func describesContract() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            let description = try await world.client.call(Reserved.describe("scheduler"), Empty())
            let served = Set(description.methods.map(\.name))
            #expect(Scheduler.methods.allSatisfy { served.contains($0.name) }, "missing: \(Scheduler.methods.map(\.name).filter { !served.contains($0) })")
            #expect(served.contains("_events.replay"))
            #expect(description.events.map(\.topic) == Scheduler.topics.map(\.name))
            #expect(Array(description.events.map(\.topic).prefix(4)) == ["review.due", "habit.due", "test.due", "habit.system.created"])
            #expect(served.isSuperset(of: ["sync.push", "sync.pull"]))
        }
    }

    @Test("a review updates the card's SM-2 state and returns the next due date; undo restores it")
    func recordAndUndo() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c1", setId: "s1")]))
            let fresh = try await world.call(Scheduler.cardState, ReviewCardID(cardId: "c1"))
            #expect(fresh.algorithm == .sm2 && fresh.mastery == .learning && fresh.reviewCount == 0)
            #expect(fresh.dueAt == world.clock.now())

            let first = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good))
            #expect(first.nextDueAt == instant("2026-11-23T10:00:00Z"))
            #expect(first.card.sm2 == SM2State(easeFactor: 2.5, intervalDays: 1, repetitions: 1, dueAt: instant("2026-11-23T10:00:00Z")))
            #expect(first.card.mastery == .developing && first.intervalDays == 1)
            world.clock.set(instant("2026-11-23T10:00:00Z"))
            let second = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .easy))
            #expect(second.card.sm2.intervalDays == 6 && abs(second.card.sm2.easeFactor - 2.6) < 1e-12)
            #expect(second.card.fsrs.stability != nil && second.card.fsrs.phase == .review)

            let undone = try await world.call(Scheduler.undoReview, ReviewCardID(cardId: "c1"))
            #expect(undone.sm2 == first.card.sm2 && undone.fsrs == first.card.fsrs && undone.reviewCount == 1)
            _ = try await world.call(Scheduler.undoReview, ReviewCardID(cardId: "c1"))
            let nothing = await world.failure(Scheduler.undoReview, ReviewCardID(cardId: "c1"))
            #expect(nothing?.code == .failedPrecondition)
            #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: "c1")).reviewCount == 0)
        }
    }

    @Test("review.due lists due cards oldest-overdue first, per set, with a limit")
    func dueOrder() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (1...6).map {
                ReviewCardAdd(cardId: "c\($0)", setId: $0 <= 3 ? "a" : "b", subjectId: $0 % 2 == 0 ? "even" : nil)
            }))
            // Review c1..c6 on successive hours with good: each is due a day after its review.
            for n in 1...6 {
                world.clock.set(instant("2026-11-22T10:00:00Z").addingTimeInterval(Double(7 - n) * 3600))
                _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c\(n)", rating: .good))
            }
            world.clock.set(instant("2026-11-24T12:00:00Z"))
            let all = try await world.call(Scheduler.dueCards, DueRequest(limit: 4))
            #expect(all.cards.map(\.cardId) == ["c6", "c5", "c4", "c3"])
            #expect(all.hasMore)
            let setA = try await world.call(Scheduler.dueCards, DueRequest(setId: "a"))
            #expect(setA.cards.map(\.cardId) == ["c3", "c2", "c1"] && !setA.hasMore)
            #expect(try await world.call(Scheduler.dueCards, DueRequest(subjectId: "even")).cards.map(\.cardId) == ["c6", "c4", "c2"])
            let early = try await world.call(Scheduler.dueCards, DueRequest(at: instant("2026-11-23T13:30:00Z")))
            #expect(early.cards.map(\.cardId) == ["c6", "c5", "c4"])
        }
    }

    @Test("bad ratings, times, limits, ids and missing users are INVALID_ARGUMENT naming the field; another user's card is NOT_FOUND")
    func validation() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c1")]))
            let badRating = await #expect(throws: BusError.self) {
                _ = try await world.client.callRaw(service: "scheduler", method: "review.record", payload: Data(#"{"cardId":"c1","rating":"meh"}"#.utf8),
                                                   options: CallOptions(user: "u1"))
            }
            #expect(badRating?.code == .invalidArgument && badRating?.message.contains("rating") == true)
            let future = await world.failure(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good, reviewedAt: instant("2026-11-23T00:00:00Z")))
            #expect(future?.isInvalid("reviewedAt") == true)
            let limit = await world.failure(Scheduler.dueCards, DueRequest(limit: 5000))
            #expect(limit?.isInvalid("limit") == true)
            let zone = await world.failure(Scheduler.updateSettings, SettingsUpdate(timeZone: "Mars/Olympus"))
            #expect(zone?.isInvalid("timeZone") == true)
            let retention = await world.failure(Scheduler.configureSet, SetConfiguration(setId: "s1", algorithm: nil, desiredRetention: 0.5))
            #expect(retention?.isInvalid("desiredRetention") == true)
            let duration = await world.failure(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good, durationSeconds: 3601))
            #expect(duration?.isInvalid("durationSeconds") == true)
            let noCard = await world.failure(Scheduler.cardState, ReviewCardID(cardId: ""))
            #expect(noCard?.isInvalid("cardId") == true)
            // Ids are up to 128 characters of any kind, as given.
            let longID = String(repeating: "é", count: 128)
            #expect(try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: longID, setId: "set 1/2")])).added == 1)
            let tooLong = await world.failure(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c2"), ReviewCardAdd(cardId: longID + "e")]))
            #expect(tooLong?.isInvalid("cards[1].cardId") == true && tooLong?.message.contains("at most 128 characters") == true)
            let noCards = await world.failure(Scheduler.addCards, CardsAddRequest(cards: []))
            #expect(noCards?.isInvalid("cards") == true)
            let noUser = await world.failure(Scheduler.cardState, ReviewCardID(cardId: "c1"), user: nil)
            #expect(noUser?.code == .invalidArgument && noUser?.message.contains("user") == true)
            let other = await world.failure(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good), user: "u2")
            #expect(other?.code == .notFound)
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good))
            let before = await world.failure(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good, reviewedAt: instant("2026-11-22T09:00:00Z")))
            #expect(before?.isInvalid("reviewedAt") == true && before?.message.contains("last review") == true)
        }
    }

    @Test("concurrent reviews committed together each succeed or fail alone")
    func groupCommit() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (0..<40).map { ReviewCardAdd(cardId: "c\($0)") }))
            let outcomes = try await withThrowingTaskGroup(of: (Int, StatusCode?).self) { group in
                for n in 0..<80 {
                    group.addTask {
                        // Odd numbers name cards that do not exist.
                        let card = n % 2 == 0 ? "c\(n / 2)" : "missing\(n)"
                        let failure = await world.failure(Scheduler.recordReview, ReviewRecordRequest(cardId: card, rating: .good))
                        return (n, failure?.code)
                    }
                }
                return try await group.reduce(into: [Int: StatusCode?]()) { $0[$1.0] = $1.1 }
            }
            #expect(outcomes.filter { $0.key % 2 == 0 }.allSatisfy { $0.value == nil })
            #expect(outcomes.filter { $0.key % 2 == 1 }.allSatisfy { $0.value == .notFound })
            for n in 0..<40 { #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: "c\(n)")).reviewCount == 1) }
        }
    }

    @Test("a repeated review.record with the same idempotency key applies once")
    func idempotentReview() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c1")]))
            let first = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good), idem: "k1")
            let repeated = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good), idem: "k1")
            #expect(first == repeated)
            #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: "c1")).reviewCount == 1)
        }
    }

    @Test("switching a set to FSRS re-points its cards' due dates to FSRS's schedule; the user's default applies elsewhere")
    func algorithmPerSet() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "a1", setId: "a"), ReviewCardAdd(cardId: "b1", setId: "b")]))
            for card in ["a1", "b1"] { _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: card, rating: .easy)) }
            _ = try await world.call(Scheduler.configureSet, SetConfiguration(setId: "a", algorithm: .fsrs))
            let a1 = try await world.call(Scheduler.cardState, ReviewCardID(cardId: "a1"))
            let b1 = try await world.call(Scheduler.cardState, ReviewCardID(cardId: "b1"))
            #expect(a1.algorithm == .fsrs && a1.dueAt == a1.fsrs.dueAt && a1.fsrs.dueAt != a1.sm2.dueAt)
            #expect(b1.algorithm == .sm2 && b1.dueAt == b1.sm2.dueAt)
            try await world.settings(SettingsUpdate(algorithm: .fsrs))
            try await world.settings(SettingsUpdate(algorithm: .sm2))
            #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: "a1")).algorithm == .fsrs)  // the set's choice wins
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "a2", setId: "a")]))
            #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: "a2")).algorithm == .fsrs)
        }
    }

    @Test("forecast counts reviews per local day, today including overdue cards")
    func forecast() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T12:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "America/New_York"))  // 07:00 local
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (1...3).map { ReviewCardAdd(cardId: "c\($0)") }))
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good))  // due 2026-11-23 07:00 local
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c2", rating: .good))
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c2", rating: .good, reviewedAt: instant("2026-11-22T12:01:00Z")))  // 6 days
            let forecast = try await world.call(Scheduler.forecast, ForecastRequest(days: 8))
            #expect(forecast.timeZone == "America/New_York")
            #expect(forecast.days.map(\.date).first == "2026-11-22" && forecast.days.count == 8)
            #expect(forecast.days.map(\.count) == [1, 1, 0, 0, 0, 0, 1, 0])
        }
    }

    @Test("mastery moves from learning to mastered as the interval passes 1, 7 and 21 days; set statistics add up")
    func masteryAndStatistics() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: [ReviewCardAdd(cardId: "c1", setId: "s"), ReviewCardAdd(cardId: "c2", setId: "s")]))
            var levels: [MasteryLevel] = []
            for rating in [ReviewRating.good, .good, .good, .good] {
                let result = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: rating))
                levels.append(result.card.mastery)
                world.clock.set(result.nextDueAt)
            }
            #expect(levels == [.developing, .developing, .proficient, .mastered])  // intervals 1, 6, 15, 38
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .again))
            let stats = try await world.call(Scheduler.setStatistics, ReviewSetID(setId: "s"))
            #expect(stats.cards == 2 && stats.newCards == 1 && stats.reviews == 5)
            #expect(stats.accuracy == 0.8)
            #expect(stats.mastery == MasteryCounts(learning: 2))
            #expect(stats.averageEase.map { abs($0 - 1.96) < 1e-9 } == true)
            #expect(stats.averageRetrievability.map { $0 > 0 && $0 <= 1 } == true)
            #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: "c1")).lapses == 1)
            let missing = await world.failure(Scheduler.setStatistics, ReviewSetID(setId: "nope"))
            #expect(missing?.code == .notFound)
        }
    }

    @Test("with fuzzing on, FSRS review intervals of several days spread within the band; with it off they are equal")
    func fsrsFuzzingThroughTheService() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            var intervals: [String: [Double]] = [:]
            for (user, fuzzing) in [("plain", false), ("fuzzed", true)] {
                try await world.settings(SettingsUpdate(algorithm: .fsrs, fuzzing: fuzzing), user: user)
                _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (1...30).map { ReviewCardAdd(cardId: "c\($0)") }), user: user)
                for card in 1...30 {
                    let result = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c\(card)", rating: .easy), user: user)
                    intervals[user, default: []].append(result.intervalDays)
                }
            }
            let plain = try #require(Set(intervals["plain"] ?? []).first)
            #expect(Set(intervals["plain"] ?? []).count == 1, "without fuzzing every card gets the same interval")
            #expect(plain >= 3, "an interval long enough to be fuzzed")
            let fuzzed = intervals["fuzzed"] ?? []
            #expect(Set(fuzzed).count > 1, "fuzzing spreads the intervals")
            // The band is at most 15 % of the interval plus two days wide on each side (the unit
            // tests of ReferenceParityTests check its exact edges).
            #expect(fuzzed.allSatisfy { abs($0 - plain) <= 0.15 * plain + 2 }, "\(fuzzed) around \(plain)")
        }
    }

    @Test("the study streak counts local days with a review in the user's time zone, and undo takes a day back")
    func studyStreak() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-20T04:30:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "America/Los_Angeles"))  // 2026-11-19 20:30 local
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (1...4).map { ReviewCardAdd(cardId: "c\($0)") }))
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c1", rating: .good))  // local 11-19
            world.clock.set(instant("2026-11-21T07:30:00Z"))  // local 11-20 23:30, UTC already 11-21
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c2", rating: .good))
            world.clock.set(instant("2026-11-21T18:00:00Z"))  // local 11-21 10:00
            _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "c3", rating: .good))
            var streak = try await world.call(Scheduler.studyStreak, Empty())
            #expect(streak.currentDays == 3 && streak.bestDays == 3 && streak.reviewedToday && streak.lastStudyDate == "2026-11-21")
            world.clock.set(instant("2026-11-22T18:00:00Z"))  // the next day, nothing yet: the streak is still alive
            streak = try await world.call(Scheduler.studyStreak, Empty())
            #expect(streak.currentDays == 3 && !streak.reviewedToday)
            #expect(!streak.message.lowercased().contains("miss") && !streak.message.lowercased().contains("fail"))
            _ = try await world.call(Scheduler.undoReview, ReviewCardID(cardId: "c3"))
            streak = try await world.call(Scheduler.studyStreak, Empty())
            #expect(streak.currentDays == 0 && streak.bestDays == 2)
        }
    }
}
