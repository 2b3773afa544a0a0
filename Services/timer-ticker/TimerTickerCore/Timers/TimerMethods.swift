import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// The `timers.*` methods. Each change is one write transaction: it reads the timer, records the
/// end of its run first if that end has passed (so a request never acts on a run that is over),
/// applies the status machine, writes the row and its event, and updates the engine after commit.
struct TimerMethods: Sendable {
    let database: ServiceDatabase
    let outbox: Outbox
    let sync: EngineSync
    let recorder: CompletionRecorder
    let wallClock: any WallClock
    let maximumActiveTimers: Int

    static func register(_ handlers: Handlers<TimerTickerService>) {
        handlers.handle(TimerTicker.createTimer) { service, request, context in try await service.timers.create(request, context) }
        handlers.handle(TimerTicker.pauseTimer) { service, request, context in try await service.timers.transition(.pause, request, context) }
        handlers.handle(TimerTicker.resumeTimer) { service, request, context in try await service.timers.transition(.resume, request, context) }
        handlers.handle(TimerTicker.stopTimer) { service, request, context in try await service.timers.transition(.stop, request, context) }
        handlers.handle(TimerTicker.restartTimer) { service, request, context in try await service.timers.transition(.restart, request, context) }
        handlers.handle(TimerTicker.duplicateTimer) { service, request, context in
            try await service.timers.transition(.duplicate, request, context)
        }
        handlers.handle(TimerTicker.deleteTimer) { service, request, context in
            _ = try await service.timers.transition(.delete, request, context)
            return Empty()
        }
        handlers.handle(TimerTicker.updateTimer) { service, request, context in try await service.timers.update(request, context) }
        handlers.handle(TimerTicker.getTimer) { service, request, context in try await service.timers.get(request, context) }
        handlers.handle(TimerTicker.listTimers) { service, request, context in try await service.timers.list(request, context) }
    }

    func create(_ request: CreateTimerRequest, _ context: RequestContext) async throws -> CountdownTimer {
        let user = try context.requireUser()
        return try await change(context, request) { db, nowMs in try create(db, request, user: user, nowMs: nowMs) }
    }

    func get(_ request: TimerRef, _ context: RequestContext) async throws -> CountdownTimer {
        let user = try context.requireUser()
        let nowMs = wallClock.now().unixMilliseconds
        guard let row = try await database.pool.read({ db in try TimerRow.fetch(db, id: request.id, user: user) }) else {
            throw Self.notFound(request.id)
        }
        return row.record(nowMs: nowMs)
    }

    func list(_ request: ListTimersRequest, _ context: RequestContext) async throws -> TimerList {
        let user = try context.requireUser()
        let limit = try Field.int(request.limit, "limit", in: 1...1000, default: 1000)
        let statuses = request.statuses ?? TimerStatus.allCases
        let nowMs = wallClock.now().unixMilliseconds
        let rows = try await database.pool.read { db in
            try TimerRow.fetchAll(db, sql: """
                SELECT * FROM timer WHERE user_id = ? AND status IN (SELECT value FROM json_each(?))
                ORDER BY created_ms, engine_key LIMIT ?
                """, arguments: [user, JSONValue.array(statuses.map { .string($0.rawValue) }).jsonText, limit])
        }
        return TimerList(timers: rows.map { $0.record(nowMs: nowMs) })
    }

    static func notFound(_ id: String) -> BusError { .notFound("timer '\(id)' not found") }

    /// Runs `body` in one write transaction under the request's idempotency key (bound to
    /// `request`), then wakes the outbox.
    private func change(
        _ context: RequestContext, _ request: some Encodable, _ body: @escaping @Sendable (Database, Int64) throws -> CountdownTimer
    ) async throws -> CountdownTimer {
        let user = try context.requireUser()
        let key = try Idempotency.Key(context.idempotencyKey, method: context.method, request: request)
        let result = try await database.pool.write { [wallClock] db in
            try Idempotency.once(db, user: user, key: key) {
                try body(db, wallClock.now().unixMilliseconds)
            }
        }
        outbox.notifyCommitted()
        return result
    }

    func transition(_ action: TimerAction, _ request: TimerRef, _ context: RequestContext) async throws -> CountdownTimer {
        let user = try context.requireUser()
        try await recordOverdueCompletion(id: request.id, user: user)
        return try await change(context, request) { db, nowMs in
            try apply(action, to: try current(db, id: request.id, user: user, nowMs: nowMs), db: db, nowMs: nowMs)
        }
    }

    /// `timers.update`: the edit screen. The status machine admits a paused or stopped timer only
    /// (neither is in the engine, so nothing is rescheduled); a changed duration resets the
    /// remaining time to it.
    func update(_ request: UpdateTimerRequest, _ context: RequestContext) async throws -> CountdownTimer {
        let user = try context.requireUser()
        let label = try request.label.map { value throws(BusError) in try TimerRules.sanitizeLabel(value) }
        try await recordOverdueCompletion(id: request.id, user: user)
        return try await change(context, request) { db, nowMs in
            var row = try current(db, id: request.id, user: user, nowMs: nowMs)
            _ = try TimerStateMachine.apply(.update, to: row.status)
            let duration = try TimerRules.duration(
                hours: request.hours ?? row.hours, minutes: request.minutes ?? row.minutes, seconds: request.seconds ?? row.seconds)
            let oldDurationMs = row.durationMs
            (row.hours, row.minutes, row.seconds) = (duration.hours, duration.minutes, duration.seconds)
            if row.durationMs != oldDurationMs { row.remainingMs = row.durationMs }
            row.label = label ?? row.label
            row.isSoundOn = request.isSoundOn ?? row.isSoundOn
            row.isVibrationOn = request.isVibrationOn ?? row.isVibrationOn
            row.updatedMs = nowMs
            try row.updateEditable(db)
            let record = row.record(nowMs: nowMs)
            try Outbox.append(db, TimerTicker.timerUpdated, record, user: row.userId)
            return record
        }
    }

    /// The timer as a request finds it inside its transaction: a run that is over though its
    /// completion is not recorded yet is recorded first (the engine follows the last row synced
    /// in the transaction).
    private func current(_ db: Database, id: String, user: String, nowMs: Int64) throws -> TimerRow {
        guard var row = try TimerRow.fetch(db, id: id, user: user) else { throw Self.notFound(id) }
        if row.hasRunOut(atMs: nowMs) {
            row = try recorder.complete(db, row, firedMs: nowMs)
            sync.syncAfterCommit(db, row)
        }
        return row
    }

    /// Records the completion of a run that is over but not recorded yet (the engine fires a
    /// moment later), in a transaction of its own: an action the status machine then refuses
    /// (pausing what is now completed) must not roll the completion back. The action's own
    /// transaction checks again, for a run that ends between the two.
    private func recordOverdueCompletion(id: String, user: String) async throws {
        // Almost always there is nothing to record: find that out without the write lock.
        let readAtMs = wallClock.now().unixMilliseconds
        guard try await database.pool.read({ db in try TimerRow.fetch(db, id: id, user: user)?.hasRunOut(atMs: readAtMs) ?? false }) else { return }
        let recorded = try await database.pool.write { [wallClock, recorder, sync] db -> Bool in
            let nowMs = wallClock.now().unixMilliseconds
            guard let row = try TimerRow.fetch(db, id: id, user: user), row.hasRunOut(atMs: nowMs) else { return false }
            sync.syncAfterCommit(db, try recorder.complete(db, row, firedMs: nowMs))
            return true
        }
        if recorded { outbox.notifyCommitted() }
    }

    private func apply(_ action: TimerAction, to current: TimerRow, db: Database, nowMs: Int64) throws -> CountdownTimer {
        var row = current
        let outcome = try TimerStateMachine.apply(action, to: row.status)
        switch outcome {
        case .removed:
            try db.execute(sql: "DELETE FROM timer WHERE engine_key = ?", arguments: [row.engineKey])
            try Outbox.append(db, TimerTicker.timerDeleted, TimerDeleted(timer: row.record(nowMs: nowMs), reason: .deleted), user: row.userId)
            sync.cancelAfterCommit(db, key: row.engineKey)
            return row.record(nowMs: nowMs)
        case .copied:
            try checkActiveLimit(db, user: row.userId)
            var copy = TimerRow(
                id: UUID().uuidString.lowercased(), userId: row.userId, label: row.label,
                duration: .init(hours: row.hours, minutes: row.minutes, seconds: row.seconds), isSoundOn: row.isSoundOn,
                isVibrationOn: row.isVibrationOn, endAction: row.endAction, presetId: row.presetId, nowMs: nowMs)
            try copy.insert(db)
            return try publish(copy, TimerTicker.timerCreated, db: db, nowMs: nowMs)
        case .becomes(let status):
            switch action {
            case .pause, .stop:
                if row.status == .running {
                    row.remainingMs = max(0, (row.endMs ?? nowMs) - nowMs)
                    row.endMs = nil
                }
            case .resume:
                row.endMs = nowMs + row.remainingMs
            case .restart:
                if row.status == .stopped || row.status == .completed { try checkActiveLimit(db, user: row.userId) }
                row.run += 1
                row.endMs = nowMs + row.durationMs
                row.remainingMs = row.durationMs
                row.pendingDeletionMs = nil
                row.firedMs = nil
            case .duplicate, .delete, .complete, .update:
                break
            }
            row.status = status
            row.updatedMs = nowMs
            try row.update(db)
            let topic = switch action {
            case .pause: TimerTicker.timerPaused
            case .resume: TimerTicker.timerResumed
            case .stop: TimerTicker.timerStopped
            default: TimerTicker.timerRestarted
            }
            return try publish(row, topic, db: db, nowMs: nowMs)
        }
    }

    private func create(_ db: Database, _ request: CreateTimerRequest, user: String, nowMs: Int64) throws -> CountdownTimer {
        var preset: Row?
        if let presetId = request.presetId {
            preset = try Row.fetchOne(db, sql: "SELECT * FROM preset WHERE id = ? AND user_id = ?", arguments: [presetId, user])
            guard preset != nil else { throw BusError.notFound("preset '\(presetId)' (field 'presetId') not found") }
        }
        let label = try TimerRules.sanitizeLabel(request.label ?? preset?["label"] ?? "")
        let duration = try TimerRules.duration(
            hours: request.hours ?? preset?["hours"] ?? 0, minutes: request.minutes ?? preset?["minutes"] ?? 0,
            seconds: request.seconds ?? preset?["seconds"] ?? 0)
        try checkActiveLimit(db, user: user)
        let endAction = request.endAction ?? (preset?["end_action"] as String?).flatMap(TimerEndAction.init(rawValue:)) ?? .discard
        var row = TimerRow(
            id: UUID().uuidString.lowercased(), userId: user, label: label, duration: duration,
            isSoundOn: request.isSoundOn ?? preset?["is_sound_on"] ?? true, isVibrationOn: request.isVibrationOn ?? preset?["is_vibration_on"] ?? true,
            endAction: endAction, presetId: request.presetId, nowMs: nowMs)
        try row.insert(db)
        return try publish(row, TimerTicker.timerCreated, db: db, nowMs: nowMs)
    }

    private func publish(_ row: TimerRow, _ topic: Topic<CountdownTimer>, db: Database, nowMs: Int64) throws -> CountdownTimer {
        let record = row.record(nowMs: nowMs)
        try Outbox.append(db, topic, record, user: row.userId)
        sync.syncAfterCommit(db, row)
        return record
    }

    /// Inside the write transaction, so the count and the change that follows are atomic.
    private func checkActiveLimit(_ db: Database, user: String) throws {
        let active = try TimerRow.activeCount(db, user: user)
        guard active < maximumActiveTimers else {
            throw BusError.resourceExhausted("at most \(maximumActiveTimers) timers may be running or paused at once per user; \(active) are")
        }
    }
}
