import Foundation
import Wire

/// The notifier's methods: what callers use to send notifications, read the inbox, manage
/// channels and preferences, and see deliveries.
///
/// ```swift
/// let record = try await bus.call(Notifier.send, .init(title: "Hello", body: "From the tutor"), options: .init(user: "u1"))
/// let inbox = try await bus.call(Notifier.inboxList, .init(), options: .init(user: "u1"))
/// ```
public let Notifier = NotifierContract()

/// The `notifier` service: it turns events into notifications and delivers them to the inbox,
/// webhooks, ntfy and APNs (docs/services/notifier.md).
public struct NotifierContract: ServiceContract {
    public static let serviceName = "notifier"

    /// Creates a notification for the calling user and delivers it on the user's channels.
    public let send = Method<SendNotificationRequest, NotificationRecord>(
        Self.self, "notify.send", "Create a notification for the user and deliver it (idempotent under the idem header).", audience: .service)
    /// Stops a timer's alarm repeats, or marks one notification read.
    public let ack = Method<AckRequest, AckResponse>(
        Self.self, "notify.ack", "Acknowledge an alarm (timerId: cancels its remaining repeats) or one notification (notificationId).", audience: .app)
    /// The user's inbox, unread first, newest first within each, in pages.
    public let inboxList = Method<InboxListRequest, InboxPage>(
        Self.self, "inbox.list", "The user's released notifications, unread first, newest first; paged by pageToken.", audience: .app)
    /// Marks inbox notifications read.
    public let inboxMarkRead = Method<MarkReadRequest, MarkReadResponse>(
        Self.self, "inbox.markRead", "Mark the given notifications (or all) read.", audience: .app)
    /// Adds a delivery channel (webhook, ntfy, APNs device).
    public let channelsAdd = Method<AddChannelRequest, Channel>(
        Self.self, "channels.add", "Add a webhook, ntfy topic or APNs device token; secrets are stored, never returned.", audience: .app)
    /// Removes a channel; its pending deliveries are cancelled.
    public let channelsRemove = Method<ChannelRef, Empty>(
        Self.self, "channels.remove", "Remove a channel; its pending deliveries are cancelled.", audience: .app)
    /// The user's channels, without secrets.
    public let channelsList = Method<Empty, ChannelList>(
        Self.self, "channels.list", "The user's channels, with status; secrets are never returned.", audience: .app)
    /// The user's preferences (time zone, quiet hours, alarm bypass).
    public let preferencesGet = Method<Empty, Preferences>(
        Self.self, "preferences.get", "The user's time zone, quiet hours and whether timer alarms bypass them.", audience: .app)
    /// Replaces the user's preferences.
    public let preferencesSet = Method<SetPreferencesRequest, Preferences>(
        Self.self, "preferences.set", "Set the user's IANA time zone, quiet hours (HH:mm, may wrap midnight) and alarm bypass.", audience: .app)
    /// What was delivered where, when, and why something failed.
    public let deliveriesList = Method<DeliveriesListRequest, DeliveryPage>(
        Self.self, "deliveries.list", "The user's deliveries, newest first: state, attempts, last status and error.", audience: .app)

    public init() {}
}

// MARK: - Enums

/// What a notification is about; channels choose which kinds they receive.
public enum NotificationKind: String, WireEnum {
    /// A timer's alarm (QuickLabelTimer): repeated until acknowledged or cancelled.
    case alarm
    /// Study and habit reminders (`review.due`, `habit.due`, `test.due`), batched per user.
    case reminder
    /// Material processing outcome (`material.ingested`, `ingest.failed`).
    case material
    /// Sent by another service through `notify.send`.
    case message
    /// About the notifier itself (e.g. a webhook endpoint was disabled); inbox only.
    case system
}

/// Where a notification is delivered besides the inbox.
public enum ChannelType: String, WireEnum {
    /// HTTP POST of JSON signed per Standard Webhooks.
    case webhook
    /// A topic on an ntfy server.
    case ntfy
    /// An iOS device token, through Apple's push service.
    case apns
}

/// Whether a channel receives deliveries.
public enum ChannelStatus: String, WireEnum {
    case active, disabled
}

/// A notification's life: scheduled (waits for its time) or held (waits for quiet hours to
/// end), then released (in the inbox, deliveries created), or cancelled before release.
public enum NotificationState: String, WireEnum {
    case scheduled, held, released, cancelled
}

/// A delivery's state machine: pending -> sending -> sent | failed | cancelled (sending goes back
/// to pending for a retry).
public enum DeliveryState: String, WireEnum {
    case pending, sending, sent, failed, cancelled
}

// MARK: - Records

/// One notification for one user.
public struct NotificationRecord: Codable, Sendable, Equatable {
    /// Deterministic: `{timerId}_{i}` for a timer's alarm repeats (`{timerId}-r{run}_{i}` for
    /// runs after the first), `{eventId}_{i}` otherwise.
    public var id: String
    public var userId: String
    public var kind: NotificationKind
    public var title: String
    public var body: String
    /// A URL the notification opens when tapped (ntfy `click`).
    public var url: String?
    public var tags: [String]
    /// 1 (min) to 5 (max), as ntfy.
    public var priority: Int
    /// Urgent notifications are not held by quiet hours.
    public var urgent: Bool
    /// The timer of an alarm.
    public var timerId: String?
    /// The repeat index of an alarm (0 to 11).
    public var repeatIndex: Int?
    /// The bus event it came from.
    public var sourceEventId: String?
    public var state: NotificationState
    /// When it is (or was) due to be released.
    public var scheduledAt: Date
    /// When it was released to the inbox and channels.
    public var releasedAt: Date?
    public var readAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    /// An alarm's sound flag (the timer's `isSoundOn`); absent for other kinds.
    public var isSoundOn: Bool?
    /// An alarm's vibration flag (the timer's `isVibrationOn`); absent for other kinds.
    public var isVibrationOn: Bool?

    public init(
        id: String, userId: String, kind: NotificationKind, title: String, body: String, url: String?, tags: [String], priority: Int,
        urgent: Bool, timerId: String?, repeatIndex: Int?, sourceEventId: String?, state: NotificationState, scheduledAt: Date,
        releasedAt: Date?, readAt: Date?, createdAt: Date, updatedAt: Date, isSoundOn: Bool? = nil, isVibrationOn: Bool? = nil
    ) {
        self.id = id
        self.userId = userId
        self.kind = kind
        self.title = title
        self.body = body
        self.url = url
        self.tags = tags
        self.priority = priority
        self.urgent = urgent
        self.timerId = timerId
        self.repeatIndex = repeatIndex
        self.sourceEventId = sourceEventId
        self.state = state
        self.scheduledAt = scheduledAt
        self.releasedAt = releasedAt
        self.readAt = readAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
    }
}

/// A delivery channel as listed: secrets are reported only as `hasSecret`.
public struct Channel: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var type: ChannelType
    public var name: String
    /// The webhook URL or ntfy topic URL.
    public var url: String?
    /// The last 6 characters of an APNs device token.
    public var deviceTokenSuffix: String?
    /// The APNs topic (app bundle id) used for this device.
    public var apnsTopic: String?
    /// Kinds delivered here; `nil` means every kind except `system`.
    public var kinds: [NotificationKind]?
    /// Whether a webhook signing secret or an ntfy access token is stored.
    public var hasSecret: Bool
    public var status: ChannelStatus
    public var disabledReason: String?
    /// When the current run of failed attempts began (cleared by a success).
    public var failingSince: Date?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, type: ChannelType, name: String, url: String?, deviceTokenSuffix: String?, apnsTopic: String?,
        kinds: [NotificationKind]?, hasSecret: Bool, status: ChannelStatus, disabledReason: String?, failingSince: Date?,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.type = type
        self.name = name
        self.url = url
        self.deviceTokenSuffix = deviceTokenSuffix
        self.apnsTopic = apnsTopic
        self.kinds = kinds
        self.hasSecret = hasSecret
        self.status = status
        self.disabledReason = disabledReason
        self.failingSince = failingSince
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One notification to one channel.
public struct Delivery: Codable, Sendable, Equatable {
    /// Deterministic: `{notificationId}.{channelId}`; sent as `webhook-id`, and (as a UUID derived
    /// from it) as `apns-id`, so receivers can drop duplicates.
    public var id: String
    public var userId: String
    public var notificationId: String
    public var channelId: String
    public var channelType: ChannelType
    public var state: DeliveryState
    public var attempts: Int
    /// The HTTP status of the last attempt.
    public var lastStatus: Int?
    /// Why the last attempt failed: the status or a classified reason (`HTTP 500`, `timed out`,
    /// `destination not allowed: private address`), never the endpoint's answer.
    public var lastError: String?
    public var nextAttemptAt: Date?
    public var sentAt: Date?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userId: String, notificationId: String, channelId: String, channelType: ChannelType, state: DeliveryState,
        attempts: Int, lastStatus: Int?, lastError: String?, nextAttemptAt: Date?, sentAt: Date?, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.notificationId = notificationId
        self.channelId = channelId
        self.channelType = channelType
        self.state = state
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.sentAt = sentAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A daily quiet window in the user's local time; `start` after `end` wraps midnight.
public struct QuietHours: Codable, Sendable, Equatable {
    /// `HH:mm`, 24-hour local time.
    public var start: String
    /// `HH:mm`, 24-hour local time (exclusive).
    public var end: String
    public init(start: String, end: String) {
        self.start = start
        self.end = end
    }
}

/// A user's notification preferences.
public struct Preferences: Codable, Sendable, Equatable {
    public var userId: String
    /// IANA time zone, e.g. `Europe/Berlin` (default `UTC`).
    public var timeZone: String
    public var quietHours: QuietHours?
    /// Whether timer alarms ring during quiet hours (default false: they wait for the end).
    public var alarmsBypassQuietHours: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(userId: String, timeZone: String, quietHours: QuietHours?, alarmsBypassQuietHours: Bool, createdAt: Date, updatedAt: Date) {
        self.userId = userId
        self.timeZone = timeZone
        self.quietHours = quietHours
        self.alarmsBypassQuietHours = alarmsBypassQuietHours
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

// MARK: - Requests and responses

/// `notify.send`.
public struct SendNotificationRequest: Codable, Sendable, Equatable {
    /// 1 to 200 characters.
    public var title: String
    /// Up to 4,000 characters.
    public var body: String
    /// Default `message`; `alarm` and `system` are the notifier's own and refused.
    public var kind: NotificationKind?
    /// 1 to 5 (default 3).
    public var priority: Int?
    /// Not held by quiet hours (default false).
    public var urgent: Bool?
    /// Opened when tapped; http or https, up to 2,000 characters.
    public var url: String?
    /// Up to 5 tags of up to 40 characters.
    public var tags: [String]?
    /// Release later instead of now.
    public var deliverAt: Date?

    public init(title: String, body: String, kind: NotificationKind? = nil, priority: Int? = nil, urgent: Bool? = nil, url: String? = nil,
                tags: [String]? = nil, deliverAt: Date? = nil) {
        self.title = title
        self.body = body
        self.kind = kind
        self.priority = priority
        self.urgent = urgent
        self.url = url
        self.tags = tags
        self.deliverAt = deliverAt
    }
}

/// `notify.ack`: exactly one of the fields.
public struct AckRequest: Codable, Sendable, Equatable {
    /// Cancels the timer's alarm repeats not yet released (and their pending deliveries).
    public var timerId: String?
    /// Marks one notification read.
    public var notificationId: String?
    public init(timerId: String? = nil, notificationId: String? = nil) {
        self.timerId = timerId
        self.notificationId = notificationId
    }
}

/// `notify.ack` result.
public struct AckResponse: Codable, Sendable, Equatable {
    /// How many notifications were cancelled.
    public var cancelled: Int
    public init(cancelled: Int) { self.cancelled = cancelled }
}

/// `inbox.list`.
public struct InboxListRequest: Codable, Sendable, Equatable {
    /// 1 to 100 (default 20).
    public var limit: Int?
    /// From the previous page's `nextPageToken`.
    public var pageToken: String?
    public var unreadOnly: Bool?
    public init(limit: Int? = nil, pageToken: String? = nil, unreadOnly: Bool? = nil) {
        self.limit = limit
        self.pageToken = pageToken
        self.unreadOnly = unreadOnly
    }
}

/// A page of the inbox.
public struct InboxPage: Codable, Sendable, Equatable {
    public var items: [NotificationRecord]
    /// Absent on the last page.
    public var nextPageToken: String?
    public var unreadCount: Int
    public init(items: [NotificationRecord], nextPageToken: String?, unreadCount: Int) {
        self.items = items
        self.nextPageToken = nextPageToken
        self.unreadCount = unreadCount
    }
}

/// `inbox.markRead`: `ids` (up to 100) or `all`.
public struct MarkReadRequest: Codable, Sendable, Equatable {
    public var ids: [String]?
    public var all: Bool?
    public init(ids: [String]? = nil, all: Bool? = nil) {
        self.ids = ids
        self.all = all
    }
}

/// `inbox.markRead` result.
public struct MarkReadResponse: Codable, Sendable, Equatable {
    public var updated: Int
    public var unreadCount: Int
    public init(updated: Int, unreadCount: Int) {
        self.updated = updated
        self.unreadCount = unreadCount
    }
}

/// `channels.add`.
public struct AddChannelRequest: Codable, Sendable, Equatable {
    public var type: ChannelType
    /// Up to 100 characters (default: the type).
    public var name: String?
    /// webhook: the endpoint URL; ntfy: the topic URL (`https://ntfy.sh/my-topic`). http(s).
    public var url: String?
    /// webhook: the signing secret, `whsec_` + base64 of 24 to 64 random bytes. Required.
    public var secret: String?
    /// ntfy: an access token for a protected topic (sent as `Authorization: Bearer`).
    public var token: String?
    /// apns: the device token, hex (64 to 200 characters).
    public var deviceToken: String?
    /// apns: the app's bundle id, if not the server's default `NOTIFIER_APNS_TOPIC`.
    public var apnsTopic: String?
    /// Kinds delivered here (default: every kind except `system`).
    public var kinds: [NotificationKind]?

    public init(type: ChannelType, name: String? = nil, url: String? = nil, secret: String? = nil, token: String? = nil,
                deviceToken: String? = nil, apnsTopic: String? = nil, kinds: [NotificationKind]? = nil) {
        self.type = type
        self.name = name
        self.url = url
        self.secret = secret
        self.token = token
        self.deviceToken = deviceToken
        self.apnsTopic = apnsTopic
        self.kinds = kinds
    }
}

/// A channel by id.
public struct ChannelRef: Codable, Sendable, Equatable {
    public var id: String
    public init(id: String) { self.id = id }
}

/// `channels.list` result.
public struct ChannelList: Codable, Sendable, Equatable {
    public var channels: [Channel]
    public init(channels: [Channel]) { self.channels = channels }
}

/// `preferences.set`: replaces the user's preferences.
public struct SetPreferencesRequest: Codable, Sendable, Equatable {
    /// IANA time zone (default `UTC`).
    public var timeZone: String?
    /// Absent: no quiet hours.
    public var quietHours: QuietHours?
    public var alarmsBypassQuietHours: Bool?
    public init(timeZone: String? = nil, quietHours: QuietHours? = nil, alarmsBypassQuietHours: Bool? = nil) {
        self.timeZone = timeZone
        self.quietHours = quietHours
        self.alarmsBypassQuietHours = alarmsBypassQuietHours
    }
}

/// `deliveries.list`.
public struct DeliveriesListRequest: Codable, Sendable, Equatable {
    public var notificationId: String?
    public var state: DeliveryState?
    /// 1 to 200 (default 50).
    public var limit: Int?
    public var pageToken: String?
    public init(notificationId: String? = nil, state: DeliveryState? = nil, limit: Int? = nil, pageToken: String? = nil) {
        self.notificationId = notificationId
        self.state = state
        self.limit = limit
        self.pageToken = pageToken
    }
}

/// A page of deliveries.
public struct DeliveryPage: Codable, Sendable, Equatable {
    public var deliveries: [Delivery]
    public var nextPageToken: String?
    public init(deliveries: [Delivery], nextPageToken: String?) {
        self.deliveries = deliveries
        self.nextPageToken = nextPageToken
    }
}
