import Bus
import Contracts
import Foundation
import GRDB
import Storage
import SyncKit
import Wire

/// Where each synced habit kind lives and what belongs to it.
extension HabitSyncKind {
    var table: String {
        switch self {
        case .system: "habit_system"
        case .task: "habit_task"
        case .checkin: "check_in"
        case .test: "perf_test"
        case .entry: "perf_entry"
        }
    }

    /// What messages call it.
    var noun: String {
        switch self {
        case .system: "habit system"
        case .task: "habit task"
        case .checkin: "check-in"
        case .test: "performance test"
        case .entry: "test entry"
        }
    }

    /// The kinds whose records go with a record of this kind, by the column naming it.
    var children: [(kind: HabitSyncKind, column: String)] {
        switch self {
        case .system: [(.task, "system_id"), (.test, "system_id")]
        case .task: [(.checkin, "task_id")]
        case .test: [(.entry, "test_id")]
        case .checkin, .entry: []
        }
    }

    /// Every kind with its table, for the migration that logs existing rows.
    static var tables: [(kind: String, table: String)] { allCases.map { ($0.rawValue, $0.table) } }
}

/// The ids of habit records: UUIDs, which clients may choose (offline-first apps make records
/// before they reach the scheduler), kept in lower case: `UUID().uuidString` is upper case in
/// Swift, and the same UUID in either case names the same record.
enum HabitID {
    /// A UUID's text (any case) as kept: lower case.
    /// - Throws: `INVALID_ARGUMENT` naming the field for anything else.
    static func check(_ value: String, _ field: @autoclosure () -> String) throws(BusError) -> String {
        guard value.utf8.count == 36, let uuid = UUID(uuidString: value) else {
            throw Field.invalid(field(), "must be a UUID (8-4-4-4-12 hexadecimal digits)")
        }
        return uuid.uuidString.lowercased()
    }

    /// A reference to a habit record: a UUID in lower case, or (checked as any id) as given.
    static func reference(_ value: String, _ field: @autoclosure () -> String) throws(BusError) -> String {
        if value.utf8.count == 36, let uuid = UUID(uuidString: value) { return uuid.uuidString.lowercased() }
        return try IDField.check(value, field())
    }
}

/// A record's columns as written: `(column, value)`.
typealias Columns = [(String, (any DatabaseValueConvertible)?)]

/// The habit writes of one transaction for one user, through the API or `sync.push`. Every
/// insert, update and delete of a habit record goes through here, so that each also (in the
/// same transaction) logs the change for `sync.pull`, leaves a tombstone when it deletes, and
/// appends its `habit.<kind>.created|updated|deleted` event, user-scoped.
struct HabitChanges {
    /// The user, the transaction's time, who writes ("" for API calls, the device id for
    /// `sync.push`), the change log.
    let sync: SyncLog
    var db: Database { sync.db }
    var user: String { sync.user }
    var now: Date { sync.now }
    var device: String { sync.device }

    init(db: Database, user: String, now: Date, device: String = "") {
        sync = SyncLog(db: db, user: user, now: now, device: device)
    }

    /// The `updatedAt` of an API edit of a record stamped `previous` (never back in time).
    func nextUpdate(after previous: Date) -> Date { sync.nextUpdate(after: previous) }

    /// `6 ALREADY_EXISTS` for an id that is taken, in the same words whoever has it: nothing
    /// says whether the record is the caller's or another user's.
    static func taken(_ kind: HabitSyncKind, _ id: String) -> BusError {
        .alreadyExists("\(kind.noun) id '\(id)' is already taken: choose another UUID")
    }

    /// Who has the record `id` of `kind` (ids are unique across users), nil when nobody.
    func owner(_ kind: HabitSyncKind, _ id: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT user_id FROM \(kind.table) WHERE id = ?"), arguments: [id])
    }

    /// A new record's id: the client's UUID, else a new one.
    /// - Throws: `INVALID_ARGUMENT` for an id that is not a UUID, `ALREADY_EXISTS` for one taken.
    func newID(_ kind: HabitSyncKind, _ requested: String?) throws -> String {
        guard let requested else { return UUID().uuidString.lowercased() }
        let id = try HabitID.check(requested, "id")
        guard try owner(kind, id) == nil else { throw Self.taken(kind, id) }
        return id
    }

    // MARK: Writing

    /// Inserts the user's new record `id` with `columns`, stamped `at` (default now).
    func insert(_ kind: HabitSyncKind, _ id: String, _ columns: Columns, at: Date? = nil) throws {
        let at = (at ?? now).unixMilliseconds
        let all: Columns = [("id", id), ("user_id", user)] + columns + [("created_at", at), ("updated_at", at), ("device", device)]
        try db.execute(sql: "INSERT INTO \(kind.table) (\(all.map(\.0).joined(separator: ", "))) VALUES (\(all.map { _ in "?" }.joined(separator: ", ")))",
                       arguments: StatementArguments(all.map(\.1)))
        try sync.removeTombstone(kind.rawValue, id)
        try changed(kind, id, created: true)
    }

    /// Writes `columns` over the user's record `id`, stamped `at`.
    func update(_ kind: HabitSyncKind, _ id: String, _ columns: Columns, at: Date) throws {
        let all = columns + [("updated_at", at.unixMilliseconds), ("device", device)]
        try db.execute(sql: "UPDATE \(kind.table) SET \(all.map { "\($0.0) = ?" }.joined(separator: ", ")) WHERE id = ? AND user_id = ?",
                       arguments: StatementArguments(all.map(\.1) + [id, user]))
        guard db.changesCount == 1 else { throw BusError.notFound("\(kind.noun) \(id) not found") }
        try changed(kind, id, created: false)
    }

    /// Deletes the user's record `id` and, first, the records that go with it (a system's tasks
    /// and tests, their check-ins and entries), each leaving a tombstone at `at` (default now)
    /// and its `deleted` event.
    func remove(_ kind: HabitSyncKind, _ id: String, at: Date? = nil) throws {
        let at = at ?? now
        for (child, column) in kind.children {
            for childId in try String.fetchAll(db, sql: "SELECT id FROM \(child.table) WHERE user_id = ? AND \(column) = ?", arguments: [user, id]) {
                try remove(child, childId, at: at)
            }
        }
        try db.execute(sql: "DELETE FROM \(kind.table) WHERE id = ? AND user_id = ?", arguments: [id, user])
        guard db.changesCount == 1 else { throw BusError.notFound("\(kind.noun) \(id) not found") }
        try sync.writeTombstone(kind.rawValue, id, at: at)
        try Outbox.append(db, Scheduler.topics(of: kind).deleted,
                          HabitSyncChange(kind: kind, id: id, updatedAt: at, deleted: true, deviceId: device), user: user)
    }

    /// Logs a written record and appends its event: the record as `sync.pull` returns it.
    private func changed(_ kind: HabitSyncKind, _ id: String, created: Bool) throws {
        try sync.logChange(kind.rawValue, id)
        guard let change = try HabitRecords.current(kind, id, db, user: user) else { return }
        let topics = Scheduler.topics(of: kind)
        try Outbox.append(db, created ? topics.created : topics.updated, change, user: user)
    }
}

/// Habit records as sync and the `habit.*` events carry them.
enum HabitRecords {
    /// The user's record as a change, nil when it is not here. Children travel on their own:
    /// a system's `tasks` and a test's `entries` are empty.
    static func current(_ kind: HabitSyncKind, _ id: String, _ db: Database, user: String) throws -> HabitSyncChange? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM \(kind.table) WHERE id = ? AND user_id = ?"), arguments: [id, user])
        else { return nil }
        let record: any Encodable = switch kind {
        case .system: HabitBook.system(row: row, tasks: [])
        case .task: HabitBook.task(row: row)
        case .checkin: HabitBook.checkIn(row: row)
        case .test: try TestBook.test(row: row, db, withEntries: false)
        case .entry: TestBook.entry(row: row)
        }
        return HabitSyncChange(kind: kind, id: id, updatedAt: Date(unixMilliseconds: row["updated_at"]),
                               record: try JSONValue.parse(WireCoding.encode(record)), deviceId: row["device"])
    }
}
