import Bus
import Contracts
import Foundation
import GRDB
import Storage
import Wire

/// Decides which reminders are due and publishes them through the outbox.
///
/// Policy (docs/services/scheduler.md):
/// - Each reminder has a local time in the user's IANA zone and fires once per local day at the
///   instant that wall time has that day (DST handled by ``Zone``). Its `reminderId`
///   (`<kind>:<subject>:<date>`) is stored in `reminder_sent` in the same transaction as the
///   event, so it is never sent twice.
/// - A reminder whose time passed while the scheduler was down is sent once on start, marked
///   `late`, if it is still relevant that local day (cards still due, task still not checked
///   in, test still not recorded); a reminder of an earlier local day is skipped.
/// - A reminder configured after its time of day (a task created at 10:00 with a 07:00
///   reminder) starts the next day.
/// - Relevance is decided in the transaction that stores the event: no cards due, a task
///   already checked in or not scheduled today, or a test not due means nothing is sent.
struct ReminderEngine {
    /// A reminder sent more than this after its time is marked late.
    static let lateAfterMs: Int64 = 60_000

    /// Runs everything due at `nowMs`. Returns how many events were appended and when to look
    /// again (the earliest upcoming reminder time).
    func run(_ db: Database, nowMs: Int64) throws -> (sent: Int, nextWakeMs: Int64) {
        var sent = 0
        var nextWake = nowMs + 3_600_000  // at least hourly: also covers time zone rule changes
        let users = try Row.fetchAll(db, sql: "SELECT \(UserSettings.columns) FROM settings WHERE reminders_enabled = 1").map(UserSettings.init(row:))
        for settings in users {
            let zone = settings.zone
            let today = zone.date(atMs: nowMs)
            /// Whether the reminder at `time` today is due now; otherwise notes when it will be.
            func due(_ time: LocalTime, configuredAt: Int64) -> Int64? {
                let fire = zone.instantMs(today, time)
                if fire > nowMs {
                    nextWake = min(nextWake, fire)
                    return nil
                }
                nextWake = min(nextWake, zone.instantMs(today.adding(days: 1), time))
                return fire >= configuredAt ? fire : nil
            }
            func timing(_ time: LocalTime, _ fire: Int64) -> ReminderTiming {
                ReminderTiming(localDate: today.description, localTime: time.description, timeZone: zone.identifier,
                               scheduledFor: Date(unixMilliseconds: fire), late: nowMs - fire > Self.lateAfterMs)
            }
            let user = settings.record.userId
            if let time = settings.record.reviewReminderTime.flatMap(LocalTime.init),
               let fire = due(time, configuredAt: settings.record.updatedAt.unixMilliseconds) {
                sent += try reviewDigest(db, user: user, zone: zone, today: today, timing: timing(time, fire), nowMs: nowMs)
            }
            for task in try remindedTasks(db, user: user) {
                guard let time = LocalTime(task.reminderTime), let fire = due(time, configuredAt: task.updatedAt) else { continue }
                sent += try habitReminder(db, task: task, zone: zone, today: today, timing: timing(time, fire), nowMs: nowMs)
            }
            if let time = settings.record.testReminderTime.flatMap(LocalTime.init),
               let fire = due(time, configuredAt: settings.record.updatedAt.unixMilliseconds) {
                for test in try TestBook.list(db, user: user) where test.createdAt.unixMilliseconds <= fire {
                    sent += try testReminder(db, test: test, today: today, timing: timing(time, fire), nowMs: nowMs)
                }
            }
        }
        try db.execute(sql: "DELETE FROM reminder_sent WHERE sent_at < ?", arguments: [nowMs - 7 * 86_400_000])
        return (sent, nextWake)
    }

    /// Claims a reminder id; false when it was already handled.
    private func claim(_ db: Database, _ reminderId: String, user: String, kind: String, timing: ReminderTiming, nowMs: Int64) throws -> Bool {
        try db.execute(sql: "INSERT OR IGNORE INTO reminder_sent (reminder_id, user_id, kind, local_date, sent_at) VALUES (?, ?, ?, ?, ?)",
                       arguments: [reminderId, user, kind, timing.localDate, nowMs])
        return db.changesCount > 0
    }

    private func reviewDigest(_ db: Database, user: String, zone: Zone, today: LocalDate, timing: ReminderTiming, nowMs: Int64) throws -> Int {
        let reminderId = "review.due:\(user):\(today)"
        guard try !handled(db, reminderId) else { return 0 }
        let (start, end) = zone.bounds(of: today)
        let perSet = try db.cachedStatement(sql: """
            SELECT COUNT(*), COALESCE(SUM(due_at < ?), 0), COALESCE(SUM(review_count = 0), 0)
            FROM card WHERE user_id = ? AND set_id IS ? AND due_at < ?
            """)
        var dueCount = 0, overdueCount = 0, newCount = 0
        for set in try DueIndex.sets(db, user: user) {
            guard let row = try Row.fetchOne(perSet, arguments: [start, user, set, end]) else { continue }
            dueCount += row[0]
            overdueCount += row[1]
            newCount += row[2]
        }
        // Nothing due: the day is handled all the same, so it is not counted again.
        guard try claim(db, reminderId, user: user, kind: "review", timing: timing, nowMs: nowMs), dueCount > 0 else { return 0 }
        let streak = try ReviewBook.streak(db, user: user, now: Date(unixMilliseconds: nowMs)).currentDays
        let (title, body) = Messages.reviewDigest(due: dueCount, streak: streak)
        try Outbox.append(db, Scheduler.reviewDue, ReviewDueEvent(
            reminderId: reminderId, userId: user, dueCount: dueCount, overdueCount: overdueCount, newCount: newCount,
            streakDays: streak, timing: timing, title: title, body: body), user: user)
        return 1
    }

    private struct RemindedTask {
        var id, userId, name, systemId, systemName, reminderTime: String
        var identity, cue: String?
        var weekdays: String?
        var createdAt, updatedAt: Int64
    }

    private func remindedTasks(_ db: Database, user: String) throws -> [RemindedTask] {
        try Row.fetchAll(db, sql: """
            SELECT t.*, s.name AS system_name, s.identity FROM habit_task t JOIN habit_system s ON s.id = t.system_id
            WHERE t.user_id = ? AND t.reminder_time IS NOT NULL ORDER BY t.created_at, t.id
            """, arguments: [user]).map { row in
            RemindedTask(id: row["id"], userId: row["user_id"], name: row["name"], systemId: row["system_id"], systemName: row["system_name"],
                         reminderTime: row["reminder_time"], identity: row["identity"], cue: row["cue"], weekdays: row["weekdays"],
                         createdAt: row["created_at"], updatedAt: row["updated_at"])
        }
    }

    private func habitReminder(_ db: Database, task: RemindedTask, zone: Zone, today: LocalDate, timing: ReminderTiming, nowMs: Int64) throws -> Int {
        let reminderId = "habit.due:\(task.id):\(today)"
        guard try !handled(db, reminderId) else { return 0 }
        let habitTask = HabitTask(id: task.id, userId: task.userId, systemId: task.systemId, name: task.name,
                                  frequency: HabitBook.frequency(stored: task.weekdays), laws: FourLaws(cue: task.cue), reminderTime: task.reminderTime,
                                  createdAt: Date(unixMilliseconds: task.createdAt), updatedAt: Date(unixMilliseconds: task.updatedAt))
        let stats = try HabitBook.taskStats(habitTask, db, zone: zone, today: today)
        let relevant = stats.scheduledToday && !stats.doneToday
        guard try claim(db, reminderId, user: task.userId, kind: "habit", timing: timing, nowMs: nowMs), relevant else { return 0 }
        let (title, body) = Messages.habitReminder(task: task.name, cue: task.cue, identity: task.identity)
        try Outbox.append(db, Scheduler.habitDue, HabitDueEvent(
            reminderId: reminderId, userId: task.userId, taskId: task.id, taskName: task.name, systemId: task.systemId, systemName: task.systemName,
            identity: task.identity, cue: task.cue, currentStreak: stats.currentStreak, timing: timing, title: title, body: body), user: task.userId)
        return 1
    }

    private func testReminder(_ db: Database, test: PerformanceTest, today: LocalDate, timing: ReminderTiming, nowMs: Int64) throws -> Int {
        guard let dueDate = LocalDate(test.dueDate), dueDate <= today, dueDate.days(to: today) % test.everyDays == 0 else { return 0 }
        let reminderId = "test.due:\(test.id):\(today)"
        guard try claim(db, reminderId, user: test.userId, kind: "test", timing: timing, nowMs: nowMs) else { return 0 }
        let (title, body) = Messages.testReminder(test: test.name, best: test.best, unit: test.unit)
        try Outbox.append(db, Scheduler.testDue, TestDueEvent(
            reminderId: reminderId, userId: test.userId, testId: test.id, testName: test.name, unit: test.unit, dueDate: test.dueDate,
            lastValue: test.entries.last?.value, lastDate: test.entries.last?.date, best: test.best, timing: timing, title: title, body: body),
            user: test.userId)
        return 1
    }

    private func handled(_ db: Database, _ reminderId: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM reminder_sent WHERE reminder_id = ?)", arguments: [reminderId]) ?? false
    }
}
