import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import SyncKit
import Wire

/// `sync.push` and `sync.pull` on the scheduler: the store's sync contract (``SyncEngine``) for
/// habit systems, tasks, check-ins, performance tests and entries.
enum SyncMethods {
    /// Of two edits stamped the same millisecond, the one the scheduler receives later wins.
    static let engine = SyncEngine<HabitSyncKind>(service: "scheduler", tieBreak: .laterArrival) { id, field throws(BusError) in
        try HabitID.check(id, field)
    }

    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.syncPush) { scheduler, request, context in
            try engine.check(request, now: scheduler.clock.now(), skew: scheduler.syncFutureSkew)
            return try await scheduler.writeHabits(context, request, device: request.deviceId) { changes in
                try UserSettings.ensure(changes.db, user: changes.user, now: changes.now)
                return try engine.apply(request) { change, field in try HabitSync.apply(change, field: field, changes) }
            }
        }
        handlers.handle(Scheduler.syncPull) { scheduler, request, context in
            try await scheduler.read(context) { db, user, _ in
                try engine.pull(request, db, user: user) { kind, id in try HabitRecords.current(kind, id, db, user: user) }
            }
        }
    }
}

/// One pushed habit change, applied if it wins (``SyncVersion``).
///
/// - A record's parent (a task's system, a check-in's task, a test's system, an entry's test)
///   must be the user's; one the user deleted makes the change lose (`superseded`, and the
///   record is deleted too): a system deleted on one device takes with it the tasks another
///   device made for it offline. A parent the scheduler never had is `5 NOT_FOUND`: push
///   parents first.
/// - A task has one check-in per local date: of two with different ids for the same day, the
///   later version stays and the other is deleted.
/// - An id another user has is `6 ALREADY_EXISTS`, as for a create through the API.
/// - A losing change is `superseded`, and the record's winning version is logged again so that
///   the device's next pull brings it.
enum HabitSync {
    static func apply(_ change: HabitSyncChange, field: String, _ changes: HabitChanges) throws -> SyncOutcome {
        let kind = change.kind, id = change.id
        let owner = try changes.owner(kind, id)
        if let owner, owner != changes.user { throw HabitChanges.taken(kind, id) }
        guard try changes.sync.wins(kind.rawValue, id, table: kind.table, at: change.updatedAt, deleted: change.deleted, SyncMethods.engine.tieBreak) else {
            // The winner goes to the end of the log: the device's next pull brings it, even if
            // it pulled it before making its own (older-stamped) change.
            try changes.sync.logChange(kind.rawValue, id)
            return .superseded
        }
        let at = Date(unixMilliseconds: change.updatedAt.unixMilliseconds)
        let exists = owner != nil
        if change.deleted {
            if exists { try changes.remove(kind, id, at: at) } else { try changes.sync.writeTombstone(kind.rawValue, id, at: at) }
            return .applied
        }
        let columns: Columns
        switch kind {
        case .system:
            let record = try SyncEngine<HabitSyncKind>.decode(HabitSystemCreate.self, change, field: field)
            columns = try HabitBook.systemColumns(name: record.name, identity: record.identity, category: record.category)
        case .task:
            let record = try SyncEngine<HabitSyncKind>.decode(HabitTaskCreate.self, change, field: field)
            guard let systemId = try parent(.system, record.systemId, "systemId", changes) else { return try lose(kind, id, exists: exists, at: at, changes) }
            columns = [("system_id", systemId)] + (try HabitBook.taskColumns(
                name: record.name, description: record.description, frequency: record.frequency, laws: record.laws, reminderTime: record.reminderTime))
        case .checkin:
            let record = try SyncEngine<HabitSyncKind>.decode(CheckInRequest.self, change, field: field)
            guard let taskId = try parent(.task, record.taskId, "taskId", changes) else { return try lose(kind, id, exists: exists, at: at, changes) }
            let date = try HabitBook.checkInDate(record.date, changes, latest: 1)
            // One check-in per task and day: the later version keeps the day.
            if let other = try String.fetchOne(changes.db, sql: "SELECT id FROM check_in WHERE task_id = ? AND date = ? AND id != ?",
                                               arguments: [taskId, date, id]) {
                let theirs = try changes.sync.current(kind.rawValue, other, table: kind.table)
                guard SyncVersion(at: at.unixMilliseconds, deleted: false, device: changes.device).wins(over: theirs, SyncMethods.engine.tieBreak)
                else { return try lose(kind, id, exists: exists, at: at, changes) }
                try changes.remove(.checkin, other, at: at)
            }
            columns = [("task_id", taskId), ("date", date), ("note", try HabitBook.note(record.note))]
        case .test:
            let record = try SyncEngine<HabitSyncKind>.decode(PerformanceTestCreate.self, change, field: field)
            var systemId: String?
            if let requested = record.systemId {
                guard let parent = try parent(.system, requested, "systemId", changes) else { return try lose(kind, id, exists: exists, at: at, changes) }
                systemId = parent
            }
            columns = [("system_id", systemId)] + (try TestBook.definitionColumns(
                name: record.name, unit: record.unit, higherIsBetter: record.higherIsBetter, everyDays: record.everyDays))
                + (exists ? [] : [("start_date", try TestBook.today(changes, at: at).description)])
        case .entry:
            let record = try SyncEngine<HabitSyncKind>.decode(TestEntryCreate.self, change, field: field)
            guard let testId = try parent(.test, record.testId, "testId", changes) else { return try lose(kind, id, exists: exists, at: at, changes) }
            columns = [("test_id", testId)] + (try TestBook.entryColumns(record, changes, latest: 1))
        }
        if exists { try changes.update(kind, id, columns, at: at) } else { try changes.insert(kind, id, columns, at: at) }
        return .applied
    }

    /// The user's parent record the change names (as kept), or nil when the user deleted it.
    /// - Throws: `NOT_FOUND` naming the field when the user never had it (or it is another user's).
    private static func parent(_ kind: HabitSyncKind, _ value: String, _ field: String, _ changes: HabitChanges) throws -> String? {
        let id = try HabitID.reference(value, field)
        if try changes.owner(kind, id) == changes.user { return id }
        if try SyncLog.tombstone(changes.db, user: changes.user, kind.rawValue, id) != nil { return nil }
        throw BusError.notFound("field '\(field)': \(kind.noun) \(id) not found")
    }

    /// A change that lost to its parent's delete or to another check-in of the same day: the
    /// record stays as it is (logged again, so the device pulls it) or, if new, is recorded as
    /// deleted, so the device that pushed it learns to drop it.
    private static func lose(_ kind: HabitSyncKind, _ id: String, exists: Bool, at: Date, _ changes: HabitChanges) throws -> SyncOutcome {
        if exists { try changes.sync.logChange(kind.rawValue, id) } else { try changes.sync.writeTombstone(kind.rawValue, id, at: at) }
        return .superseded
    }
}
