import GRDB
import Synchronization

/// The study-day and set counters that reviews and their undos change, added up in memory over
/// one write batch and written once per row before the batch commits: every review of a batch
/// changes the same few rows (the user's day, the card's set), so a batch writes each of them
/// once instead of two upserts per review.
///
/// A write's additions are held apart until ``GroupCommit`` says whether its savepoint was
/// kept, so a write that fails leaves no count behind.
final class StudyTally: BatchAccumulator {
    private struct DayKey: Hashable {
        let user: String
        let date: String
    }

    private struct SetKey: Hashable {
        let user: String
        let setId: String
    }

    private struct SetTotals {
        var reviews = 0
        var recalled = 0

        mutating func add(reviews: Int, recalled: Int) {
            self.reviews += reviews
            self.recalled += recalled
        }
    }

    private struct Sums {
        var days: [DayKey: Int] = [:]
        var sets: [SetKey: SetTotals] = [:]

        mutating func add(_ other: Sums) {
            for (day, reviews) in other.days { days[day, default: 0] += reviews }
            for (set, totals) in other.sets { sets[set, default: SetTotals()].add(reviews: totals.reviews, recalled: totals.recalled) }
        }
    }

    /// The kept writes' sums, and those of the write running now. Only the writer's queue
    /// touches them; the lock makes that checkable and costs nanoseconds a review.
    private let state = Mutex<(kept: Sums, running: Sums)>((Sums(), Sums()))

    /// Counts a review (`change` 1) or takes one back (-1) on the day and in the set it was counted under.
    func count(user: String, setId: String?, localDate: String, recalled: Bool, change: Int) {
        state.withLock { state in
            state.running.days[DayKey(user: user, date: localDate), default: 0] += change
            if let setId {
                state.running.sets[SetKey(user: user, setId: setId), default: SetTotals()].add(reviews: change, recalled: recalled ? change : 0)
            }
        }
    }

    func writeEnded(kept: Bool) {
        state.withLock { state in
            if kept { state.kept.add(state.running) }
            state.running = Sums()
        }
    }

    func flush(_ db: Database) throws {
        let sums = state.withLock { state in
            defer { state = (Sums(), Sums()) }
            return state.kept
        }
        let day = try db.cachedStatement(sql: """
            INSERT INTO study_day (user_id, date, reviews) VALUES (?1, ?2, ?3)
            ON CONFLICT (user_id, date) DO UPDATE SET reviews = reviews + ?3
            """)
        for (key, reviews) in sums.days where reviews != 0 {
            try day.execute(arguments: [key.user, key.date, reviews])
        }
        let set = try db.cachedStatement(sql: """
            INSERT INTO set_stats (user_id, set_id, reviews, recalled) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (user_id, set_id) DO UPDATE SET reviews = reviews + ?3, recalled = recalled + ?4
            """)
        for (key, totals) in sums.sets where totals.reviews != 0 || totals.recalled != 0 {
            try set.execute(arguments: [key.user, key.setId, totals.reviews, totals.recalled])
        }
    }
}
