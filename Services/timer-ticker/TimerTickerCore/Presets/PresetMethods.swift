import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// The `presets.*` methods: favourites to start timers from, at most
/// ``TimerLimits/maximumPresets`` per user, with the same field rules as timers.
struct PresetMethods: Sendable {
    let database: ServiceDatabase
    let wallClock: any WallClock

    static func register(_ handlers: Handlers<TimerTickerService>) {
        handlers.handle(TimerTicker.createPreset) { service, request, context in try await service.presets.create(request, context) }
        handlers.handle(TimerTicker.presetFromTimer) { service, request, context in try await service.presets.fromTimer(request, context) }
        handlers.handle(TimerTicker.updatePreset) { service, request, context in try await service.presets.update(request, context) }
        handlers.handle(TimerTicker.deletePreset) { service, request, context in
            try await service.presets.delete(request, context)
            return Empty()
        }
        handlers.handle(TimerTicker.listPresets) { service, _, context in try await service.presets.list(context) }
    }

    func create(_ request: CreatePresetRequest, _ context: RequestContext) async throws -> TimerPreset {
        let user = try context.requireUser()
        let label = try TimerRules.sanitizeLabel(request.label)
        let duration = try TimerRules.duration(hours: request.hours, minutes: request.minutes, seconds: request.seconds)
        let nowMs = wallClock.now().unixMilliseconds
        let preset = TimerPreset(
            id: UUID().uuidString.lowercased(), userId: user, label: label, hours: duration.hours, minutes: duration.minutes,
            seconds: duration.seconds, isSoundOn: request.isSoundOn ?? true, isVibrationOn: request.isVibrationOn ?? true,
            endAction: request.endAction ?? .discard, createdAt: Date(unixMilliseconds: nowMs), updatedAt: Date(unixMilliseconds: nowMs))
        return try await insert(context, request, user: user) { _, _ in preset }
    }

    /// `presets.fromTimer`: a new preset with the timer's label, duration, flags and end action,
    /// read in the transaction that inserts it. The timer is unchanged.
    func fromTimer(_ request: PresetFromTimerRequest, _ context: RequestContext) async throws -> TimerPreset {
        let user = try context.requireUser()
        return try await insert(context, request, user: user) { db, nowMs in
            guard let timer = try TimerRow.fetch(db, id: request.timerId, user: user) else {
                throw BusError.notFound("timer '\(request.timerId)' (field 'timerId') not found")
            }
            return TimerPreset(
                id: UUID().uuidString.lowercased(), userId: user, label: timer.label, hours: timer.hours, minutes: timer.minutes,
                seconds: timer.seconds, isSoundOn: timer.isSoundOn, isVibrationOn: timer.isVibrationOn, endAction: timer.endAction,
                createdAt: Date(unixMilliseconds: nowMs), updatedAt: Date(unixMilliseconds: nowMs))
        }
    }

    /// Inserts the preset `make` builds, in one write transaction under the request's idempotency
    /// key, refusing one beyond ``TimerLimits/maximumPresets``.
    private func insert(
        _ context: RequestContext, _ request: some Encodable, user: String, _ make: @escaping @Sendable (Database, Int64) throws -> TimerPreset
    ) async throws -> TimerPreset {
        let key = try Idempotency.Key(context.idempotencyKey, method: context.method, request: request)
        return try await database.pool.write { [wallClock] db in
            try Idempotency.once(db, user: user, key: key) {
                let preset = try make(db, wallClock.now().unixMilliseconds)
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM preset WHERE user_id = ?", arguments: [user]) ?? 0
                guard count < TimerLimits.maximumPresets else {
                    throw BusError.resourceExhausted("at most \(TimerLimits.maximumPresets) presets per user")
                }
                try Self.save(preset, db, insert: true)
                return preset
            }
        }
    }

    func update(_ request: UpdatePresetRequest, _ context: RequestContext) async throws -> TimerPreset {
        let user = try context.requireUser()
        let nowMs = wallClock.now().unixMilliseconds
        return try await database.pool.write { db in
            guard var preset = try Self.fetch(db, id: request.id, user: user) else { throw Self.notFound(request.id) }
            if let label = request.label { preset.label = try TimerRules.sanitizeLabel(label) }
            let duration = try TimerRules.duration(
                hours: request.hours ?? preset.hours, minutes: request.minutes ?? preset.minutes, seconds: request.seconds ?? preset.seconds)
            preset.hours = duration.hours
            preset.minutes = duration.minutes
            preset.seconds = duration.seconds
            preset.isSoundOn = request.isSoundOn ?? preset.isSoundOn
            preset.isVibrationOn = request.isVibrationOn ?? preset.isVibrationOn
            preset.endAction = request.endAction ?? preset.endAction
            preset.updatedAt = Date(unixMilliseconds: nowMs)
            try Self.save(preset, db, insert: false)
            return preset
        }
    }

    func delete(_ request: PresetRef, _ context: RequestContext) async throws {
        let user = try context.requireUser()
        let deleted = try await database.pool.write { db in
            try db.execute(sql: "DELETE FROM preset WHERE id = ? AND user_id = ?", arguments: [request.id, user])
            return db.changesCount
        }
        guard deleted > 0 else { throw Self.notFound(request.id) }
    }

    func list(_ context: RequestContext) async throws -> PresetList {
        let user = try context.requireUser()
        return PresetList(presets: try await database.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM preset WHERE user_id = ? ORDER BY created_ms, id", arguments: [user]).map(Self.preset)
        })
    }

    private static func notFound(_ id: String) -> BusError { .notFound("preset '\(id)' not found") }

    private static func fetch(_ db: Database, id: String, user: String) throws -> TimerPreset? {
        try Row.fetchOne(db, sql: "SELECT * FROM preset WHERE id = ? AND user_id = ?", arguments: [id, user]).map(preset)
    }

    private static func preset(_ row: Row) -> TimerPreset {
        TimerPreset(
            id: row["id"], userId: row["user_id"], label: row["label"], hours: row["hours"], minutes: row["minutes"], seconds: row["seconds"],
            isSoundOn: row["is_sound_on"], isVibrationOn: row["is_vibration_on"],
            endAction: TimerEndAction(rawValue: row["end_action"]) ?? .discard,
            createdAt: Date(unixMilliseconds: row["created_ms"]), updatedAt: Date(unixMilliseconds: row["updated_ms"]))
    }

    private static func save(_ preset: TimerPreset, _ db: Database, insert: Bool) throws {
        let arguments: StatementArguments = [
            preset.label, preset.hours, preset.minutes, preset.seconds, preset.isSoundOn, preset.isVibrationOn, preset.endAction.rawValue,
            preset.updatedAt.unixMilliseconds, preset.id, preset.userId,
        ]
        if insert {
            try db.execute(sql: """
                INSERT INTO preset (label, hours, minutes, seconds, is_sound_on, is_vibration_on, end_action, updated_ms, id, user_id, created_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: arguments + [preset.createdAt.unixMilliseconds])
        } else {
            try db.execute(sql: """
                UPDATE preset SET label = ?, hours = ?, minutes = ?, seconds = ?, is_sound_on = ?, is_vibration_on = ?, end_action = ?, updated_ms = ?
                WHERE id = ? AND user_id = ?
                """, arguments: arguments)
        }
    }
}
