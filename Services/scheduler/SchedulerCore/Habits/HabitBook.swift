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

    static func createSystem(_ request: HabitSystemCreate, _ changes: HabitChanges) throws -> HabitSystem {
        try UserSettings.ensure(changes.db, user: changes.user, now: changes.now)
        let id = try changes.newID(.system, request.id)
        try changes.insert(.system, id, try systemColumns(name: request.name, identity: request.identity, category: request.category))
        return try systems(changes.db, user: changes.user, only: id)[0]
    }

    /// A system's checked editable fields.
    static func systemColumns(name: String, identity: String?, category: String?) throws(BusError) -> Columns {
        [("name", try Field.text(name, "name", maximum: maximumNameLength, trimming: true)),
         ("identity", try Field.optionalText(identity, "identity", maximum: maximumFieldLength, trimming: true)),
         ("category", try Field.optionalText(category, "category", maximum: maximumCategoryLength, trimming: true))]
    }

    static func updateSystem(_ request: HabitSystemUpdate, _ changes: HabitChanges) throws -> HabitSystem {
        let row = try requireSystem(request.systemId, changes.db, user: changes.user)
        let id: String = row["id"]
        try changes.update(.system, id, try systemColumns(name: request.name, identity: request.identity, category: request.category),
                           at: changes.nextUpdate(after: Date(unixMilliseconds: row["updated_at"])))
        return try systems(changes.db, user: changes.user, only: id)[0]
    }

    static func system(row: Row, tasks: [HabitTask]) -> HabitSystem {
        HabitSystem(id: row["id"], userId: row["user_id"], name: row["name"], identity: row["identity"], category: row["category"],
                    tasks: tasks, createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }

    static func systems(_ db: Database, user: String, only systemId: String? = nil) throws -> [HabitSystem] {
        let tasks = Dictionary(grouping: try Row.fetchAll(db, sql: "SELECT * FROM habit_task WHERE user_id = ? ORDER BY created_at, id", arguments: [user])
            .map(task(row:)), by: \.systemId)
        return try Row.fetchAll(db, sql: "SELECT * FROM habit_system WHERE user_id = ? ORDER BY created_at, id", arguments: [user])
            .filter { systemId == nil || $0["id"] == systemId }
            .map { row in system(row: row, tasks: tasks[row["id"]] ?? []) }
    }

    static func requireSystem(_ systemId: String, _ db: Database, user: String) throws -> Row {
        let systemId = try HabitID.reference(systemId, "systemId")
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM habit_system WHERE id = ? AND user_id = ?", arguments: [systemId, user]) else {
            throw BusError.notFound("habit system \(systemId) not found")
        }
        return row
    }

    /// Deletes a system with its tasks, their check-ins and its tests with their entries.
    static func deleteSystem(_ systemId: String, _ changes: HabitChanges) throws {
        try changes.remove(.system, try requireSystem(systemId, changes.db, user: changes.user)["id"])
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
        let taskId = try HabitID.reference(taskId, "taskId")
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM habit_task WHERE id = ? AND user_id = ?", arguments: [taskId, user]) else {
            throw BusError.notFound("habit task \(taskId) not found")
        }
        return task(row: row)
    }

    /// Validated editable fields of a task.
    static func taskColumns(
        name: String, description: String?, frequency: HabitFrequency, laws: FourLaws?, reminderTime: String?
    ) throws -> Columns {
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

    static func createTask(_ request: HabitTaskCreate, _ changes: HabitChanges) throws -> HabitTask {
        let systemId: String = try requireSystem(request.systemId, changes.db, user: changes.user)["id"]
        let columns = try taskColumns(
            name: request.name, description: request.description, frequency: request.frequency, laws: request.laws, reminderTime: request.reminderTime)
        let id = try changes.newID(.task, request.id)
        try changes.insert(.task, id, [("system_id", systemId)] + columns)
        return try requireTask(id, changes.db, user: changes.user)
    }

    static func updateTask(_ request: HabitTaskUpdate, _ changes: HabitChanges) throws -> HabitTask {
        let task = try requireTask(request.taskId, changes.db, user: changes.user)
        let columns = try taskColumns(
            name: request.name, description: request.description, frequency: request.frequency, laws: request.laws, reminderTime: request.reminderTime)
        try changes.update(.task, task.id, columns, at: changes.nextUpdate(after: task.updatedAt))
        return try requireTask(task.id, changes.db, user: changes.user)
    }

    /// Deletes a task with its check-ins.
    static func deleteTask(_ taskId: String, _ changes: HabitChanges) throws {
        try changes.remove(.task, try requireTask(taskId, changes.db, user: changes.user).id)
    }

    // MARK: Check-ins

    /// A check-in's local date: not after the user's today, or (for a device in another zone,
    /// through sync) not more than `latest` days after it.
    static func checkInDate(_ text: String, _ changes: HabitChanges, latest: Int = 0) throws -> String {
        let zone = try UserSettings.load(changes.db, user: changes.user, now: changes.now).zone
        let today = zone.date(atMs: changes.now.unixMilliseconds)
        let date = try LocalDate(text, field: "date")
        guard date <= today.adding(days: latest) else {
            throw Field.invalid("date", "must not be after the user's today (\(today) in \(zone.identifier))")
        }
        return date.description
    }

    /// A check-in's or entry's note: up to 1000 characters, trimmed.
    static func note(_ text: String?) throws(BusError) -> String? {
        try Field.optionalText(text, "note", maximum: 1000, trimming: true)
    }

    static func checkIn(_ request: CheckInRequest, _ changes: HabitChanges) throws -> CheckInResult {
        let db = changes.db
        let task = try requireTask(request.taskId, db, user: changes.user)
        let date = try checkInDate(request.date, changes)
        let note = try note(request.note)
        // A repeat for the same day (another device) updates the note: last write wins.
        if let existing = try Row.fetchOne(db, sql: "SELECT id, updated_at FROM check_in WHERE task_id = ? AND date = ?", arguments: [task.id, date]) {
            try changes.update(.checkin, existing["id"], [("note", note)], at: changes.nextUpdate(after: Date(unixMilliseconds: existing["updated_at"])))
        } else {
            try changes.insert(.checkin, try changes.newID(.checkin, request.id), [("task_id", task.id), ("date", date), ("note", note)])
        }
        let record = checkIn(row: try Row.fetchOne(db, sql: "SELECT * FROM check_in WHERE task_id = ? AND date = ?", arguments: [task.id, date])!)
        let zone = try UserSettings.load(db, user: changes.user, now: changes.now).zone
        let stats = try taskStats(task, db, zone: zone, today: zone.date(atMs: changes.now.unixMilliseconds))
        let identity: String? = try String.fetchOne(db, sql: "SELECT identity FROM habit_system WHERE id = ?", arguments: [task.systemId])
        return CheckInResult(checkIn: record, stats: stats, message: Messages.checkIn(taskName: task.name, streak: stats.currentStreak, identity: identity))
    }

    static func checkIn(row: Row) -> CheckIn {
        CheckIn(id: row["id"], userId: row["user_id"], taskId: row["task_id"], date: row["date"], note: row["note"],
                createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }

    static func undo(_ request: CheckInUndoRequest, _ changes: HabitChanges) throws -> HabitTaskStats {
        let task = try requireTask(request.taskId, changes.db, user: changes.user)
        let date = try LocalDate(request.date, field: "date")
        guard let id = try String.fetchOne(changes.db, sql: "SELECT id FROM check_in WHERE task_id = ? AND date = ?", arguments: [task.id, date.description])
        else { throw BusError.notFound("task \(task.id) has no check-in on \(date)") }
        try changes.remove(.checkin, id)
        let zone = try UserSettings.load(changes.db, user: changes.user, now: changes.now).zone
        return try taskStats(task, changes.db, zone: zone, today: zone.date(atMs: changes.now.unixMilliseconds))
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
        let systemId = try request.systemId.map { id in try requireSystem(id, db, user: user)["id"] as String }
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let today = zone.date(atMs: now.unixMilliseconds)
        func sum(_ rates: [CompletionRate]) -> CompletionRate {
            CompletionRate(scheduled: rates.reduce(0) { $0 + $1.scheduled }, completed: rates.reduce(0) { $0 + $1.completed })
        }
        let systems = try systems(db, user: user, only: systemId).map { system in
            let tasks = try system.tasks.map { try taskStats($0, db, zone: zone, today: today) }
            return HabitSystemStats(systemId: system.id, name: system.name, today: sum(tasks.map(\.today)),
                                    last7Days: sum(tasks.map(\.last7Days)), last30Days: sum(tasks.map(\.last30Days)), tasks: tasks)
        }
        let todayTotal = sum(systems.map(\.today))
        return HabitStats(date: today.description, timeZone: zone.identifier, systems: systems,
                          message: Messages.habitSummary(done: todayTotal.completed, scheduled: todayTotal.scheduled))
    }
}
