import Foundation
import Wire

// Payloads of the scheduler's performance-test methods (`tests.*`).

/// `tests.create`.
public struct PerformanceTestCreate: Codable, Sendable, Equatable {
    /// The new record's id, chosen by the client (offline-first apps): a UUID, in any case
    /// (kept in lower case). Absent: the scheduler makes one.
    public var id: String?
    /// The system it measures, optional.
    public var systemId: String?
    /// 1..200 characters.
    public var name: String
    /// e.g. `km`, `reps`, `minutes`; up to 50 characters.
    public var unit: String
    public var higherIsBetter: Bool
    /// 1..365.
    public var everyDays: Int
    public init(systemId: String? = nil, name: String, unit: String, higherIsBetter: Bool, everyDays: Int, id: String? = nil) {
        self.id = id
        self.systemId = systemId
        self.name = name
        self.unit = unit
        self.higherIsBetter = higherIsBetter
        self.everyDays = everyDays
    }
}

/// `tests.update`: replaces the definition (as `tests.create`; an absent `systemId` detaches it).
public struct PerformanceTestUpdate: Codable, Sendable, Equatable {
    public var testId: String
    public var systemId: String?
    /// 1..200 characters.
    public var name: String
    /// Up to 50 characters.
    public var unit: String
    public var higherIsBetter: Bool
    /// 1..365.
    public var everyDays: Int
    public init(testId: String, systemId: String? = nil, name: String, unit: String, higherIsBetter: Bool, everyDays: Int) {
        self.testId = testId
        self.systemId = systemId
        self.name = name
        self.unit = unit
        self.higherIsBetter = higherIsBetter
        self.everyDays = everyDays
    }
}

/// An entry id (`tests.entries.delete`).
public struct TestEntryID: Codable, Sendable, Equatable {
    public var entryId: String
    public init(entryId: String) { self.entryId = entryId }
}

/// A test id.
public struct PerformanceTestID: Codable, Sendable, Equatable {
    public var testId: String
    public init(testId: String) { self.testId = testId }
}

/// `tests.record`.
public struct TestEntryCreate: Codable, Sendable, Equatable {
    /// The new entry's id, chosen by the client: a UUID (kept in lower case). Absent: the
    /// scheduler makes one.
    public var id: String?
    public var testId: String
    /// A finite number.
    public var value: Double
    /// Local date `YYYY-MM-DD` (default today), not after today.
    public var date: String?
    public var note: String?
    public init(testId: String, value: Double, date: String? = nil, note: String? = nil, id: String? = nil) {
        self.id = id
        self.testId = testId
        self.value = value
        self.date = date
        self.note = note
    }
}

/// One test result.
public struct PerformanceTestEntry: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var testId: String
    public var date: String
    public var value: Double
    public var note: String?
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, testId: String, date: String, value: Double, note: String?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.testId = testId
        self.date = date
        self.value = value
        self.note = note
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A performance test with its entries (oldest first).
public struct PerformanceTest: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var systemId: String?
    public var name: String
    public var unit: String
    public var higherIsBetter: Bool
    public var everyDays: Int
    /// Local date it is next due: the last entry's date + everyDays, or the creation day.
    public var dueDate: String
    /// The best value so far, by `higherIsBetter`.
    public var best: Double?
    public var entries: [PerformanceTestEntry]
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, systemId: String?, name: String, unit: String, higherIsBetter: Bool, everyDays: Int,
                dueDate: String, best: Double?, entries: [PerformanceTestEntry], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.systemId = systemId
        self.name = name
        self.unit = unit
        self.higherIsBetter = higherIsBetter
        self.everyDays = everyDays
        self.dueDate = dueDate
        self.best = best
        self.entries = entries
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `tests.list` and `tests.due` response.
public struct PerformanceTestList: Codable, Sendable, Equatable {
    public var tests: [PerformanceTest]
    public init(tests: [PerformanceTest]) { self.tests = tests }
}
