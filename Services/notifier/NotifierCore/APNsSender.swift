import Bus
import Contracts
import Crypto
import Foundation
import HTTPClient
import Wire

/// Delivers to iOS devices through APNs: HTTP/2 POST `/3/device/<token>` with a provider token,
/// the `apns-*` headers, and Apple's reasons mapped to retry / drop / remove token / refresh.
struct APNsSender: ChannelSender {
    let http: HTTPClient
    let configuration: APNsConfiguration
    let tokens: APNsTokenProvider
    let limits: DeliveryLimits

    /// What one reason means for the delivery.
    enum Action: Equatable {
        case retry, drop, removeToken, refreshCredentials
    }

    /// Apple's reasons (HTTP status + `reason`), as documented for the provider API.
    static func action(status: Int, reason: String) -> Action {
        switch (status, reason) {
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"), (400, "MissingDeviceToken"):
            return .removeToken
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"), (403, "MissingProviderToken"):
            return .refreshCredentials
        case (429, _), (500, _), (503, _), (502, _), (504, _):
            return .retry
        default:
            return .drop
        }
    }

    /// Apple's `reason` from an error body: one of its documented names (ASCII letters), else nil.
    static func reason(in body: Data) -> String? {
        guard let reason = (try? JSONValue.parse(body))?["reason"]?.stringValue, (1...64).contains(reason.utf8.count),
              reason.utf8.allSatisfy({ (65...90).contains($0) || (97...122).contains($0) })
        else { return nil }
        return reason
    }

    /// A UUID derived from the delivery id, so every attempt of one delivery carries the same `apns-id`.
    static func apnsID(for deliveryID: String) -> String {
        let bytes = Array(SHA256.hash(data: Data(deliveryID.utf8)).prefix(16))
        var uuid = bytes
        uuid[6] = (uuid[6] & 0x0F) | 0x50  // version 5 style (name-based)
        uuid[8] = (uuid[8] & 0x3F) | 0x80  // RFC 4122 variant
        let hex = uuid.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.map(String.init).joined(separator: "-").uppercased()
    }

    /// An alarm's `interruption-level`: `time-sensitive` (through Focus, lights the screen) while
    /// it rings or vibrates; `passive` (listed quietly: no sound, no vibration, the screen stays
    /// dark) when the timer has both off. APNs has no vibration switch of its own: with sound off
    /// and vibration on, the device's haptics settings decide.
    static func alarmInterruptionLevel(_ alarm: NotificationRecord) -> String {
        alarm.isSoundOn == false && alarm.isVibrationOn == false ? "passive" : "time-sensitive"
    }

    func send(_ job: DeliveryJob, now: Date) async -> DeliveryOutcome {
        guard let deviceToken = job.channel.deviceToken else { return .failed(status: nil, error: "the APNs channel has no device token") }
        let notification = job.notification
        let isAlarm = notification.kind == .alarm
        var alert: [String: JSONValue] = ["title": .string(notification.title), "body": .string(notification.body)]
        if alert["body"] == .string("") { alert["body"] = nil }
        var aps: [String: JSONValue] = ["alert": .object(alert)]
        if job.sound { aps["sound"] = .string("default") }
        if let timerId = notification.timerId { aps["thread-id"] = .string(timerId) }
        if isAlarm { aps["interruption-level"] = .string(Self.alarmInterruptionLevel(notification)) }
        var root: [String: JSONValue] = [
            "aps": .object(aps), "notificationId": .string(notification.id), "kind": .string(notification.kind.rawValue),
        ]
        if let url = notification.url { root["url"] = .string(url) }
        let body = JSONValue.object(root).jsonData
        let token = tokens.token()
        // Alarms are worth little late; other notifications may wait a day on a phone that is off.
        let expiration = Int64(now.timeIntervalSince1970) + (isAlarm ? 600 : 86_400)
        var headers: [(name: String, value: String)] = [
            ("authorization", "bearer \(token)"), ("apns-push-type", "alert"), ("apns-id", Self.apnsID(for: job.deliveryId)),
            ("apns-topic", job.channel.apnsTopic ?? configuration.topic), ("apns-expiration", String(expiration)),
            ("apns-priority", isAlarm || notification.urgent || notification.priority >= 4 ? "10" : "5"),
            ("content-type", "application/json"),
        ]
        if let timerId = notification.timerId { headers.append(("apns-collapse-id", String(timerId.utf8.prefix(64)) ?? timerId)) }
        let host = configuration.host.hasSuffix("/") ? String(configuration.host.dropLast()) : configuration.host
        var request = limits.post(url: "\(host)/3/device/\(deviceToken)", headers: headers, body: body)
        request.caFile = configuration.caFile
        let response: HTTPResponse
        do throws(HTTPClientError) {
            response = try await http.send(request)
        } catch {
            return .retry(status: nil, error: "APNs: \(error.reason)", after: nil)
        }
        if response.status == 200 { return .sent(status: 200) }
        let reason = Self.reason(in: response.body) ?? "HTTP \(response.status)"
        let error = "APNs \(response.status) \(reason)"
        switch Self.action(status: response.status, reason: reason) {
        case .retry:
            return .retry(status: response.status, error: error, after: RetryPolicy.parseRetryAfter(response.header("retry-after"), now: now))
        case .drop:
            return .failed(status: response.status, error: error)
        case .removeToken:
            return .removeChannel(status: response.status, error: error)
        case .refreshCredentials:
            let refreshed = tokens.invalidate(token)
            return .retry(status: response.status, error: error + (refreshed ? "; provider token re-signed" : ""), after: nil)
        }
    }
}
