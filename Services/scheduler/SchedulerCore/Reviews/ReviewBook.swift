import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// Spaced-repetition state: cards, reviews and their log, due lists, forecasts, streaks and
/// set statistics. Every function runs inside the caller's transaction.
enum ReviewBook {
    static let maximumBatch = 1000
    /// How far in the future a review time may be (clock skew between devices).
    static let futureTolerance: Int64 = 5 * 60_000

    // MARK: Cards

    /// Starts review state (new, due now) for cards not known yet; returns how many were new.
    static func add(_ cards: [ReviewCardAdd], _ db: Database, user: String, now: Date) throws -> Int {
        try Field.count(cards, "cards", in: 1...maximumBatch)
        try UserSettings.ensure(db, user: user, now: now)
        var added = 0
        var algorithms: [String?: SchedulingAlgorithm] = [:]
        for (index, card) in cards.enumerated() {
            var card = card
            card.cardId = try IDField.check(card.cardId, "cards[\(index)].cardId")
            card.setId = try IDField.optional(card.setId, "cards[\(index)].setId")
            card.subjectId = try IDField.optional(card.subjectId, "cards[\(index)].subjectId")
            let algorithm = try algorithms[card.setId] ?? UserSettings.effective(db, user: user, setId: card.setId, now: now).0
            algorithms[card.setId] = algorithm
            if try CardRecord.new(user: user, card: card, algorithm: algorithm, now: now.unixMilliseconds).insertIfMissing(db) { added += 1 }
        }
        return added
    }

    /// Records a card's new set and subject (store's `flashcard.updated`); the new set's
    /// algorithm applies from now on. A card not known yet is added.
    static func move(_ card: ReviewCardAdd, _ db: Database, user: String, now: Date) throws {
        guard var record = try CardRecord.fetch(db, user: user, cardId: card.cardId) else {
            _ = try add([card], db, user: user, now: now)
            return
        }
        guard record.setId != card.setId || record.subjectId != card.subjectId else { return }
        record.algorithm = try UserSettings.effective(db, user: user, setId: card.setId, now: now).0
        try db.execute(sql: "UPDATE card SET set_id = ?, subject_id = ?, algorithm = ?, due_at = ?, updated_at = ? WHERE user_id = ? AND card_id = ?",
                       arguments: [card.setId, card.subjectId, record.algorithm.rawValue, record.dueAt, now.unixMilliseconds, user, card.cardId])
    }

    /// Drops cards with their log; returns how many had review state.
    static func remove(_ cardIds: [String], _ db: Database, user: String) throws -> Int {
        try Field.count(cardIds, "cardIds", in: 1...maximumBatch)
        var removed = 0
        for (index, cardId) in cardIds.enumerated() {
            let cardId = try IDField.check(cardId, "cardIds[\(index)]")
            guard let card = try CardRecord.fetch(db, user: user, cardId: cardId) else { continue }
            // Follow the card's log chain, newest first.
            var logId = card.progress.lastLogId
            while let id = logId {
                let previous = try String.fetchOne(db, sql: "SELECT previous FROM review_log WHERE id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM review_log WHERE id = ?", arguments: [id])
                logId = previous.flatMap(CardRecord.Progress.init(snapshot:))?.lastLogId
            }
            try db.execute(sql: "DELETE FROM card WHERE user_id = ? AND card_id = ?", arguments: [user, cardId])
            removed += 1
        }
        return removed
    }

    /// A card's review state as of `now`.
    static func state(cardId: String, _ db: Database, user: String, now: Date) throws -> CardState {
        try CardRecord.require(db, user: user, cardId: try IDField.check(cardId, "cardId")).state(nowMs: now.unixMilliseconds)
    }

    // MARK: Reviews

    /// Applies a review: both algorithms' memories and the log row (with the earlier state, for
    /// undo) in the caller's transaction; the study day and set counts go to `tally`.
    static func record(_ request: ReviewRecordRequest, _ db: Database, user: String, now: Date, tally: StudyTally) throws -> ReviewResult {
        let cardId = try IDField.check(request.cardId, "cardId")
        var card = try CardRecord.require(db, user: user, cardId: cardId)
        let nowMs = now.unixMilliseconds
        let reviewedAt = request.reviewedAt?.unixMilliseconds ?? nowMs
        guard reviewedAt <= nowMs + futureTolerance else {
            throw Field.invalid("reviewedAt", "must not be in the future (more than 5 minutes after the scheduler's clock)")
        }
        if let last = card.progress.lastReviewedAt, reviewedAt < last {
            throw Field.invalid("reviewedAt", "must not be before the card's last review at \(ISO8601.format(unixMilliseconds: last))")
        }
        if let duration = request.durationSeconds { try Field.seconds(duration, "durationSeconds", maximum: 3600) }
        let (_, retention, fuzzing, zone) = try UserSettings.effective(db, user: user, setId: card.setId, now: now)
        try apply(request.rating, at: reviewedAt, durationSeconds: request.durationSeconds, to: &card, db, nowMs: nowMs,
                  fsrs: FSRS(desiredRetention: retention), fuzz: fuzzing ? Double.random(in: 0..<1) : nil, zone: zone, tally: tally)

        let intervalDays = Double(card.dueAt - reviewedAt) / 86_400_000
        return ReviewResult(card: card.state(nowMs: nowMs), nextDueAt: Date(unixMilliseconds: card.dueAt), intervalDays: intervalDays,
                            message: Messages.afterReview(request.rating, intervalDays: intervalDays))
    }

    /// Applies one review to `card`: both algorithms' memories and the log row (with the earlier
    /// state, for undo), saved in the caller's transaction; the study day and set counts go to
    /// `tally`. `review.record` and `review.import` both schedule through here.
    static func apply(
        _ rating: ReviewRating, at reviewedAt: Int64, durationSeconds: Double?, to card: inout CardRecord, _ db: Database, nowMs: Int64,
        fsrs: FSRS, fuzz: Double?, zone: Zone, tally: StudyTally
    ) throws {
        let previous = card.progress
        var next = previous
        next.sm2 = SM2.review(previous.sm2, quality: SM2.quality(rating), at: reviewedAt)
        next.fsrs = fsrs.review(previous.fsrs, rating: rating, at: reviewedAt, fuzz: fuzz)
        let wasRecalled = previous.sm2.repetitions > 0 || previous.fsrs.phase == .review
        if rating == .again && wasRecalled { next.lapses += 1 }
        next.reviewCount += 1
        next.lastReviewedAt = reviewedAt
        next.lastRating = rating
        next.updatedAt = nowMs
        let localDate = zone.date(atMs: reviewedAt).description
        try db.cachedStatement(sql: """
            INSERT INTO review_log (user_id, card_id, set_id, rating, reviewed_at, local_date, duration_seconds, previous, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [card.userId, card.cardId, card.setId, rating.rawValue, reviewedAt, localDate, durationSeconds,
                             previous.snapshot, nowMs])
        next.lastLogId = db.lastInsertedRowID
        card.progress = next
        try card.saveProgress(db)
        tally.count(user: card.userId, setId: card.setId, localDate: localDate, recalled: rating != .again, change: 1)
    }

    /// Restores the card's state from before its last review and forgets that review.
    static func undo(cardId: String, _ db: Database, user: String, now: Date, tally: StudyTally) throws -> CardState {
        let cardId = try IDField.check(cardId, "cardId")
        var card = try CardRecord.require(db, user: user, cardId: cardId)
        guard let logId = card.progress.lastLogId,
              let row = try Row.fetchOne(db, sql: "SELECT rating, local_date, set_id, previous FROM review_log WHERE id = ?", arguments: [logId]) else {
            throw BusError.failedPrecondition("card \(cardId) has no review to undo")
        }
        guard var previous = CardRecord.Progress(snapshot: row["previous"]) else {
            throw BusError.internal("review log of card \(cardId) holds an unreadable earlier state")
        }
        previous.updatedAt = now.unixMilliseconds
        card.progress = previous
        try card.saveProgress(db)
        try db.execute(sql: "DELETE FROM review_log WHERE id = ?", arguments: [logId])
        // The set the review was counted under, which the card may have left since.
        tally.count(user: user, setId: row["set_id"], localDate: row["local_date"], recalled: (row["rating"] as String) != ReviewRating.again.rawValue, change: -1)
        return card.state(nowMs: now.unixMilliseconds)
    }

    // MARK: Queries

    /// Due cards, oldest-overdue first; `limit` 1...1000 (default 50).
    static func due(_ request: DueRequest, _ db: Database, user: String, now: Date) throws -> DueResponse {
        let limit = try Field.int(request.limit, "limit", in: 1...1000, default: 50)
        let at = (request.at ?? now).unixMilliseconds
        let setId = try IDField.optional(request.setId, "setId")
        let subjectId = try IDField.optional(request.subjectId, "subjectId")
        let columns = """
            card_id, set_id, subject_id, due_at, algorithm, review_count, sm2_interval, sm2_repetitions, sm2_ease, sm2_due_at,
            fsrs_phase, fsrs_due_at, last_reviewed_at
            """
        let rows: [Row]
        if setId == nil && subjectId == nil {
            let entries = try DueIndex.earliest(db, user: user, dueBy: at, count: limit + 1)
            let card = try db.cachedStatement(sql: "SELECT \(columns) FROM card WHERE user_id = ? AND card_id = ?")
            rows = try entries.compactMap { try Row.fetchOne(card, arguments: [user, $0.cardId]) }
        } else {
            var filter = ""
            var arguments: StatementArguments = [user]
            if let setId {
                filter += " AND set_id = ?"
                arguments += [setId]
            }
            if let subjectId {
                filter += " AND subject_id = ?"
                arguments += [subjectId]
            }
            arguments += [at, limit + 1]
            rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(columns) FROM card WHERE user_id = ?\(filter) AND due_at <= ? ORDER BY due_at LIMIT ?
                """), arguments: arguments)
        }
        let cards = rows.prefix(limit).map { row in
            let algorithm = SchedulingAlgorithm(rawValue: row["algorithm"]) ?? .sm2
            let sm2 = SM2.Memory(easeFactor: row["sm2_ease"], intervalDays: row["sm2_interval"], repetitions: row["sm2_repetitions"], dueMs: row["sm2_due_at"])
            let fsrs = FSRS.Memory(phase: FSRSPhase(rawValue: row["fsrs_phase"]) ?? .learning, step: nil, stability: nil, difficulty: nil,
                                   dueMs: row["fsrs_due_at"], lastReviewMs: row["last_reviewed_at"])
            return DueCard(cardId: row["card_id"], setId: row["set_id"], subjectId: row["subject_id"], dueAt: Date(unixMilliseconds: row["due_at"]),
                           algorithm: algorithm, mastery: Mastery.level(algorithm: algorithm, sm2: sm2, fsrs: fsrs),
                           isNew: (row["review_count"] as Int) == 0)
        }
        return DueResponse(cards: Array(cards), hasMore: rows.count > limit)
    }

    /// Reviews due per local day for `days` days from today; today includes overdue cards.
    static func forecast(_ request: ForecastRequest, _ db: Database, user: String, now: Date) throws -> ForecastResponse {
        let days = try Field.int(request.days, "days", in: 1...365)
        let setId = try IDField.optional(request.setId, "setId")
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let today = zone.date(atMs: now.unixMilliseconds)
        let sets = try setId.map { [$0] } ?? DueIndex.sets(db, user: user)
        let dates = (0..<days).map { today.adding(days: $0) }
        let counts = try DueIndex.counts(db, user: user, sets: sets, between: [Int64.min] + dates.map { zone.instantMs($0.adding(days: 1)) })
        return ForecastResponse(timeZone: zone.identifier, days: zip(dates, counts).map { ForecastDay(date: $0.description, count: $1) })
    }

    /// The study streak in the user's time zone.
    static func streak(_ db: Database, user: String, now: Date) throws -> StudyStreak {
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let today = zone.date(atMs: now.unixMilliseconds)
        let days = try String.fetchAll(db, sql: "SELECT date FROM study_day WHERE user_id = ? AND reviews > 0 ORDER BY date", arguments: [user])
            .compactMap(LocalDate.init)
        let (current, best) = Streaks.daily(days, today: today)
        let reviewedToday = days.last == today
        return StudyStreak(currentDays: current, bestDays: best, reviewedToday: reviewedToday, lastStudyDate: days.last?.description,
                           timeZone: zone.identifier, message: Messages.streak(current: current, reviewedToday: reviewedToday))
    }

    /// The reviews recorded in `request`'s range.
    static func count(_ request: ReviewCountRequest, _ db: Database, user: String) throws -> ReviewCount {
        let from = request.from.unixMilliseconds, to = request.to.unixMilliseconds
        guard from < to, to - from <= 400 * 86_400_000 else {
            throw BusError.invalidArgument("'to' must be after 'from' and at most 400 days later", details: .object(["field": .string("to")]))
        }
        let reviews = try Int.fetchOne(
            db, sql: "SELECT count(*) FROM review_log WHERE user_id = ? AND reviewed_at >= ? AND reviewed_at < ?", arguments: [user, from, to]) ?? 0
        return ReviewCount(reviews: reviews)
    }

    /// A set's statistics as of now.
    static func setStatistics(setId: String, _ db: Database, user: String, now: Date) throws -> SetStatistics {
        let setId = try IDField.check(setId, "setId")
        let nowMs = now.unixMilliseconds
        let fsrs = FSRS()
        var mastery = MasteryCounts()
        var cards = 0, newCards = 0, dueNow = 0
        var easeSum = 0.0, retrievabilitySum = 0.0, reviewed = 0
        // The index named: without statistics SQLite reads all the user's cards by primary key.
        let rows = try Row.fetchCursor(db, sql: """
            SELECT \(CardRecord.columns) FROM card INDEXED BY card_due_by_set WHERE user_id = ? AND set_id = ?
            """, arguments: [user, setId])
        while let row = try rows.next() {
            let card = CardRecord(row: row)
            cards += 1
            if card.dueAt <= nowMs { dueNow += 1 }
            switch Mastery.level(algorithm: card.algorithm, sm2: card.progress.sm2, fsrs: card.progress.fsrs) {
            case .learning: mastery.learning += 1
            case .developing: mastery.developing += 1
            case .proficient: mastery.proficient += 1
            case .mastered: mastery.mastered += 1
            }
            if card.progress.reviewCount == 0 {
                newCards += 1
            } else {
                reviewed += 1
                easeSum += card.progress.sm2.easeFactor
                retrievabilitySum += fsrs.retrievability(card.progress.fsrs, at: nowMs)
            }
        }
        guard cards > 0 else { throw BusError.notFound("set \(setId) has no cards with review state") }
        let counts = try Row.fetchOne(db, sql: """
            SELECT reviews, recalled FROM set_stats WHERE user_id = ? AND set_id = ?
            """, arguments: [user, setId])
        let reviews: Int = counts?["reviews"] ?? 0, recalled: Int = counts?["recalled"] ?? 0
        return SetStatistics(
            setId: setId, cards: cards, newCards: newCards, dueNow: dueNow, reviews: reviews,
            accuracy: reviews == 0 ? nil : Double(recalled) / Double(reviews),
            averageEase: reviewed == 0 ? nil : easeSum / Double(reviewed),
            averageRetrievability: reviewed == 0 ? nil : retrievabilitySum / Double(reviewed), mastery: mastery)
    }
}
