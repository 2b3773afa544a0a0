import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// Study plans: a set's new cards spread over the days until a target date, the new cards'
/// due dates moved to their planned sessions, and the plan kept for `plan.get` and `plan.ics`.
enum PlanBook {
    static let maximumDays = 366

    static func create(_ request: PlanCreateRequest, _ db: Database, user: String, now: Date) throws -> StudyPlan {
        let setId = try IDField.check(request.setId, "setId")
        let (algorithm, retention, _, zone) = try UserSettings.effective(db, user: user, setId: setId, now: now)
        let today = zone.date(atMs: now.unixMilliseconds)
        let start = try request.startDate.map { value throws(BusError) in try LocalDate(value, field: "startDate") } ?? today
        guard start >= today else { throw Field.invalid("startDate", "must not be before the user's today (\(today))") }
        let target = try LocalDate(request.targetDate, field: "targetDate")
        let days = start.days(to: target) + 1
        guard (1...maximumDays).contains(days) else {
            throw Field.invalid("targetDate", "must be on or after startDate and at most \(maximumDays - 1) days after it")
        }
        let sessionTime = try LocalTime(request.sessionTime ?? "18:00", field: "sessionTime")
        let minutes = try Field.int(request.sessionMinutes, "sessionMinutes", in: 5...480, default: 30)
        let title = try Field.optionalText(request.title, "title", maximum: 200, trimming: true) ?? "Study plan"

        // The index named: without statistics SQLite reads all the user's cards by primary key.
        let newCards = try String.fetchAll(db, sql: """
            SELECT card_id FROM card INDEXED BY card_due_by_set WHERE user_id = ? AND set_id = ? AND review_count = 0 ORDER BY created_at, card_id
            """, arguments: [user, setId])
        guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM card INDEXED BY card_due_by_set WHERE user_id = ? AND set_id = ?)", arguments: [user, setId]) == true else {
            throw BusError.notFound("set \(setId) has no cards with review state")
        }
        let returns = followUps(algorithm, retention: retention)
        // Look past the target date by the longest follow-up that matters (a month at most).
        let beyond = min(returns.last ?? 0, 30)
        let existing = try dailyLoad(db, user: user, zone: zone, from: start, days: days + beyond, today: today, excludingNewOf: setId)
        let (placed, reviews) = PlanBuilder(existing: existing, followUps: returns).spread(newCards: newCards.count, days: days)

        let id = UUID().uuidString.lowercased()
        var planDays: [PlanDay] = []
        var next = newCards.makeIterator()
        for offset in 0..<days {
            let date = start.adding(days: offset)
            let sessionStart = zone.instantMs(date, sessionTime)
            planDays.append(PlanDay(date: date.description, newCards: placed[offset], expectedReviews: reviews[offset],
                                    sessionStart: Date(unixMilliseconds: sessionStart)))
            for _ in 0..<placed[offset] {
                guard let cardId = next.next() else { break }
                // A new card waits for its session: both algorithms' due dates move there.
                try db.execute(sql: """
                    UPDATE card SET due_at = ?1, sm2_due_at = ?1, fsrs_due_at = ?1, updated_at = ?2 WHERE user_id = ?3 AND card_id = ?4
                    """, arguments: [sessionStart, now.unixMilliseconds, user, cardId])
            }
        }
        let plan = StudyPlan(id: id, userId: user, setId: setId, title: title, startDate: start.description, targetDate: target.description,
                             timeZone: zone.identifier, sessionTime: sessionTime.description, sessionMinutes: minutes, newCards: newCards.count,
                             days: planDays, createdAt: now, updatedAt: now)
        try db.execute(sql: """
            INSERT INTO plan (id, user_id, set_id, title, start_date, target_date, time_zone, session_time, session_minutes, new_cards, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [id, user, setId, title, plan.startDate, plan.targetDate, plan.timeZone, plan.sessionTime, minutes, newCards.count,
                             now.unixMilliseconds, now.unixMilliseconds])
        for day in planDays {
            try db.execute(sql: "INSERT INTO plan_day (plan_id, date, new_cards, expected_reviews, session_start) VALUES (?, ?, ?, ?, ?)",
                           arguments: [id, day.date, day.newCards, day.expectedReviews, day.sessionStart.unixMilliseconds])
        }
        return plan
    }

    static func get(_ planId: String, _ db: Database, user: String) throws -> StudyPlan {
        let planId = try IDField.check(planId, "planId")
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM plan WHERE id = ? AND user_id = ?", arguments: [planId, user]) else {
            throw BusError.notFound("study plan \(planId) not found")
        }
        let days = try Row.fetchAll(db, sql: "SELECT * FROM plan_day WHERE plan_id = ? ORDER BY date", arguments: [planId]).map {
            PlanDay(date: $0["date"], newCards: $0["new_cards"], expectedReviews: $0["expected_reviews"], sessionStart: Date(unixMilliseconds: $0["session_start"]))
        }
        return StudyPlan(id: planId, userId: user, setId: row["set_id"], title: row["title"], startDate: row["start_date"], targetDate: row["target_date"],
                         timeZone: row["time_zone"], sessionTime: row["session_time"], sessionMinutes: row["session_minutes"], newCards: row["new_cards"],
                         days: days, createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }

    /// Reviews already due on each plan day (the first day, if today, includes overdue cards),
    /// not counting the new cards being planned.
    static func dailyLoad(_ db: Database, user: String, zone: Zone, from start: LocalDate, days: Int, today: LocalDate, excludingNewOf setId: String) throws -> [Int] {
        let edges = [start == today ? Int64.min : zone.instantMs(start)] + (1...days).map { zone.instantMs(start.adding(days: $0)) }
        return try DueIndex.counts(db, user: user, sets: DueIndex.sets(db, user: user), between: edges, newCardsLeftOutOf: setId)
    }

    /// The days after introduction on which a card rated good each time comes back, under the
    /// set's algorithm (within a year).
    static func followUps(_ algorithm: SchedulingAlgorithm, retention: Double) -> [Int] {
        let day: Int64 = 86_400_000
        var offsets: [Int] = []
        var sm2 = SM2.Memory.new(dueMs: 0)
        let fsrs = FSRS(desiredRetention: retention)
        var memory = FSRS.Memory.new(dueMs: 0)
        var now: Int64 = 0
        while offsets.count < 8 {
            let due: Int64
            switch algorithm {
            case .sm2:
                sm2 = SM2.review(sm2, quality: SM2.quality(.good), at: now)
                due = sm2.dueMs
            case .fsrs:
                memory = fsrs.review(memory, rating: .good, at: now)
                due = memory.dueMs
            }
            now = due
            let offset = Int(due / day)
            if offset > 365 { break }
            if offset > 0 && offsets.last != offset { offsets.append(offset) }
        }
        return offsets
    }
}
