import Bus
import Contracts
import Foundation
import GRDB
import Wire

// Reading rows into the contract's records. Every SELECT that feeds these uses `*` from its table.

extension NotificationRecord {
    init(row: Row) {
        self.init(
            id: row["id"], userId: row["user_id"], kind: NotificationKind(rawValue: row["kind"]) ?? .message, title: row["title"],
            body: row["body"], url: row["url"], tags: Self.decodeTags(row["tags"]), priority: row["priority"], urgent: row["urgent"],
            timerId: row["timer_id"], repeatIndex: row["repeat_index"], sourceEventId: row["source_event_id"],
            state: NotificationState(rawValue: row["state"]) ?? .scheduled, scheduledAt: Date(unixMilliseconds: row["not_before"]),
            releasedAt: (row["released_at"] as Int64?).map(Date.init(unixMilliseconds:)),
            readAt: (row["read_at"] as Int64?).map(Date.init(unixMilliseconds:)),
            createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]),
            isSoundOn: (row["kind"] as String) == NotificationKind.alarm.rawValue ? (row["sound"] as Bool?) : nil,
            isVibrationOn: (row["kind"] as String) == NotificationKind.alarm.rawValue ? (row["vibration"] as Bool?) : nil)
    }

    static func decodeTags(_ text: String?) -> [String] {
        guard let text, let array = (try? JSONValue.parse(text))?.arrayValue else { return [] }
        return array.compactMap(\.stringValue)
    }

    static func encodeTags(_ tags: [String]) -> String {
        JSONValue.array(tags.map { .string($0) }).jsonText
    }
}

extension Delivery {
    init(row: Row) {
        self.init(
            id: row["id"], userId: row["user_id"], notificationId: row["notification_id"], channelId: row["channel_id"],
            channelType: ChannelType(rawValue: row["channel_type"]) ?? .webhook, state: DeliveryState(rawValue: row["state"]) ?? .pending,
            attempts: row["attempts"], lastStatus: row["last_status"], lastError: row["last_error"],
            nextAttemptAt: (row["next_attempt_at"] as Int64?).map(Date.init(unixMilliseconds:)),
            sentAt: (row["sent_at"] as Int64?).map(Date.init(unixMilliseconds:)),
            createdAt: Date(unixMilliseconds: row["created_at"]), updatedAt: Date(unixMilliseconds: row["updated_at"]))
    }
}

/// A channel with what sending needs, secrets included; never leaves the process.
struct ChannelConfig: Sendable {
    var id: String
    var userId: String
    var type: ChannelType
    var name: String
    var url: String?
    var secret: String?
    var token: String?
    var deviceToken: String?
    var apnsTopic: String?
    var kinds: [NotificationKind]?
    var status: ChannelStatus
    var disabledReason: String?
    var failingSince: Int64?
    var createdAt: Int64
    var updatedAt: Int64

    init(row: Row) {
        id = row["id"]
        userId = row["user_id"]
        type = ChannelType(rawValue: row["type"]) ?? .webhook
        name = row["name"]
        url = row["url"]
        secret = row["secret"]
        token = row["token"]
        deviceToken = row["device_token"]
        apnsTopic = row["apns_topic"]
        kinds = (row["kinds"] as String?).map { text in
            ((try? JSONValue.parse(text))?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(NotificationKind.init(rawValue:)) }
        }
        status = ChannelStatus(rawValue: row["status"]) ?? .active
        disabledReason = row["disabled_reason"]
        failingSince = row["failing_since"]
        createdAt = row["created_at"]
        updatedAt = row["updated_at"]
    }

    /// Whether notifications of `kind` go here (system notices stay in the inbox).
    func accepts(_ kind: NotificationKind) -> Bool {
        guard kind != .system else { return false }
        return kinds?.contains(kind) ?? true
    }

    /// What `channels.list` shows: no secrets, only the end of a device token.
    var listed: Channel {
        Channel(
            id: id, userId: userId, type: type, name: name, url: url, deviceTokenSuffix: deviceToken.map { String($0.suffix(6)) },
            apnsTopic: apnsTopic, kinds: kinds, hasSecret: secret != nil || token != nil, status: status, disabledReason: disabledReason,
            failingSince: failingSince.map(Date.init(unixMilliseconds:)), createdAt: Date(unixMilliseconds: createdAt),
            updatedAt: Date(unixMilliseconds: updatedAt))
    }
}

/// An opaque page token: the sort key of the last row of a page, base64url of JSON.
enum PageToken {
    static func encode(_ values: [JSONValue]) -> String {
        Data(JSONValue.array(values).jsonText.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ token: String, count: Int) throws(BusError) -> [JSONValue] {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let values = (try? JSONValue.parse(data))?.arrayValue, values.count == count else {
            throw invalid
        }
        return values
    }

    /// The error of a token that does not decode to the sort key its method expects.
    static var invalid: BusError { Field.invalid("pageToken", "must be a token this method returned") }
}
