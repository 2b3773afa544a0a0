import Contracts
import Foundation
import Wire

/// One claimed delivery, with what its sender needs.
struct DeliveryJob: Sendable {
    var deliveryId: String
    /// 1 for the first attempt.
    var attempt: Int
    var channel: ChannelConfig
    var notification: NotificationRecord
    /// Whether the alarm should make a sound (the timer's `isSoundOn`).
    var sound: Bool
}

/// How one attempt ended, and so what happens next (the state machine's transitions out of
/// `sending`).
enum DeliveryOutcome: Sendable, Equatable {
    /// Accepted: `sent`.
    case sent(status: Int)
    /// Worth another attempt (timeout, 429, 5xx, refreshed credentials): back to `pending` after
    /// `after` (the server's Retry-After) or the back-off; `failed` after the last attempt.
    case retry(status: Int?, error: String, after: Duration?)
    /// Not worth retrying (a 4xx that will not change): `failed`.
    case failed(status: Int?, error: String)
    /// The endpoint said it no longer wants deliveries (webhook 410): `failed`, channel disabled.
    case disableChannel(status: Int?, error: String)
    /// The device token is dead (APNs 410 Unregistered, BadDeviceToken): `failed`, channel removed.
    case removeChannel(status: Int?, error: String)
}

/// A finished attempt.
struct DeliveryResult: Sendable {
    var job: DeliveryJob
    var outcome: DeliveryOutcome
}

/// Sends one delivery over one kind of channel.
protocol ChannelSender: Sendable {
    func send(_ job: DeliveryJob, now: Date) async -> DeliveryOutcome
}

/// The retry policy: exponential back-off with jitter, or the server's `Retry-After`.
struct RetryPolicy: Sendable {
    var base: Duration
    var maximum: Duration
    var maximumAttempts: Int

    /// The delay before attempt `attempt + 1`: `base * 2^(attempt-1)` capped at `maximum`, then a
    /// random point in its upper half ("equal jitter"), so retries of many deliveries spread out.
    func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        if let retryAfter { return min(max(retryAfter, .zero), .seconds(86_400)) }
        let exponent = min(max(attempt - 1, 0), 40)
        let raw = base * Double(1 << min(exponent, 30))
        let capped = min(raw, maximum)
        return capped / 2 + capped / 2 * Double.random(in: 0...1)
    }

    /// Parses `Retry-After`: delay-seconds or an HTTP date.
    static func parseRetryAfter(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .seconds(saturating: max(0, date.timeIntervalSince(now)))  // a year like 99999999 must not trap
    }
}

extension Duration {
    /// Whole milliseconds.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
