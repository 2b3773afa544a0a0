import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// The notifier's methods on the bus. Every one is scoped by the caller's user; another user's
/// record is NOT_FOUND.
struct API: Sendable {
    let database: ServiceDatabase
    let clock: any WallClock
    let apnsConfigured: Bool
    let wake: @Sendable () -> Void

    static let maximumChannelsPerUser = 20

    func register(on host: ServiceHost) {
        host.handle(Notifier.send) { request, context in try await send(request, context) }
        host.handle(Notifier.ack) { request, context in try await ack(request, user: try context.requireUser()) }
        host.handle(Notifier.inboxList) { request, context in try await inbox(request, user: try context.requireUser()) }
        host.handle(Notifier.inboxMarkRead) { request, context in try await markRead(request, user: try context.requireUser()) }
        host.handle(Notifier.channelsAdd) { request, context in try await addChannel(request, user: try context.requireUser()) }
        host.handle(Notifier.channelsRemove) { request, context in try await removeChannel(request, user: try context.requireUser()) }
        host.handle(Notifier.channelsList) { _, context in
            let user = try context.requireUser()
            return ChannelList(channels: try await database.pool.read { db in
                try ChannelConfig.fetchAll(db, sql: "SELECT * FROM channel WHERE user_id = ? ORDER BY created_at, id", arguments: [user]).map(\.listed)
            })
        }
        host.handle(Notifier.preferencesGet) { _, context in
            let user = try context.requireUser()
            return try await database.pool.read { db in try Self.preferences(db, user: user) }
        }
        host.handle(Notifier.preferencesSet) { request, context in try await setPreferences(request, user: try context.requireUser()) }
        host.handle(Notifier.deliveriesList) { request, context in try await deliveries(request, user: try context.requireUser()) }
    }

    // MARK: notify.send, notify.ack

    private func send(_ request: SendNotificationRequest, _ context: RequestContext) async throws -> NotificationRecord {
        let user = try context.requireUser()
        let title = request.title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(title.count) else { throw BusError.invalidArgument("field 'title' must be 1 to 200 characters") }
        guard request.body.count <= 4000 else { throw BusError.invalidArgument("field 'body' must be at most 4000 characters") }
        let kind = request.kind ?? .message
        guard kind != .alarm && kind != .system else {
            throw BusError.invalidArgument("field 'kind' must be reminder, material or message (alarm and system are the notifier's own)")
        }
        let priority = request.priority ?? 3
        guard (1...5).contains(priority) else { throw BusError.invalidArgument("field 'priority' must be 1 to 5") }
        if let url = request.url { try Validation.httpURL(url, field: "url") }
        let tags = request.tags ?? []
        guard tags.count <= 5, tags.allSatisfy({ (1...40).contains($0.count) }) else {
            throw BusError.invalidArgument("field 'tags' must hold at most 5 tags of 1 to 40 characters")
        }
        let now = clock.now().unixMilliseconds
        let record = try await database.pool.write { db in
            try Idempotency.once(db, user: user, key: context.idempotencyKey, method: context.method) {
                let id = "send-\(UUID().uuidString.lowercased())_0"
                try NotificationWrites.insert(db, NewNotification(
                    id: id, userId: user, kind: kind, title: title, body: request.body, url: request.url, tags: tags, priority: priority,
                    urgent: request.urgent ?? false, sourceEventId: nil, notBefore: max(now, request.deliverAt?.unixMilliseconds ?? now)), now: now)
                return NotificationRecord(row: try Row.fetchOne(db, sql: "SELECT * FROM notification WHERE id = ?", arguments: [id])!)
            }
        }
        wake()
        return record
    }

    private func ack(_ request: AckRequest, user: String) async throws -> AckResponse {
        let now = clock.now().unixMilliseconds
        switch (request.timerId, request.notificationId) {
        case (let timerId?, nil):
            return AckResponse(cancelled: try await database.pool.write { db in
                try NotificationWrites.cancelTimer(db, timerId: timerId, userId: user, now: now)
            })
        case (nil, let notificationId?):
            try await database.pool.write { db in
                try db.execute(sql: "UPDATE notification SET read_at = COALESCE(read_at, ?), updated_at = ? WHERE id = ? AND user_id = ?",
                               arguments: [now, now, notificationId, user])
                if db.changesCount == 0 { throw BusError.notFound("notification \(notificationId) not found") }
            }
            return AckResponse(cancelled: 0)
        default:
            throw BusError.invalidArgument("exactly one of the fields 'timerId' and 'notificationId' is required")
        }
    }

    // MARK: inbox

    private func inbox(_ request: InboxListRequest, user: String) async throws -> InboxPage {
        let limit = request.limit ?? 20
        guard (1...100).contains(limit) else { throw BusError.invalidArgument("field 'limit' must be 1 to 100") }
        var filter = "user_id = ? AND state = 'released'"
        var arguments: [DatabaseValue] = [user.databaseValue]
        if request.unreadOnly == true { filter += " AND read_at IS NULL" }
        if let token = request.pageToken {
            let key = try PageToken.decode(token, count: 3)
            guard let read = key[0].intValue, let released = key[1].intValue, let seq = key[2].intValue else {
                throw BusError.invalidArgument("field 'pageToken' is not a token this method returned")
            }
            filter += " AND ((read_at IS NOT NULL) > ? OR ((read_at IS NOT NULL) = ? AND (released_at < ? OR (released_at = ? AND seq < ?))))"
            arguments += [read, read, released, released, seq].map(\.databaseValue)
        }
        let sql = """
            SELECT *, (read_at IS NOT NULL) AS is_read FROM notification WHERE \(filter)
            ORDER BY (read_at IS NOT NULL), released_at DESC, seq DESC LIMIT ?
            """
        let values = arguments + [(limit + 1).databaseValue]
        let (rows, unread) = try await database.pool.read { db in
            (try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { row in
                (record: NotificationRecord(row: row), key: [JSONValue.int(row["is_read"]), .int(row["released_at"]), .int(row["seq"])])
            },
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification WHERE user_id = ? AND state = 'released' AND read_at IS NULL",
                              arguments: [user]) ?? 0)
        }
        let page = Array(rows.prefix(limit))
        let next = rows.count > limit ? page.last.map { PageToken.encode($0.key) } : nil
        return InboxPage(items: page.map(\.record), nextPageToken: next, unreadCount: unread)
    }

    private func markRead(_ request: MarkReadRequest, user: String) async throws -> MarkReadResponse {
        let now = clock.now().unixMilliseconds
        return try await database.pool.write { db in
            if request.all == true {
                try db.execute(sql: "UPDATE notification SET read_at = ?, updated_at = ? WHERE user_id = ? AND state = 'released' AND read_at IS NULL",
                               arguments: [now, now, user])
            } else if let ids = request.ids, !ids.isEmpty {
                guard ids.count <= 100 else { throw BusError.invalidArgument("field 'ids' must hold at most 100 ids") }
                try db.execute(sql: """
                    UPDATE notification SET read_at = ?, updated_at = ?
                    WHERE user_id = ? AND state = 'released' AND read_at IS NULL AND id IN (\(DeliveryStore.placeholders(ids.count)))
                    """, arguments: [now, now, user] + StatementArguments(ids))
            } else {
                throw BusError.invalidArgument("field 'ids' (1 to 100 ids) or 'all': true is required")
            }
            let updated = db.changesCount
            let unread = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification WHERE user_id = ? AND state = 'released' AND read_at IS NULL",
                                          arguments: [user]) ?? 0
            return MarkReadResponse(updated: updated, unreadCount: unread)
        }
    }

    // MARK: channels

    private func addChannel(_ request: AddChannelRequest, user: String) async throws -> Channel {
        let name = (request.name ?? request.type.rawValue).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(name.count) else { throw BusError.invalidArgument("field 'name' must be 1 to 100 characters") }
        var url: String?, secret: String?, token: String?, deviceToken: String?, apnsTopic: String?
        switch request.type {
        case .webhook:
            guard let given = request.url else { throw BusError.invalidArgument("field 'url' is required for a webhook") }
            try Validation.httpURL(given, field: "url")
            guard let given = request.secret else {
                throw BusError.invalidArgument("field 'secret' is required for a webhook: whsec_ followed by base64 of 24 to 64 random bytes")
            }
            _ = try StandardWebhooks.key(fromSecret: given)
            url = request.url
            secret = given.hasPrefix("whsec_") ? given : "whsec_" + given
        case .ntfy:
            guard let given = request.url, NtfySender.split(topicURL: given) != nil else {
                throw BusError.invalidArgument("field 'url' must be an ntfy topic URL such as https://ntfy.sh/my-topic")
            }
            try Validation.httpURL(given, field: "url")
            if let given = request.token, given.isEmpty || given.count > 200 {
                throw BusError.invalidArgument("field 'token' must be 1 to 200 characters")
            }
            url = given
            token = request.token
        case .apns:
            guard apnsConfigured else { throw BusError.failedPrecondition("APNs is not configured on this server (NOTIFIER_APNS_KEY_FILE)") }
            guard let given = request.deviceToken?.lowercased(), (64...200).contains(given.count), given.allSatisfy(\.isHexDigit) else {
                throw BusError.invalidArgument("field 'deviceToken' must be the device token in hex, 64 to 200 characters")
            }
            if let topic = request.apnsTopic, !(1...200).contains(topic.count) {
                throw BusError.invalidArgument("field 'apnsTopic' must be 1 to 200 characters")
            }
            deviceToken = given
            apnsTopic = request.apnsTopic
        }
        if let kinds = request.kinds, kinds.isEmpty || kinds.contains(.system) {
            throw BusError.invalidArgument("field 'kinds' must list at least one of alarm, reminder, material, message")
        }
        let now = clock.now().unixMilliseconds
        let id = "ch_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let kindsJSON = request.kinds.map { kinds in JSONValue.array(kinds.map { .string($0.rawValue) }).jsonText }
        return try await database.pool.write { [url, secret, token, deviceToken, apnsTopic] db in
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM channel WHERE user_id = ?", arguments: [user]) ?? 0
            guard count < Self.maximumChannelsPerUser else {
                throw BusError.resourceExhausted("a user has at most \(Self.maximumChannelsPerUser) channels")
            }
            if let deviceToken {
                // One channel per device: adding the same token again replaces the old one.
                try db.execute(sql: "DELETE FROM channel WHERE user_id = ? AND device_token = ?", arguments: [user, deviceToken])
            }
            try db.execute(sql: """
                INSERT INTO channel (id, user_id, type, name, url, secret, token, device_token, apns_topic, kinds, status, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)
                """, arguments: [id, user, request.type.rawValue, name, url, secret, token, deviceToken, apnsTopic, kindsJSON, now, now])
            return try ChannelConfig.fetchOne(db, sql: "SELECT * FROM channel WHERE id = ?", arguments: [id])!.listed
        }
    }

    private func removeChannel(_ request: ChannelRef, user: String) async throws -> Empty {
        let now = clock.now().unixMilliseconds
        try await database.pool.write { db in
            try db.execute(sql: "DELETE FROM channel WHERE id = ? AND user_id = ?", arguments: [request.id, user])
            guard db.changesCount > 0 else { throw BusError.notFound("channel \(request.id) not found") }
            try db.execute(sql: """
                UPDATE delivery SET state = 'cancelled', last_error = 'the channel was removed', next_attempt_at = NULL, updated_at = ?
                WHERE channel_id = ? AND state = 'pending'
                """, arguments: [now, request.id])
        }
        return Empty()
    }

    // MARK: preferences

    static func preferences(_ db: Database, user: String) throws -> Preferences {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM preference WHERE user_id = ?", arguments: [user]) else {
            let epoch = Date(unixMilliseconds: 0)
            return Preferences(userId: user, timeZone: "UTC", quietHours: nil, alarmsBypassQuietHours: false, createdAt: epoch, updatedAt: epoch)
        }
        let quiet: QuietHours? = (row["quiet_start"] as Int?).flatMap { start in
            (row["quiet_end"] as Int?).map { QuietHours(start: QuietWindow.format(start), end: QuietWindow.format($0)) }
        }
        return Preferences(
            userId: user, timeZone: row["time_zone"], quietHours: quiet, alarmsBypassQuietHours: row["alarms_bypass"],
            createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }

    private func setPreferences(_ request: SetPreferencesRequest, user: String) async throws -> Preferences {
        let zone = request.timeZone ?? "UTC"
        guard TimeZone(identifier: zone) != nil, zone.count <= 64 else {
            throw BusError.invalidArgument("field 'timeZone' must be an IANA time zone such as Europe/Berlin, got '\(zone)'")
        }
        var start: Int?, end: Int?
        if let quiet = request.quietHours {
            start = try QuietWindow.minute(of: quiet.start, field: "quietHours.start")
            end = try QuietWindow.minute(of: quiet.end, field: "quietHours.end")
            guard start != end else { throw BusError.invalidArgument("fields 'quietHours.start' and 'quietHours.end' must differ") }
        }
        let now = clock.now().unixMilliseconds
        let preferences = try await database.pool.write { [start, end] db in
            try db.execute(sql: """
                INSERT INTO preference (user_id, time_zone, quiet_start, quiet_end, alarms_bypass, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET time_zone = excluded.time_zone, quiet_start = excluded.quiet_start,
                    quiet_end = excluded.quiet_end, alarms_bypass = excluded.alarms_bypass, updated_at = excluded.updated_at
                """, arguments: [user, zone, start, end, request.alarmsBypassQuietHours ?? false, now, now])
            // Held notifications are looked at again under the new settings.
            try db.execute(sql: "UPDATE notification SET state = 'scheduled', not_before = MIN(not_before, ?) WHERE user_id = ? AND state = 'held'",
                           arguments: [now, user])
            return try Self.preferences(db, user: user)
        }
        wake()
        return preferences
    }

    // MARK: deliveries

    private func deliveries(_ request: DeliveriesListRequest, user: String) async throws -> DeliveryPage {
        let limit = request.limit ?? 50
        guard (1...200).contains(limit) else { throw BusError.invalidArgument("field 'limit' must be 1 to 200") }
        var filter = "user_id = ?"
        var arguments: [DatabaseValue] = [user.databaseValue]
        if let notificationId = request.notificationId {
            filter += " AND notification_id = ?"
            arguments.append(notificationId.databaseValue)
        }
        if let state = request.state {
            filter += " AND state = ?"
            arguments.append(state.rawValue.databaseValue)
        }
        if let token = request.pageToken {
            guard let seq = try PageToken.decode(token, count: 1)[0].intValue else {
                throw BusError.invalidArgument("field 'pageToken' is not a token this method returned")
            }
            filter += " AND seq < ?"
            arguments.append(seq.databaseValue)
        }
        let sql = "SELECT * FROM delivery WHERE \(filter) ORDER BY seq DESC LIMIT ?"
        let values = arguments + [(limit + 1).databaseValue]
        let rows = try await database.pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { (delivery: Delivery(row: $0), seq: $0["seq"] as Int64) }
        }
        let page = Array(rows.prefix(limit))
        let next = rows.count > limit ? page.last.map { PageToken.encode([.int($0.seq)]) } : nil
        return DeliveryPage(deliveries: page.map(\.delivery), nextPageToken: next)
    }
}

/// Input checks shared by the methods.
enum Validation {
    /// - Throws: `INVALID_ARGUMENT` unless `text` is an http(s) URL with a host, up to 2,000 characters.
    static func httpURL(_ text: String, field: String) throws(BusError) {
        guard text.count <= 2000, let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false
        else { throw .invalidArgument("field '\(field)' must be an http or https URL of at most 2000 characters") }
    }
}
