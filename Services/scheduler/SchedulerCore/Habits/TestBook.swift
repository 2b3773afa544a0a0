import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// Performance tests (a measurable check of a system, every N days) and their entries.
enum TestBook {
    static func create(_ request: PerformanceTestCreate, _ db: Database, user: String, now: Date) throws -> PerformanceTest {
        let definition = try definition(systemId: request.systemId, name: request.name, unit: request.unit, everyDays: request.everyDays, db, user: user)
        try UserSettings.ensure(db, user: user, now: now)
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let id = UUID().uuidString.lowercased()
        try db.execute(sql: """
            INSERT INTO perf_test (id, user_id, system_id, name, unit, higher_is_better, every_days, start_date, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [id, user, definition.systemId, definition.name, definition.unit, request.higherIsBetter, definition.everyDays,
                             zone.date(atMs: now.unixMilliseconds).description, now.unixMilliseconds, now.unixMilliseconds])
        return try require(id, db, user: user)
    }

    /// The checked fields of a test's definition (its system must be the user's).
    private static func definition(
        systemId: String?, name: String, unit: String, everyDays: Int, _ db: Database, user: String
    ) throws -> (systemId: String?, name: String, unit: String, everyDays: Int) {
        if let systemId { _ = try HabitBook.requireSystem(systemId, db, user: user) }
        return (systemId, try Field.text(name, "name", maximum: HabitBook.maximumNameLength, trimming: true),
                try Field.text(unit, "unit", maximum: 50, trimming: true), try Field.int(everyDays, "everyDays", in: 1...365))
    }

    /// `tests.update`: replaces the definition; entries and the start date stay, so the due date
    /// follows the new `everyDays` from the last entry.
    static func update(_ request: PerformanceTestUpdate, _ db: Database, user: String, now: Date) throws -> PerformanceTest {
        let test = try require(request.testId, db, user: user)
        let definition = try definition(systemId: request.systemId, name: request.name, unit: request.unit, everyDays: request.everyDays, db, user: user)
        try db.execute(sql: """
            UPDATE perf_test SET system_id = ?, name = ?, unit = ?, higher_is_better = ?, every_days = ?, updated_at = ? WHERE id = ?
            """, arguments: [definition.systemId, definition.name, definition.unit, request.higherIsBetter, definition.everyDays,
                             now.unixMilliseconds, test.id])
        return try require(test.id, db, user: user)
    }

    /// `tests.entries.delete`: removes one entry; returns its test (best and due date follow).
    static func deleteEntry(_ request: TestEntryID, _ db: Database, user: String, now: Date) throws -> PerformanceTest {
        let entryId = try IDField.check(request.entryId, "entryId")
        guard let testId = try String.fetchOne(db, sql: "SELECT test_id FROM perf_entry WHERE id = ? AND user_id = ?", arguments: [entryId, user]) else {
            throw BusError.notFound("test entry \(entryId) not found")
        }
        try db.execute(sql: "DELETE FROM perf_entry WHERE id = ?", arguments: [entryId])
        try db.execute(sql: "UPDATE perf_test SET updated_at = ? WHERE id = ?", arguments: [now.unixMilliseconds, testId])
        return try require(testId, db, user: user)
    }

    static func record(_ request: TestEntryCreate, _ db: Database, user: String, now: Date) throws -> PerformanceTest {
        let test = try require(request.testId, db, user: user)
        let zone = try UserSettings.load(db, user: user, now: now).zone
        let today = zone.date(atMs: now.unixMilliseconds)
        let date = try request.date.map { value throws(BusError) in try LocalDate(value, field: "date") } ?? today
        guard date <= today else { throw Field.invalid("date", "must not be after the user's today (\(today) in \(zone.identifier))") }
        guard request.value.isFinite else { throw Field.invalid("value", "must be a finite number") }
        try db.execute(sql: """
            INSERT INTO perf_entry (id, user_id, test_id, date, value, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [UUID().uuidString.lowercased(), user, test.id, date.description, request.value,
                             try Field.optionalText(request.note, "note", maximum: 1000, trimming: true), now.unixMilliseconds, now.unixMilliseconds])
        try db.execute(sql: "UPDATE perf_test SET updated_at = ? WHERE id = ?", arguments: [now.unixMilliseconds, test.id])
        return try require(test.id, db, user: user)
    }

    static func require(_ testId: String, _ db: Database, user: String) throws -> PerformanceTest {
        let testId = try IDField.check(testId, "testId")
        guard let test = try list(db, user: user, only: testId).first else { throw BusError.notFound("performance test \(testId) not found") }
        return test
    }

    static func delete(_ testId: String, _ db: Database, user: String) throws {
        let test = try require(testId, db, user: user)
        try db.execute(sql: "DELETE FROM perf_test WHERE id = ?", arguments: [test.id])
    }

    /// The user's tests (or one), each with entries oldest first and its next due date.
    static func list(_ db: Database, user: String, only testId: String? = nil) throws -> [PerformanceTest] {
        let filter = testId == nil ? "" : " AND id = ?"
        let tests = try Row.fetchAll(db, sql: "SELECT * FROM perf_test WHERE user_id = ?\(filter) ORDER BY created_at, id",
                                     arguments: StatementArguments([user] + (testId.map { [$0] } ?? [])))
        return try tests.map { row in
            let id: String = row["id"]
            let entries = try Row.fetchAll(db, sql: "SELECT * FROM perf_entry WHERE test_id = ? ORDER BY date, created_at", arguments: [id]).map { entry in
                PerformanceTestEntry(id: entry["id"], userId: entry["user_id"], testId: id, date: entry["date"], value: entry["value"], note: entry["note"],
                                     createdAt: Date(unixMilliseconds: entry["created_at"]), updatedAt: Date(unixMilliseconds: entry["updated_at"]))
            }
            let higherIsBetter: Bool = row["higher_is_better"]
            let everyDays: Int = row["every_days"]
            let start = LocalDate(row["start_date"] as String) ?? LocalDate(dayNumber: 0)
            let due = entries.last.flatMap { LocalDate($0.date) }.map { $0.adding(days: everyDays) } ?? start
            let values = entries.map(\.value)
            return PerformanceTest(id: id, userId: row["user_id"], systemId: row["system_id"], name: row["name"], unit: row["unit"],
                                   higherIsBetter: higherIsBetter, everyDays: everyDays, dueDate: due.description,
                                   best: higherIsBetter ? values.max() : values.min(), entries: entries,
                                   createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
        }
    }

    /// Tests due on or before the user's today.
    static func due(_ db: Database, user: String, now: Date) throws -> [PerformanceTest] {
        let today = try UserSettings.load(db, user: user, now: now).zone.date(atMs: now.unixMilliseconds)
        return try list(db, user: user).filter { (LocalDate($0.dueDate) ?? today) <= today }
    }
}
