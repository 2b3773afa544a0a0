import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// Performance tests (a measurable check of a system, every N days) and their entries. A
/// test's `updatedAt` versions its definition; entries are records of their own.
enum TestBook {
    static func create(_ request: PerformanceTestCreate, _ changes: HabitChanges) throws -> PerformanceTest {
        let systemId = try request.systemId.map { id in try HabitBook.requireSystem(id, changes.db, user: changes.user)["id"] as String }
        let definition = try definitionColumns(name: request.name, unit: request.unit, higherIsBetter: request.higherIsBetter, everyDays: request.everyDays)
        try UserSettings.ensure(changes.db, user: changes.user, now: changes.now)
        let id = try changes.newID(.test, request.id)
        try changes.insert(.test, id, [("system_id", systemId)] + definition + [("start_date", try today(changes).description)])
        return try require(id, changes.db, user: changes.user)
    }

    /// The checked fields of a test's definition.
    static func definitionColumns(name: String, unit: String, higherIsBetter: Bool, everyDays: Int) throws(BusError) -> Columns {
        [("name", try Field.text(name, "name", maximum: HabitBook.maximumNameLength, trimming: true)),
         ("unit", try Field.text(unit, "unit", maximum: 50, trimming: true)),
         ("higher_is_better", higherIsBetter),
         ("every_days", try Field.int(everyDays, "everyDays", in: 1...365))]
    }

    /// The user's local date at `at` (default the transaction's now).
    static func today(_ changes: HabitChanges, at: Date? = nil) throws -> LocalDate {
        try UserSettings.load(changes.db, user: changes.user, now: changes.now).zone.date(atMs: (at ?? changes.now).unixMilliseconds)
    }

    /// `tests.update`: replaces the definition; entries and the start date stay, so the due date
    /// follows the new `everyDays` from the last entry.
    static func update(_ request: PerformanceTestUpdate, _ changes: HabitChanges) throws -> PerformanceTest {
        let test = try require(request.testId, changes.db, user: changes.user)
        let systemId = try request.systemId.map { id in try HabitBook.requireSystem(id, changes.db, user: changes.user)["id"] as String }
        let definition = try definitionColumns(name: request.name, unit: request.unit, higherIsBetter: request.higherIsBetter, everyDays: request.everyDays)
        try changes.update(.test, test.id, [("system_id", systemId)] + definition, at: changes.nextUpdate(after: test.updatedAt))
        return try require(test.id, changes.db, user: changes.user)
    }

    /// `tests.entries.delete`: removes one entry; returns its test (best and due date follow).
    static func deleteEntry(_ request: TestEntryID, _ changes: HabitChanges) throws -> PerformanceTest {
        let entryId = try HabitID.reference(request.entryId, "entryId")
        guard let testId = try String.fetchOne(changes.db, sql: "SELECT test_id FROM perf_entry WHERE id = ? AND user_id = ?", arguments: [entryId, changes.user])
        else { throw BusError.notFound("test entry \(entryId) not found") }
        try changes.remove(.entry, entryId)
        return try require(testId, changes.db, user: changes.user)
    }

    /// An entry's checked date (default today; not after today, or `latest` days after it
    /// through sync), value and note.
    static func entryColumns(_ request: TestEntryCreate, _ changes: HabitChanges, latest: Int = 0) throws -> Columns {
        let zone = try UserSettings.load(changes.db, user: changes.user, now: changes.now).zone
        let today = zone.date(atMs: changes.now.unixMilliseconds)
        let date = try request.date.map { value throws(BusError) in try LocalDate(value, field: "date") } ?? today
        guard date <= today.adding(days: latest) else {
            throw Field.invalid("date", "must not be after the user's today (\(today) in \(zone.identifier))")
        }
        guard request.value.isFinite else { throw Field.invalid("value", "must be a finite number") }
        return [("date", date.description), ("value", request.value), ("note", try HabitBook.note(request.note))]
    }

    static func record(_ request: TestEntryCreate, _ changes: HabitChanges) throws -> PerformanceTest {
        let test = try require(request.testId, changes.db, user: changes.user)
        let columns = try entryColumns(request, changes)
        try changes.insert(.entry, try changes.newID(.entry, request.id), [("test_id", test.id)] + columns)
        return try require(test.id, changes.db, user: changes.user)
    }

    static func require(_ testId: String, _ db: Database, user: String) throws -> PerformanceTest {
        let testId = try HabitID.reference(testId, "testId")
        guard let test = try list(db, user: user, only: testId).first else { throw BusError.notFound("performance test \(testId) not found") }
        return test
    }

    /// Deletes a test with its entries.
    static func delete(_ testId: String, _ changes: HabitChanges) throws {
        try changes.remove(.test, try require(testId, changes.db, user: changes.user).id)
    }

    static func entry(row: Row) -> PerformanceTestEntry {
        PerformanceTestEntry(id: row["id"], userId: row["user_id"], testId: row["test_id"], date: row["date"], value: row["value"], note: row["note"],
                             createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }

    /// A test from its row, its due date and best from its entries (listed unless `withEntries` is false).
    static func test(row: Row, _ db: Database, withEntries: Bool = true) throws -> PerformanceTest {
        let id: String = row["id"]
        let entries = try Row.fetchAll(db, sql: "SELECT * FROM perf_entry WHERE test_id = ? ORDER BY date, created_at", arguments: [id]).map(entry(row:))
        let higherIsBetter: Bool = row["higher_is_better"]
        let everyDays: Int = row["every_days"]
        let start = LocalDate(row["start_date"] as String) ?? LocalDate(dayNumber: 0)
        let due = entries.last.flatMap { LocalDate($0.date) }.map { $0.adding(days: everyDays) } ?? start
        let values = entries.map(\.value)
        return PerformanceTest(id: id, userId: row["user_id"], systemId: row["system_id"], name: row["name"], unit: row["unit"],
                               higherIsBetter: higherIsBetter, everyDays: everyDays, dueDate: due.description,
                               best: higherIsBetter ? values.max() : values.min(), entries: withEntries ? entries : [],
                               createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }

    /// The user's tests (or one), each with entries oldest first and its next due date.
    static func list(_ db: Database, user: String, only testId: String? = nil) throws -> [PerformanceTest] {
        let filter = testId == nil ? "" : " AND id = ?"
        return try Row.fetchAll(db, sql: "SELECT * FROM perf_test WHERE user_id = ?\(filter) ORDER BY created_at, id",
                                arguments: StatementArguments([user] + (testId.map { [$0] } ?? [])))
            .map { row in try test(row: row, db) }
    }

    /// Tests due on or before the user's today.
    static func due(_ db: Database, user: String, now: Date) throws -> [PerformanceTest] {
        let today = try UserSettings.load(db, user: user, now: now).zone.date(atMs: now.unixMilliseconds)
        return try list(db, user: user).filter { (LocalDate($0.dueDate) ?? today) <= today }
    }
}
