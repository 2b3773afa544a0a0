import Contracts
import Foundation
import GRDB
import Storage
import Wire

/// `sync.push` and `sync.pull` over a service's ``SyncLog``: the checks of a push, its changes
/// applied in order with errors naming the change, and pulls paged by a cursor over the change
/// log. The service says how to apply one change and how to read one record.
public struct SyncEngine<Kind: WireEnum & Hashable>: Sendable {
    public typealias Change = SyncChangeOf<Kind>

    /// What messages call the service's clock: `the store's clock`.
    public let service: String
    public let tieBreak: SyncTieBreak
    /// Checks a pushed id and returns it as the service keeps it (`changes[3].id`).
    private let checkID: @Sendable (String, String) throws(BusError) -> String

    /// Changes per push.
    public static var maximumChanges: Int { 500 }
    /// Changes per pull: 1…500, default 200.
    public static var maximumPageSize: Int { 500 }
    public static var defaultPageSize: Int { 200 }
    /// A device id's characters.
    public static var deviceIDLength: Int { 64 }

    public init(service: String, tieBreak: SyncTieBreak, checkID: @escaping @Sendable (String, String) throws(BusError) -> String) {
        self.service = service
        self.tieBreak = tieBreak
        self.checkID = checkID
    }

    // MARK: Push

    /// Checks a push before its transaction: the device id, the number of changes, and that no
    /// change is stamped more than `skew` after `now`. Last write wins, so such a change would
    /// win over every edit until the clocks reach it, and one stamped near the wire's last date
    /// would leave no later time for the next edit.
    /// - Throws: `INVALID_ARGUMENT` naming the field (and the change and its record).
    public func check(_ request: SyncPushRequestOf<Kind>, now: Date, skew: Duration) throws(BusError) {
        try Field.text(request.deviceId, "deviceId", maximum: Self.deviceIDLength)
        try Field.count(request.changes, "changes", in: 0...Self.maximumChanges)
        let latest = now.addingTimeInterval(TimeInterval(skew.components.seconds))
        for (index, change) in request.changes.enumerated() where change.updatedAt > latest {
            _ = try checkID(change.id, "changes[\(index)].id")
            throw Field.invalid(
                "changes[\(index)].updatedAt",
                "of \(change.kind.rawValue) '\(change.id)' must not be more than \(skew.components.seconds) seconds after the \(service)'s clock "
                    + "(\(ISO8601.format(now))); got \(ISO8601.format(change.updatedAt))")
        }
    }

    /// Applies a push's changes in order, inside the caller's transaction: `apply` gets each
    /// change (its id checked and as the service keeps it) and the change's field name
    /// (`changes[3]`). An error fails the push, named after its change (`changes[3]: …`).
    public func apply(_ request: SyncPushRequestOf<Kind>, _ apply: (Change, String) throws -> SyncOutcome) throws -> SyncPushResponseOf<Kind> {
        var results: [SyncPushResultOf<Kind>] = []
        results.reserveCapacity(request.changes.count)
        for (index, change) in request.changes.enumerated() {
            let field = "changes[\(index)]"
            do {
                var change = change
                change.id = try checkID(change.id, "\(field).id")
                results.append(SyncPushResultOf(kind: change.kind, id: change.id, outcome: try apply(change, field)))
            } catch let error as BusError where !error.message.hasPrefix(field) {
                throw BusError(error.code, "\(field): \(error.message)", details: error.details)
            }
        }
        return SyncPushResponseOf(results: results)
    }

    /// A pushed change's record as `T` (the kind's create payload), with the change's `id`.
    /// - Throws: `INVALID_ARGUMENT` naming `<field>.record` when it is absent or does not decode.
    public static func decode<T: Decodable>(_ type: T.Type, _ change: Change, field: String) throws -> T {
        guard case .object(var object)? = change.record else {
            throw Field.invalid("\(field).record", "must be the record's fields as an object unless 'deleted' is true")
        }
        object["id"] = .string(change.id)
        do {
            return try WireCoding.decode(T.self, from: JSONValue.object(object).jsonData)
        } catch {
            throw BusError.invalidArgument("\(field).record: \(DecodingFailure.describe(error))")
        }
    }

    // MARK: Pull

    /// Every change of the user's records after the request's cursor, each record once in its
    /// latest state (`current` reads a record that exists; otherwise its tombstone is returned).
    /// - Throws: `INVALID_ARGUMENT` for a bad limit or a cursor this list did not return.
    public func pull(
        _ request: SyncPullRequestOf<Kind>, _ db: Database, user: String, current: (Kind, String) throws -> Change?
    ) throws -> SyncPullResponseOf<Kind> {
        let limit = try Field.int(request.limit, "limit", in: 1...Self.maximumPageSize, default: Self.defaultPageSize)
        let after = try request.cursor.map { cursor throws(BusError) in
            Int64.fromDatabaseValue(try PageCursor.decode(cursor, list: "sync", keyCount: 1)[0]) ?? 0
        } ?? 0
        var sql = "SELECT seq, kind, record_id FROM sync_change WHERE user_id = ? AND seq > ?"
        var arguments: [any DatabaseValueConvertible] = [user, after]
        if let kinds = request.kinds, !kinds.isEmpty {
            sql += " AND kind IN (\(kinds.map { _ in "?" }.joined(separator: ", ")))"
            arguments.append(contentsOf: kinds.map(\.rawValue))
        }
        let rows = try Row.fetchAll(db, sql: sql + " ORDER BY seq LIMIT \(limit + 1)", arguments: StatementArguments(arguments))
        var changes: [Change] = []
        var last = after
        for row in rows.prefix(limit) {
            last = row["seq"]
            guard let kind = Kind(rawValue: row["kind"]) else { continue }
            let id: String = row["record_id"]
            if let change = try current(kind, id) {
                changes.append(change)
            } else if let tombstone = try SyncLog.tombstone(db, user: user, kind.rawValue, id) {
                changes.append(Change(kind: kind, id: id, updatedAt: Date(unixMilliseconds: tombstone.at), deleted: true, deviceId: tombstone.device))
            }
        }
        return SyncPullResponseOf(changes: changes, cursor: PageCursor.encode(list: "sync", keys: [last.databaseValue]), hasMore: rows.count > limit)
    }
}
