import Bus
import Contracts
import Foundation
import GRDB

/// A row of `card`: one card's review state under both algorithms. Both are updated on every
/// review, so switching a set or user between SM-2 and FSRS needs no replay; `algorithm` says
/// which one's due date is the card's.
struct CardRecord: Sendable {
    var userId: String
    var cardId: String
    var setId: String?
    var subjectId: String?
    var algorithm: SchedulingAlgorithm
    var progress: Progress
    var createdAt: Int64

    /// What a review changes, and what `review_log.previous` keeps for undo.
    struct Progress: Sendable, Codable, Equatable {
        var reviewCount: Int
        var lapses: Int
        var lastReviewedAt: Int64?
        var lastRating: ReviewRating?
        var sm2: SM2.Memory
        var fsrs: FSRS.Memory
        var updatedAt: Int64
    }

    /// Where the active algorithm schedules the card.
    var dueAt: Int64 { algorithm == .fsrs ? progress.fsrs.dueMs : progress.sm2.dueMs }

    static func new(user: String, card: ReviewCardAdd, algorithm: SchedulingAlgorithm, now: Int64) -> CardRecord {
        CardRecord(userId: user, cardId: card.cardId, setId: card.setId, subjectId: card.subjectId, algorithm: algorithm,
                   progress: Progress(reviewCount: 0, lapses: 0, lastReviewedAt: nil, lastRating: nil,
                                      sm2: .new(dueMs: now), fsrs: .new(dueMs: now), updatedAt: now),
                   createdAt: now)
    }

    static func fetch(_ db: Database, user: String, cardId: String) throws -> CardRecord? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM card WHERE user_id = ? AND card_id = ?"), arguments: [user, cardId])
            .map(CardRecord.init(row:))
    }

    /// The card, or `NOT_FOUND` (also for another user's card).
    static func require(_ db: Database, user: String, cardId: String) throws -> CardRecord {
        guard let card = try fetch(db, user: user, cardId: cardId) else {
            throw BusError.notFound("card \(cardId) has no review state; add it with cards.add or create it in store")
        }
        return card
    }

    init(userId: String, cardId: String, setId: String?, subjectId: String?, algorithm: SchedulingAlgorithm, progress: Progress, createdAt: Int64) {
        self.userId = userId
        self.cardId = cardId
        self.setId = setId
        self.subjectId = subjectId
        self.algorithm = algorithm
        self.progress = progress
        self.createdAt = createdAt
    }

    init(row: Row) {
        userId = row["user_id"]
        cardId = row["card_id"]
        setId = row["set_id"]
        subjectId = row["subject_id"]
        algorithm = SchedulingAlgorithm(rawValue: row["algorithm"]) ?? .sm2
        progress = Progress(
            reviewCount: row["review_count"], lapses: row["lapses"], lastReviewedAt: row["last_reviewed_at"],
            lastRating: (row["last_rating"] as String?).flatMap(ReviewRating.init(rawValue:)),
            sm2: SM2.Memory(easeFactor: row["sm2_ease"], intervalDays: row["sm2_interval"], repetitions: row["sm2_repetitions"], dueMs: row["sm2_due_at"]),
            fsrs: FSRS.Memory(phase: FSRSPhase(rawValue: row["fsrs_phase"]) ?? .learning, step: row["fsrs_step"], stability: row["fsrs_stability"],
                              difficulty: row["fsrs_difficulty"], dueMs: row["fsrs_due_at"], lastReviewMs: row["last_reviewed_at"]),
            updatedAt: row["updated_at"])
        createdAt = row["created_at"]
    }

    /// Inserts the card unless it exists; returns whether it was new.
    func insertIfMissing(_ db: Database) throws -> Bool {
        let p = progress
        try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO card (user_id, card_id, set_id, subject_id, algorithm, due_at, review_count, lapses, last_reviewed_at, last_rating,
                sm2_ease, sm2_interval, sm2_repetitions, sm2_due_at, fsrs_phase, fsrs_step, fsrs_stability, fsrs_difficulty, fsrs_due_at,
                created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [userId, cardId, setId, subjectId, algorithm.rawValue, dueAt, p.reviewCount, p.lapses, p.lastReviewedAt,
                             p.lastRating?.rawValue, p.sm2.easeFactor, p.sm2.intervalDays, p.sm2.repetitions, p.sm2.dueMs,
                             p.fsrs.phase.rawValue, p.fsrs.step, p.fsrs.stability, p.fsrs.difficulty, p.fsrs.dueMs, createdAt, p.updatedAt])
        return db.changesCount > 0
    }

    /// Writes `progress` (and the due date it implies).
    func saveProgress(_ db: Database) throws {
        let p = progress
        try db.cachedStatement(sql: """
            UPDATE card SET due_at = ?, review_count = ?, lapses = ?, last_reviewed_at = ?, last_rating = ?,
                sm2_ease = ?, sm2_interval = ?, sm2_repetitions = ?, sm2_due_at = ?,
                fsrs_phase = ?, fsrs_step = ?, fsrs_stability = ?, fsrs_difficulty = ?, fsrs_due_at = ?, updated_at = ?
            WHERE user_id = ? AND card_id = ?
            """).execute(arguments: [dueAt, p.reviewCount, p.lapses, p.lastReviewedAt, p.lastRating?.rawValue,
                             p.sm2.easeFactor, p.sm2.intervalDays, p.sm2.repetitions, p.sm2.dueMs,
                             p.fsrs.phase.rawValue, p.fsrs.step, p.fsrs.stability, p.fsrs.difficulty, p.fsrs.dueMs, p.updatedAt,
                             userId, cardId])
    }

    /// The card as the contract shows it, with retrievability and mastery as of `nowMs`.
    func state(nowMs: Int64, fsrs: FSRS = FSRS()) -> CardState {
        let p = progress
        return CardState(
            id: cardId, userId: userId, setId: setId, subjectId: subjectId, algorithm: algorithm, dueAt: Date(unixMilliseconds: dueAt),
            reviewCount: p.reviewCount, lapses: p.lapses, lastReviewedAt: p.lastReviewedAt.map(Date.init(unixMilliseconds:)),
            lastRating: p.lastRating, mastery: Mastery.level(algorithm: algorithm, sm2: p.sm2, fsrs: p.fsrs),
            retrievability: p.lastReviewedAt == nil ? nil : fsrs.retrievability(p.fsrs, at: nowMs),
            sm2: SM2State(easeFactor: p.sm2.easeFactor, intervalDays: p.sm2.intervalDays, repetitions: p.sm2.repetitions,
                          dueAt: Date(unixMilliseconds: p.sm2.dueMs)),
            fsrs: FSRSState(phase: p.fsrs.phase, step: p.fsrs.step, stability: p.fsrs.stability, difficulty: p.fsrs.difficulty,
                            dueAt: Date(unixMilliseconds: p.fsrs.dueMs)),
            createdAt: Date(unixMilliseconds: createdAt), updatedAt: Date(unixMilliseconds: p.updatedAt))
    }
}

/// Mastery levels from the active algorithm's current interval (documented thresholds):
/// learning under 1 day (or SM-2 repetitions 0, or FSRS learning/relearning), developing 1–6
/// days, proficient 7–20 days, mastered 21 days and more (Anki's "mature").
enum Mastery {
    static func level(intervalDays: Double) -> MasteryLevel {
        switch intervalDays {
        case ..<1: .learning
        case ..<7: .developing
        case ..<21: .proficient
        default: .mastered
        }
    }

    static func level(algorithm: SchedulingAlgorithm, sm2: SM2.Memory, fsrs: FSRS.Memory) -> MasteryLevel {
        switch algorithm {
        case .sm2:
            return sm2.repetitions == 0 ? .learning : level(intervalDays: Double(sm2.intervalDays))
        case .fsrs:
            guard fsrs.phase == .review, let last = fsrs.lastReviewMs else { return .learning }
            return level(intervalDays: Double(fsrs.dueMs - last) / 86_400_000)
        }
    }
}
