import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// `channels.add`, `channels.remove` and `channels.list`: where the caller's notifications go
/// besides the inbox. Secrets never leave the service.
struct ChannelMethods: Sendable {
    let database: ServiceDatabase
    let clock: any WallClock
    let apnsConfigured: Bool

    static let maximumChannelsPerUser = 20

    static func register(_ handlers: Handlers<NotifierService>) {
        handlers.handle(Notifier.channelsAdd) { service, request, context in try await service.channels.add(request, user: try context.requireUser()) }
        handlers.handle(Notifier.channelsRemove) { service, request, context in
            try await service.channels.remove(request, user: try context.requireUser())
            return Empty()
        }
        handlers.handle(Notifier.channelsList) { service, _, context in try await service.channels.list(user: try context.requireUser()) }
    }

    func add(_ request: AddChannelRequest, user: String) async throws -> Channel {
        let name = try Field.text(request.name ?? request.type.rawValue, "name", maximum: 100, trimming: true)
        var url: String?, secret: String?, token: String?, deviceToken: String?, apnsTopic: String?
        switch request.type {
        case .webhook:
            guard let given = request.url else { throw Field.invalid("url", "is required for a webhook") }
            try Field.endpointURL(given, "url")
            guard let given = request.secret else {
                throw Field.invalid("secret", "is required for a webhook: whsec_ followed by base64 of 24 to 64 random bytes")
            }
            _ = try StandardWebhooks.key(fromSecret: given)
            url = request.url
            secret = given.hasPrefix("whsec_") ? given : "whsec_" + given
        case .ntfy:
            guard let given = request.url else { throw Field.invalid("url", "is required for ntfy") }
            try Field.endpointURL(given, "url")
            guard NtfySender.split(topicURL: given) != nil else {
                throw Field.invalid("url", "must be an ntfy topic URL such as https://ntfy.sh/my-topic")
            }
            if let given = request.token {
                guard !given.isEmpty else { throw Field.invalid("token", "must not be empty") }
                try Field.length(given, "token", maximum: 200)
            }
            url = given
            token = request.token
        case .apns:
            guard apnsConfigured else { throw BusError.failedPrecondition("APNs is not configured on this server (NOTIFIER_APNS_KEY_FILE)") }
            guard let given = request.deviceToken?.lowercased(), (64...200).contains(given.count), given.allSatisfy(\.isHexDigit) else {
                throw Field.invalid("deviceToken", "must be the device token in hex, 64 to 200 characters")
            }
            if let topic = request.apnsTopic {
                guard !topic.isEmpty else { throw Field.invalid("apnsTopic", "must not be empty") }
                try Field.length(topic, "apnsTopic", maximum: 200)
            }
            deviceToken = given
            apnsTopic = request.apnsTopic
        }
        if let kinds = request.kinds, kinds.isEmpty || kinds.contains(.system) {
            throw Field.invalid("kinds", "must list at least one of alarm, reminder, material, message")
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

    func remove(_ request: ChannelRef, user: String) async throws {
        let now = clock.now().unixMilliseconds
        try await database.pool.write { db in
            try db.execute(sql: "DELETE FROM channel WHERE id = ? AND user_id = ?", arguments: [request.id, user])
            guard db.changesCount > 0 else { throw BusError.notFound("channel \(request.id) not found") }
            try db.execute(sql: """
                UPDATE delivery SET state = 'cancelled', last_error = 'the channel was removed', next_attempt_at = NULL, updated_at = ?
                WHERE channel_id = ? AND state = 'pending'
                """, arguments: [now, request.id])
        }
    }

    func list(user: String) async throws -> ChannelList {
        ChannelList(channels: try await database.pool.read { db in
            try ChannelConfig.fetchAll(db, sql: "SELECT * FROM channel WHERE user_id = ? ORDER BY created_at, id", arguments: [user]).map(\.listed)
        })
    }
}
