import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// Habit systems, their tasks and check-ins, with streaks and completion rates. Every function
/// runs inside the caller's transaction; another user's records are `NOT_FOUND`.
enum HabitBook {
    static let maximumNameLength = 200
    static let maximumFieldLength = 500
    static let maximumDescriptionLength = 1000
    static let maximumCategoryLength = 100
    /// The longest range `habits.checkIns.list` and `habits.tasks.series` read, in days.
    static let maximumRangeDays = 366

    // MARK: Systems

    static func createSystem(_ request: HabitSystemCreate, _ db: Database, user: String, now: Date) throws -> HabitSystem {
        try UserSettings.ensure(db, user: user, now: now)
        let (name, identity, category) = try systemFields(name: request.name, identity: request.identity, category: request.category)
        let system = HabitSystem(
            id: UUID().uuidString.lowercased(), userId: user, name: name, identity: identity, category: category, tasks: [], createdAt: now, updatedAt: now)
        try db.execute(sql: """
            INSERT INTO habit_system (id, user_id, name, identity, category, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [system.id, user, system.name, system.identity, system.category, now.unixMilliseconds, now.unixMilliseconds])
        return system
    }

    /// A system's checked editable fields.
    private static func systemFields(name: String, identity: String?, category: String?) throws(BusError) -> (String, String?, String?) {
        (try Field.text(name, "name", maximum: maximumNameLength, trimming: true),
         try Field.optionalText(identity, "identity", maximum: maximumFieldLength, trimming: true),
         try Field.optionalText(category, "category", maximum: maximumCategoryLength, trimming: true))
    }

    static func updateSystem(_ request: HabitSystemUpdate, _ db: Database, user: String, now: Date) throws -> HabitSystem {
        _ = try requireSystem(request.systemId, db, user: user)
        let (name, identity, category) = try systemFields(name: request.name, identity: request.identity, category: request.category)
        try db.execute(sql: "UPDATE habit_system SET name = ?, identity = ?, category = ?, updated_at = ? WHERE id = ? AND user_id = ?",
                       arguments: [name, identity, category, now.unixMilliseconds, request.systemId, user])
        return try systems(db, user: user, only: request.systemId)[0]
    }

    static func systems(_ db: Database, user: String, only systemId: String? = nil) throws -> [HabitSystem] {
        let tasks = Dictionary(grouping: try Row.fetchAll(db, sql: "SELECT * FROM habit_task WHERE user_id = ? ORDER BY created_at, id", arguments: [user])
            .map(task(row:)), by: \.systemId)
        return try Row.fetchAll(db, sql: "SELECT * FROM habit_system WHERE user_id = ? ORDER BY created_at, id", arguments: [user])
            .filter { systemId == nil || $0["id"] == systemId }
            .map { row in
                let id: String = row["id"]
                return HabitSystem(id: id, userId: row["user_id"], name: row["name"], identity: row["identity"], category: row["category"],
                                   tasks: tasks[id] ?? [], createdAt: Date(unixMilliseconds: row["created_at"]),
                                   updatedAt: Date(unixMilliseconds: row["updated_at"]))
            }
    }

    static func requireSystem(_ systemId: String, _ db: Database, user: String) throws -> Row {
        let systemId = try IDField.check(systemId, "systemId")
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM habit_system WHERE id = ? AND user_id = ?", arguments: [systemId, user]) else {
            throw BusError.notFound("habit system \(systemId) not found")
        }
        return row
    }

    static func deleteSystem(_ systemId: String, _ db: Database, user: String) throws {
        _ = try requireSystem(systemId, db, user: user)
        try db.execute(sql: "DELETE FROM habit_system WHERE id = ? AND user_id = ?", arguments: [systemId, user])
    }

    // MARK: Tasks

    /// The stored form of a frequency: nil for daily, `1,3` for Monday and Wednesday.
    static func weekdays(_ frequency: HabitFrequency) throws(BusError) -> String? {
        switch frequency.kind {
        case .daily:
            guard frequency.weekdays?.isEmpty ?? true else {
                throw Field.invalid("frequency.weekdays", "must be absent when frequency.kind is daily")
            }
            return nil
        case .weekdays:
            let days = Set(frequency.weekdays ?? [])
            guard !days.isEmpty, days.allSatisfy({ (1...7).contains($0) }) else {
                throw Field.invalid("frequency.weekdays", "must list 1 to 7 ISO weekdays, each 1 (Monday) to 7 (Sunday) or a name mon … sun")
            }
            return days.sorted().map(String.init).joined(separator: ",")
        }
    }

    static func frequency(stored: String?) -> HabitFrequency {
        guard let stored else { return .daily }
        return .on(stored.split(separator: ",").compactMap { Int($0) })
    }

    static func task(row: Row) -> HabitTask {
        HabitTask(id: row["id"], userId: row["user_id"], systemId: row["system_id"], name: row["name"], frequency: frequency(stored: row["weekdays"]),
                  laws: FourLaws(cue: row["cue"], attractiveness: row["attractiveness"], ease: row["ease"], reward: row["reward"]),
                  reminderTime: row["reminder_time"], createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]),
                  description: row["description"])
    }

    static func requireTask(_ taskId: String, _ db: Database, user: String) throws -> HabitTask {
        let taskId = try IDField.check(taskId, "taskId")
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM habit_task WHERE id = ? AND user_id = ?", arguments: [taskId, user]) else {
            throw BusError.notFound("habit task \(taskId) not found")
        }
        return task(row: row)
    }

    /// Validated editable fields of a task.
    private static func fields(
        name: String, description: String?, frequency: HabitFrequency, laws: FourLaws?, reminderTime: String?
    ) throws -> [(String, (any DatabaseValueConvertible)?)] {
        let laws = laws ?? FourLaws()
        return [
            ("name", try Field.text(name, "name", maximum: maximumNameLength, trimming: true)),
            ("description", try Field.optionalText(description, "description", maximum: maximumDescriptionLength, trimming: true)),
            ("weekdays", try weekdays(frequency)),
            ("cue", try Field.optionalText(laws.cue, "laws.cue", maximum: maximumFieldLength, trimming: true)),
            ("attractiveness", try Field.optionalText(laws.attractiveness, "laws.attractiveness", maximum: maximumFieldLength, trimming: true)),
            ("ease", try Field.optionalText(laws.ease, "laws.ease", maximum: maximumFieldLength, trimming: true)),
            ("reward", try Field.optionalText(laws.reward, "laws.reward", maximum: maximumFieldLength, trimming: true)),
            ("reminder_time", try reminderTime.map { value throws(BusError) in try LocalTime(value, field: "reminderTime").description }),
        ]
    }

    static func createTask(_ request: HabitTaskCreate, _ db: Database, user: String, now: Date) throws -> HabitTask {
        _ = try requireSystem(request.systemId, db, user: user)
        let id = UUID().uuidString.lowercased()
        let values = try fields(
            name: request.name, description: request.description, frequency: request.frequency, laws: request.laws, reminderTime: request.reminderTime)
        let columns = ["id", "user_id", "system_id"] + values.map(\.0) + ["created_at", "updated_at"]
        let arguments: [(any DatabaseValueConvertible)?] = [id, user, request.systemId] + values.map(\.1) + [now.unixMilliseconds, now.unixMilliseconds]
        try db.execute(sql: "INSERT INTO habit_task (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
                       arguments: StatementArguments(arguments))
        return try requireTask(id, db, user: user)
    }

    static func updateTask(_ request: HabitTaskUpdate, _ db: Database, user: String, now: Date) throws -> HabitTask {
        _ = try requireTask(request.taskId, db, user: user)
        let values = try fields(
            name: request.name, description: request.description, frequency: request.frequency, laws: request.laws, reminderTime: request.reminderTime)
        try db.execute(sql: "UPDATE habit_task SET \(values.map { "\($0.0) = ?" }.joined(separator: ", ")), updated_at = ? WHERE id = ? AND user_id = ?",
                       arguments: StatementArguments(values.map(\.1) + [now.unixMilliseconds, request.taskId, user]))
        return try requireTask(request.taskId, db, user: user)
    }

    static func deleteTask(_ taskId: String, _ db: Database, user: String) throws {
        _ = try requireTask(taskId, db, user: user)
        try db.execute(sql: "DELETE FROM habit_task WHERE id = ? AND user_id = ?", arguments: [taskId, user])
    }

    // MARK: Check-ins

    static func checkIn(_ request: CheckInRequest, _ db: Database, user: String, now: Date) throws -> CheckInResult {
        let task = try requireTask(request.taskId, db, user: user)
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let today = zone.date(atMs: now.unixMilliseconds)
        let date = try LocalDate(request.date, field: "date")
        guard date <= today else { throw Field.invalid("date", "must not be after the user's today (\(today) in \(zone.identifier))") }
        let note = try Field.optionalText(request.note, "note", maximum: 1000, trimming: true)
        // A repeat for the same day (another device) updates the note: last write wins.
        try db.execute(sql: """
            INSERT INTO check_in (id, user_id, task_id, date, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (task_id, date) DO UPDATE SET note = excluded.note, updated_at = excluded.updated_at
            """, arguments: [UUID().uuidString.lowercased(), user, task.id, date.description, note, now.unixMilliseconds, now.unixMilliseconds])
        let record = checkIn(row: try Row.fetchOne(db, sql: "SELECT * FROM check_in WHERE task_id = ? AND date = ?", arguments: [task.id, date.description])!)
        let stats = try taskStats(task, db, zone: zone, today: today)
        let identity: String? = try String.fetchOne(db, sql: "SELECT identity FROM habit_system WHERE id = ?", arguments: [task.systemId])
        return CheckInResult(checkIn: record, stats: stats, message: Messages.checkIn(taskName: task.name, streak: stats.currentStreak, identity: identity))
    }

    static func checkIn(row: Row) -> CheckIn {
        CheckIn(id: row["id"], userId: row["user_id"], taskId: row["task_id"], date: row["date"], note: row["note"],
                createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }

    static func undo(_ request: CheckInUndoRequest, _ db: Database, user: String, now: Date) throws -> HabitTaskStats {
        let task = try requireTask(request.taskId, db, user: user)
        let date = try LocalDate(request.date, field: "date")
        try db.execute(sql: "DELETE FROM check_in WHERE task_id = ? AND date = ?", arguments: [task.id, date.description])
        guard db.changesCount > 0 else { throw BusError.notFound("task \(task.id) has no check-in on \(date)") }
        let zone = try UserSettings.load(db, user: user, now: now).zone
        return try taskStats(task, db, zone: zone, today: zone.date(atMs: now.unixMilliseconds))
    }

    // MARK: History

    /// The local dates a request's `from` and `to` name: `to` defaults to the user's today, `from`
    /// to 29 days before `to`; at most ``maximumRangeDays`` days, `from` not after `to`.
    static func range(from: String?, to: String?, today: LocalDate) throws(BusError) -> (from: LocalDate, to: LocalDate) {
        let end = try to.map { value throws(BusError) in try LocalDate(value, field: "to") } ?? today
        let start = try from.map { value throws(BusError) in try LocalDate(value, field: "from") } ?? end.adding(days: -29)
        guard start <= end else { throw Field.invalid("from", "must not be after 'to' (\(end))") }
        guard start.days(to: end) < maximumRangeDays else {
            throw Field.invalid("from", "must be at most \(maximumRangeDays) days before 'to' (from \(start) to \(end) is \(start.days(to: end) + 1))")
        }
        return (start, end)
    }

    /// `habits.checkIns.list`: the user's check-ins in a range of local dates, by date then task.
    static func listCheckIns(_ request: CheckInListRequest, _ db: Database, user: String, now: Date) throws -> CheckInList {
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let (from, to) = try range(from: request.from, to: request.to, today: zone.date(atMs: now.unixMilliseconds))
        var filter = ""
        var arguments: StatementArguments = [user, from.description, to.description]
        if let taskId = request.taskId {
            filter += " AND task_id = ?"
            arguments += [try requireTask(taskId, db, user: user).id]
        }
        if let systemId = request.systemId {
            filter += " AND task_id IN (SELECT id FROM habit_task WHERE system_id = ?)"
            arguments += [try requireSystem(systemId, db, user: user)["id"] as String]
        }
        let checkIns = try Row.fetchAll(db, sql: """
            SELECT * FROM check_in WHERE user_id = ? AND date BETWEEN ? AND ?\(filter) ORDER BY date, task_id
            """, arguments: arguments).map(checkIn(row:))
        return CheckInList(from: from.description, to: to.description, timeZone: zone.identifier, checkIns: checkIns)
    }

    /// `habits.tasks.series`: each local day of a range, scheduled and done, by the rules of the
    /// statistics (no scheduled day before the task existed or its first check-in).
    static func series(_ request: TaskSeriesRequest, _ db: Database, user: String, now: Date) throws -> TaskSeries {
        let task = try requireTask(request.taskId, db, user: user)
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let (from, to) = try range(from: request.from, to: request.to, today: zone.date(atMs: now.unixMilliseconds))
        let done = try checkInDates(task.id, db)
        let doneSet = Set(done)
        let firstDay = firstScheduledDay(task, zone: zone, done: done)
        let days = (0...from.days(to: to)).map { offset in
            let day = from.adding(days: offset)
            return TaskDay(date: day.description, weekday: ISOWeekday.names[day.isoWeekday - 1],
                           scheduled: day >= firstDay && isScheduled(task, on: day), done: doneSet.contains(day))
        }
        let scheduled = days.filter(\.scheduled)
        return TaskSeries(taskId: task.id, from: from.description, to: to.description, timeZone: zone.identifier, days: days,
                          completion: CompletionRate(scheduled: scheduled.count, completed: scheduled.filter(\.done).count))
    }

    // MARK: Statistics

    /// The first day a task counts as scheduled: the local day it was created, or its first
    /// check-in if earlier (entered for a day before).
    static func firstScheduledDay(_ task: HabitTask, zone: Zone, done: [LocalDate]) -> LocalDate {
        let created = zone.date(atMs: task.createdAt.unixMilliseconds)
        return min(created, done.first ?? created)
    }

    static func checkInDates(_ taskId: String, _ db: Database) throws -> [LocalDate] {
        try String.fetchAll(db, sql: "SELECT date FROM check_in WHERE task_id = ? ORDER BY date", arguments: [taskId]).compactMap(LocalDate.init)
    }

    static func isScheduled(_ task: HabitTask, on date: LocalDate) -> Bool {
        task.frequency.kind == .daily || (task.frequency.weekdays ?? []).contains(date.isoWeekday)
    }

    /// Streaks and completion of one task as of `today`. Windows end today and include it; days
    /// before the task existed (and before its first check-in) are not counted as scheduled.
    static func taskStats(_ task: HabitTask, _ db: Database, zone: Zone, today: LocalDate) throws -> HabitTaskStats {
        let done = try checkInDates(task.id, db)
        let doneSet = Set(done)
        let (current, best) = Streaks.scheduled(done, today: today) { isScheduled(task, on: $0) }
        let firstDay = firstScheduledDay(task, zone: zone, done: done)
        func rate(days: Int) -> CompletionRate {
            var scheduled = 0, completed = 0
            for offset in 0..<days {
                let day = today.adding(days: -offset)
                guard day >= firstDay, isScheduled(task, on: day) else { continue }
                scheduled += 1
                if doneSet.contains(day) { completed += 1 }
            }
            return CompletionRate(scheduled: scheduled, completed: completed)
        }
        return HabitTaskStats(taskId: task.id, name: task.name, currentStreak: current, bestStreak: best,
                              scheduledToday: isScheduled(task, on: today), doneToday: doneSet.contains(today),
                              today: rate(days: 1), last7Days: rate(days: 7), last30Days: rate(days: 30))
    }

    static func stats(_ request: HabitStatsRequest, _ db: Database, user: String, now: Date) throws -> HabitStats {
        if let systemId = request.systemId { _ = try requireSystem(systemId, db, user: user) }
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let today = zone.date(atMs: now.unixMilliseconds)
        func sum(_ rates: [CompletionRate]) -> CompletionRate {
            CompletionRate(scheduled: rates.reduce(0) { $0 + $1.scheduled }, completed: rates.reduce(0) { $0 + $1.completed })
        }
        let systems = try systems(db, user: user, only: request.systemId).map { system in
            let tasks = try system.tasks.map { try taskStats($0, db, zone: zone, today: today) }
            return HabitSystemStats(systemId: system.id, name: system.name, today: sum(tasks.map(\.today)),
                                    last7Days: sum(tasks.map(\.last7Days)), last30Days: sum(tasks.map(\.last30Days)), tasks: tasks)
        }
        let todayTotal = sum(systems.map(\.today))
        return HabitStats(date: today.description, timeZone: zone.identifier, systems: systems,
                          message: Messages.habitSummary(done: todayTotal.completed, scheduled: todayTotal.scheduled))
    }
}
