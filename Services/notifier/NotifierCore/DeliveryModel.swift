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

    /// The longest wait a server's `Retry-After` can ask for; longer asks are cut to it.
    static let maximumRetryAfter: Duration = .seconds(86_400)

    /// The delay before attempt `attempt + 1`: `base * 2^(attempt-1)` capped at `maximum`, then a
    /// random point in its upper half ("equal jitter"), so retries of many deliveries spread out.
    func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        if let retryAfter { return min(max(retryAfter, .zero), Self.maximumRetryAfter) }
        let exponent = min(max(attempt - 1, 0), 40)
        let raw = base * Double(1 << min(exponent, 30))
        let capped = min(raw, maximum)
        return capped / 2 + capped / 2 * Double.random(in: 0...1)
    }

    /// Parses `Retry-After` (RFC 9110): delay-seconds or an HTTP date, from an answer the
    /// notifier does not control. The result is within 0…``maximumRetryAfter``: any number of
    /// digits saturates, a date in the past is 0; anything else (a sign, a fraction, an
    /// impossible date, more than 100 characters) is nil, so the back-off decides.
    static func parseRetryAfter(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), (1...100).contains(value.utf8.count) else { return nil }
        let limit = Int64(maximumRetryAfter.components.seconds)
        if value.utf8.allSatisfy({ (48...57).contains($0) }) {
            // Int64(value) is nil past Int64.max: that many seconds is as good as the limit.
            return .seconds(min(Int64(value) ?? limit, limit))
        }
        guard let date = HTTPDate.secondsSince1970(value) else { return nil }
        let wait = (Double(date) - now.timeIntervalSince1970).rounded(.up)
        guard wait.isFinite else { return nil }
        return .seconds(Int64(min(max(wait, 0), Double(limit))))
    }
}

extension Duration {
    /// Whole milliseconds.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
