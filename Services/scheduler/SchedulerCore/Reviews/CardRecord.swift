import Bus
import Contracts
import Foundation
import GRDB
import Wire

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
    struct Progress: Sendable, Equatable {
        var reviewCount: Int
        var lapses: Int
        var lastReviewedAt: Int64?
        var lastRating: ReviewRating?
        var sm2: SM2.Memory
        var fsrs: FSRS.Memory
        var updatedAt: Int64
        /// The card's newest `review_log` row; each row's earlier state names the one before.
        var lastLogId: Int64?

        /// A compact text form for `review_log.previous` (JSON costs more than the review itself).
        var snapshot: String {
            func text<T>(_ value: T?) -> String { value.map { "\($0)" } ?? "-" }
            return [
                "1", "\(reviewCount)", "\(lapses)", text(lastReviewedAt), text(lastRating?.rawValue),
                "\(sm2.easeFactor)", "\(sm2.intervalDays)", "\(sm2.repetitions)", "\(sm2.dueMs)",
                fsrs.phase.rawValue, text(fsrs.step), text(fsrs.stability), text(fsrs.difficulty), "\(fsrs.dueMs)", "\(updatedAt)",
                text(lastLogId),
            ].joined(separator: " ")
        }

        /// Reads ``snapshot``.
        init?(snapshot: String) {
            let parts = snapshot.split(separator: " ").map(String.init)
            guard parts.count == 16, parts[0] == "1",
                  let reviewCount = Int(parts[1]), let lapses = Int(parts[2]), let ease = Double(parts[5]), let interval = Int(parts[6]),
                  let repetitions = Int(parts[7]), let sm2Due = Int64(parts[8]), let phase = FSRSPhase(rawValue: parts[9]),
                  let fsrsDue = Int64(parts[13]), let updatedAt = Int64(parts[14]) else { return nil }
            let lastReviewedAt = Int64(parts[3])
            self.init(reviewCount: reviewCount, lapses: lapses, lastReviewedAt: lastReviewedAt, lastRating: ReviewRating(rawValue: parts[4]),
                      sm2: SM2.Memory(easeFactor: ease, intervalDays: interval, repetitions: repetitions, dueMs: sm2Due),
                      fsrs: FSRS.Memory(phase: phase, step: Int(parts[10]), stability: Double(parts[11]), difficulty: Double(parts[12]),
                                        dueMs: fsrsDue, lastReviewMs: lastReviewedAt),
                      updatedAt: updatedAt, lastLogId: Int64(parts[15]))
        }

        init(reviewCount: Int, lapses: Int, lastReviewedAt: Int64?, lastRating: ReviewRating?, sm2: SM2.Memory, fsrs: FSRS.Memory,
             updatedAt: Int64, lastLogId: Int64? = nil) {
            self.reviewCount = reviewCount
            self.lapses = lapses
            self.lastReviewedAt = lastReviewedAt
            self.lastRating = lastRating
            self.sm2 = sm2
            self.fsrs = fsrs
            self.updatedAt = updatedAt
            self.lastLogId = lastLogId
        }
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
        try db.cachedStatement(sql: "SELECT \(columns) FROM card WHERE user_id = ? AND card_id = ?")
            .readFirst(arguments: [user, cardId], CardRecord.init(row:))
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

    /// The columns ``init(row:)`` reads, in its order.
    static let columns = """
        user_id, card_id, set_id, subject_id, algorithm, review_count, lapses, last_reviewed_at, last_rating, sm2_ease, sm2_interval,
        sm2_repetitions, sm2_due_at, fsrs_phase, fsrs_step, fsrs_stability, fsrs_difficulty, fsrs_due_at, created_at, updated_at, last_log_id
        """

    /// A row selected with ``columns`` (read by position: this is the review path's hot spot).
    init(row: Row) {
        userId = row[0]
        cardId = row[1]
        setId = row[2]
        subjectId = row[3]
        algorithm = SchedulingAlgorithm(rawValue: row[4]) ?? .sm2
        let lastReviewedAt: Int64? = row[7]
        progress = Progress(
            reviewCount: row[5], lapses: row[6], lastReviewedAt: lastReviewedAt,
            lastRating: (row[8] as String?).flatMap(ReviewRating.init(rawValue:)),
            sm2: SM2.Memory(easeFactor: row[9], intervalDays: row[10], repetitions: row[11], dueMs: row[12]),
            fsrs: FSRS.Memory(phase: FSRSPhase(rawValue: row[13]) ?? .learning, step: row[14], stability: row[15],
                              difficulty: row[16], dueMs: row[17], lastReviewMs: lastReviewedAt),
            updatedAt: row[19], lastLogId: row[20])
        createdAt = row[18]
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
                fsrs_phase = ?, fsrs_step = ?, fsrs_stability = ?, fsrs_difficulty = ?, fsrs_due_at = ?, updated_at = ?, last_log_id = ?
            WHERE user_id = ? AND card_id = ?
            """).execute(arguments: [dueAt, p.reviewCount, p.lapses, p.lastReviewedAt, p.lastRating?.rawValue,
                             p.sm2.easeFactor, p.sm2.intervalDays, p.sm2.repetitions, p.sm2.dueMs,
                             p.fsrs.phase.rawValue, p.fsrs.step, p.fsrs.stability, p.fsrs.difficulty, p.fsrs.dueMs, p.updatedAt,
                             p.lastLogId, userId, cardId])
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
