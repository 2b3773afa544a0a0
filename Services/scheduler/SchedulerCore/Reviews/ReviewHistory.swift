import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// `review.history` and `review.import`: a card's log read back with the scheduling each review
/// led to (store's `.apkg` export), and reviews made elsewhere replayed through the same
/// ``ReviewBook/apply`` as `review.record` (store's `.apkg` import).
extension ReviewBook {
    /// The cards' state and log, oldest review first; cards without review state are left out.
    /// - Throws: `INVALID_ARGUMENT` for a bad id or count; `RESOURCE_EXHAUSTED` when the cards
    ///   have more than ``SchedulerLimits/reviewsPerCall`` reviews together.
    static func history(_ request: ReviewHistoryRequest, _ db: Database, user: String, now: Date) throws -> ReviewHistoryResponse {
        try Field.count(request.cardIds, "cardIds", in: 1...SchedulerLimits.cardsPerCall)
        let nowMs = now.unixMilliseconds
        var cards: [CardHistory] = []
        var total = 0
        for (index, cardId) in request.cardIds.enumerated() {
            let cardId = try IDField.check(cardId, "cardIds[\(index)]")
            guard let card = try CardRecord.fetch(db, user: user, cardId: cardId) else { continue }
            // The log is a chain from the newest row back: each row holds the state before it.
            var logs: [(rating: ReviewRating, reviewedAt: Int64, duration: Double?, before: CardRecord.Progress)] = []
            var logId = card.progress.lastLogId
            while let id = logId {
                guard let row = try Row.fetchOne(db, sql: "SELECT rating, reviewed_at, duration_seconds, previous FROM review_log WHERE id = ?", arguments: [id]),
                      let before = CardRecord.Progress(snapshot: row["previous"]), let rating = ReviewRating(rawValue: row["rating"]) else {
                    throw BusError.internal("review log of card \(cardId) is unreadable")
                }
                total += 1
                guard total <= SchedulerLimits.reviewsPerCall else {
                    throw BusError.resourceExhausted("the cards have more than \(SchedulerLimits.reviewsPerCall) reviews together; ask for fewer cards at once")
                }
                logs.append((rating, row["reviewed_at"], row["duration_seconds"], before))
                logId = before.lastLogId
            }
            logs.reverse()
            var reviews: [ReviewHistoryEntry] = []
            for (index, log) in logs.enumerated() {
                let after = index + 1 < logs.count ? logs[index + 1].before : card.progress
                reviews.append(ReviewHistoryEntry(
                    rating: log.rating, reviewedAt: Date(unixMilliseconds: log.reviewedAt), durationSeconds: log.duration,
                    phase: phase(log.before, algorithm: card.algorithm),
                    intervalDays: Double(due(after, card.algorithm) - log.reviewedAt) / 86_400_000,
                    previousIntervalDays: log.before.lastReviewedAt.map { Double(due(log.before, card.algorithm) - $0) / 86_400_000 } ?? 0,
                    easeFactor: after.sm2.easeFactor))
            }
            cards.append(CardHistory(card: card.state(nowMs: nowMs), reviews: reviews))
        }
        return ReviewHistoryResponse(cards: cards)
    }

    private static func due(_ progress: CardRecord.Progress, _ algorithm: SchedulingAlgorithm) -> Int64 {
        algorithm == .fsrs ? progress.fsrs.dueMs : progress.sm2.dueMs
    }

    /// Where a card in `progress` stands under `algorithm`: never recalled, recalled, or
    /// forgotten since it was.
    private static func phase(_ progress: CardRecord.Progress, algorithm: SchedulingAlgorithm) -> FSRSPhase {
        switch algorithm {
        case .fsrs: progress.fsrs.phase
        case .sm2: progress.sm2.repetitions > 0 ? .review : progress.lapses > 0 ? .relearning : .learning
        }
    }

    /// Adds the cards not known yet and replays each one's reviews, in time order, through the
    /// card's algorithm without fuzz (the same reviews give the same due date). A card that has
    /// reviews already is left as it is, so a repeated import (a retry) changes nothing.
    /// - Throws: `INVALID_ARGUMENT` for a bad id, count, duration, or a review in the future or
    ///   out of order (nothing of the request is written then).
    static func importReviews(_ request: ReviewImportRequest, _ db: Database, user: String, now: Date, tally: StudyTally) throws -> ReviewImportResponse {
        try Field.count(request.cards, "cards", in: 1...SchedulerLimits.cardsPerCall)
        let reviewCount = request.cards.reduce(0) { $0 + $1.reviews.count }
        guard reviewCount <= SchedulerLimits.reviewsPerCall else {
            throw Field.invalid("cards", "must hold at most \(SchedulerLimits.reviewsPerCall) reviews together, not \(reviewCount)")
        }
        let nowMs = now.unixMilliseconds
        var replayed = 0, alreadyReviewed = 0
        for (index, imported) in request.cards.enumerated() {
            let field = "cards[\(index)]"
            let card = ReviewCardAdd(cardId: imported.cardId, setId: imported.setId, subjectId: imported.subjectId)
            _ = try add([card], db, user: user, now: now)
            var record = try CardRecord.require(db, user: user, cardId: try IDField.check(imported.cardId, "\(field).cardId"))
            guard record.progress.reviewCount == 0 else {
                alreadyReviewed += 1
                continue
            }
            let (_, retention, _, zone) = try UserSettings.effective(db, user: user, setId: record.setId, now: now)
            let fsrs = FSRS(desiredRetention: retention)
            var last = Int64.min
            for (reviewIndex, review) in imported.reviews.enumerated() {
                let reviewField = "\(field).reviews[\(reviewIndex)]"
                let reviewedAt = review.reviewedAt.unixMilliseconds
                guard reviewedAt <= nowMs + futureTolerance else { throw Field.invalid("\(reviewField).reviewedAt", "must not be in the future") }
                guard reviewedAt >= last else { throw Field.invalid("\(reviewField).reviewedAt", "must not be before the review before it") }
                if let duration = review.durationSeconds { try Field.seconds(duration, "\(reviewField).durationSeconds", maximum: 3600) }
                try apply(review.rating, at: reviewedAt, durationSeconds: review.durationSeconds, to: &record, db, nowMs: nowMs,
                          fsrs: fsrs, fuzz: nil, zone: zone, tally: tally)
                last = reviewedAt
            }
            replayed += 1
        }
        return ReviewImportResponse(replayed: replayed, alreadyReviewed: alreadyReviewed)
    }
}
