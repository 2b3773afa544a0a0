import Bus
import Contracts
import Foundation
import GRDB
import Logging
import Wire

extension StudySessionCreate: CreateRequest {}
extension StudySessionUpdate: UpdateRequest {}
extension StudyTaskCreate: CreateRequest {}
extension StudyTaskUpdate: UpdateRequest {}

/// Study sessions.
enum StudySessionRecords: RecordKind {
    static func make(_ request: StudySessionCreate, _ changes: Changes) throws -> StudySession {
        let session = StudySession(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            subjectId: try changes.requireReference(Subject.self, request.subjectId, field: "subjectId"),
            setId: try changes.requireReference(FlashcardSet.self, request.setId, field: "setId"),
            startedAt: request.startedAt.atStorePrecision, endedAt: request.endedAt?.atStorePrecision,
            cardsReviewed: try Field.int(request.cardsReviewed, "cardsReviewed", in: cardsRange, default: 0),
            createdAt: changes.now, updatedAt: changes.now)
        try checkTimes(session)
        return session
    }

    static func apply(_ request: StudySessionUpdate, to record: StudySession, _ changes: Changes) throws -> StudySession {
        var session = record
        if request.subjectId != nil { session.subjectId = try changes.requireReference(Subject.self, request.subjectId, field: "subjectId") }
        if request.setId != nil { session.setId = try changes.requireReference(FlashcardSet.self, request.setId, field: "setId") }
        if let startedAt = request.startedAt { session.startedAt = startedAt.atStorePrecision }
        if let endedAt = request.endedAt { session.endedAt = endedAt.atStorePrecision }
        if let cards = request.cardsReviewed { session.cardsReviewed = try Field.int(cards, "cardsReviewed", in: cardsRange) }
        try checkTimes(session)
        return session
    }

    static func query(_ request: StudySessionList) throws -> ListQuery {
        var query = ListQuery(orderBy: "started_at", descending: true)
        if let id = request.subjectId { try Field.id(id, "subjectId") }
        query.filter("subject_id", equals: request.subjectId)
        if let from = request.from { query.filter("started_at >= ?", from.unixMilliseconds) }
        if let to = request.to { query.filter("started_at < ?", to.unixMilliseconds) }
        return query
    }

    private static let cardsRange = 0...1_000_000

    private static func checkTimes(_ session: StudySession) throws(BusError) {
        if let endedAt = session.endedAt, endedAt < session.startedAt {
            throw Field.invalid("endedAt", "must not be before startedAt")
        }
    }
}

/// Tasks: done ones remember when.
enum StudyTaskRecords: RecordKind {
    static func make(_ request: StudyTaskCreate, _ changes: Changes) throws -> StudyTask {
        let isDone = request.isDone ?? false
        return StudyTask(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            title: try Field.text(request.title, "title", maximum: StoreLimits.titleLength),
            dueAt: request.dueAt?.atStorePrecision, isDone: isDone, doneAt: isDone ? changes.now : nil,
            subjectId: try changes.requireReference(Subject.self, request.subjectId, field: "subjectId"),
            materialId: try changes.requireReference(Material.self, request.materialId, field: "materialId"),
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: StudyTaskUpdate, to record: StudyTask, _ changes: Changes) throws -> StudyTask {
        var task = record
        if let title = request.title { task.title = try Field.text(title, "title", maximum: StoreLimits.titleLength) }
        if let dueAt = request.dueAt { task.dueAt = dueAt.atStorePrecision }
        if request.clearDueAt == true { task.dueAt = nil }
        if let isDone = request.isDone, isDone != task.isDone {
            task.isDone = isDone
            task.doneAt = isDone ? changes.now : nil
        }
        if request.subjectId != nil { task.subjectId = try changes.requireReference(Subject.self, request.subjectId, field: "subjectId") }
        if request.materialId != nil { task.materialId = try changes.requireReference(Material.self, request.materialId, field: "materialId") }
        return task
    }

    /// A sync edit of a task that stays done keeps when it was done.
    static func replace(_ existing: StudyTask, with request: StudyTaskCreate, _ changes: Changes) throws -> StudyTask {
        var request = request
        request.id = existing.id
        var task = try make(request, changes).keepingCreation(of: existing)
        if task.isDone && existing.isDone { task.doneAt = existing.doneAt }
        return task
    }

    static func query(_ request: StudyTaskList) throws -> ListQuery {
        var query = ListQuery(orderBy: [.init(expression: "coalesce(due_at, 9223372036854775807)", descending: false), .init(expression: "created_at", descending: false)])
        if let id = request.subjectId { try Field.id(id, "subjectId") }
        query.filter("is_done", equals: request.isDone)
        query.filter("subject_id", equals: request.subjectId)
        if let dueBefore = request.dueBefore { query.filter("due_at < ?", dueBefore.unixMilliseconds) }
        return query
    }
}

/// One calendar day in a time zone, as the Unix-millisecond range [start, end).
struct CalendarDay {
    let date: String
    let timeZone: TimeZone
    /// The zone as the request named it (Foundation calls UTC "GMT").
    let timeZoneName: String
    let start: Int64
    let end: Int64

    init(_ request: ProgressTodayRequest, now: Date) throws(BusError) {
        let zoneName = request.timeZone ?? "UTC"
        guard let timeZone = TimeZone(identifier: zoneName) else {
            throw Field.invalid("timeZone", "must be an IANA time zone such as Europe/Rome, got '\(zoneName)'")
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let components: DateComponents
        if let date = request.date {
            let parts = date.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            guard parts.count == 3, let year = parts[0], let month = parts[1], let day = parts[2],
                  date.count == 10, (1...12).contains(month), (1...31).contains(day)
            else { throw Field.invalid("date", "must be a day as YYYY-MM-DD, got '\(date)'") }
            components = DateComponents(year: year, month: month, day: day)
        } else {
            components = calendar.dateComponents([.year, .month, .day], from: now)
        }
        guard let start = calendar.date(from: components), let end = calendar.date(byAdding: .day, value: 1, to: start),
              calendar.component(.day, from: start) == components.day
        else { throw Field.invalid("date", "is not a day of the calendar") }
        self.date = String(format: "%04d-%02d-%02d", components.year!, components.month!, components.day!)
        self.timeZone = timeZone
        timeZoneName = zoneName
        self.start = start.unixMilliseconds
        self.end = end.unixMilliseconds
    }

    /// The reviews the scheduler recorded during the day, or nil (logged) if it does not answer
    /// within 2 s: the dashboard shows the rest rather than nothing.
    func reviewsRecorded(_ context: RequestContext) async -> Int? {
        let range = ReviewCountRequest(from: Date(unixMilliseconds: start), to: Date(unixMilliseconds: end))
        do throws(BusError) {
            return try await context.bus.call(Scheduler.reviewCount, range, options: context.downstreamOptions(timeout: .seconds(2))).reviews
        } catch {
            context.logger.warning("progress.today without the scheduler's review count", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// `progress.today` from the rows: sessions overlapping the day (the part within it, a
    /// running one up to now), tasks, materials and cards.
    func progress(_ db: Database, user: String, now: Int64) throws -> ProgressToday {
        let sessions = try Row.fetchOne(db, sql: """
            SELECT count(*) AS sessions, coalesce(sum(cards_reviewed), 0) AS cards,
                   coalesce(sum(max(0, min(?3, coalesce(ended_at, ?4)) - max(?2, started_at))), 0) AS ms
            FROM study_session
            WHERE user_id = ?1 AND started_at < ?3 AND coalesce(ended_at, ?4) > ?2
            """, arguments: [user, start, end, now])!
        let tasks = try Row.fetchOne(db, sql: """
            SELECT coalesce(sum(is_done AND done_at >= ?2 AND done_at < ?3), 0) AS done,
                   coalesce(sum(NOT is_done), 0) AS open,
                   coalesce(sum(NOT is_done AND due_at >= ?2 AND due_at < ?3), 0) AS due,
                   coalesce(sum(NOT is_done AND due_at < ?2), 0) AS overdue
            FROM task WHERE user_id = ?1
            """, arguments: [user, start, end])!
        let materials = try Int.fetchOne(db, sql: "SELECT count(*) FROM material WHERE user_id = ? AND created_at >= ? AND created_at < ?",
                                         arguments: [user, start, end]) ?? 0
        let cards = try Int.fetchOne(db, sql: "SELECT count(*) FROM flashcard WHERE user_id = ? AND created_at >= ? AND created_at < ?",
                                     arguments: [user, start, end]) ?? 0
        let milliseconds: Int64 = sessions["ms"]
        return ProgressToday(
            date: date, timeZone: timeZoneName, studyMinutes: (Double(milliseconds) / 60_000 * 100).rounded() / 100,
            sessions: sessions["sessions"], cardsReviewed: sessions["cards"], tasksDone: tasks["done"], tasksOpen: tasks["open"],
            tasksDueToday: tasks["due"], tasksOverdue: tasks["overdue"], materialsAdded: materials, flashcardsCreated: cards)
    }
}
