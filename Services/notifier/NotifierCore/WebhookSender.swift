import Bus
import Contracts
import Foundation
import HTTPClient
import Wire

/// The JSON body of a webhook delivery, per the Standard Webhooks payload structure.
public struct WebhookPayload: Codable, Sendable, Equatable {
    /// `notification.<kind>`, e.g. `notification.alarm`.
    public var type: String
    /// When the notification was created (the same on every retry).
    public var timestamp: Date
    /// The delivery id, also sent as `webhook-id`.
    public var deliveryId: String
    public var data: NotificationRecord
}

/// Delivers to webhook endpoints: signed POSTs, outcomes by Standard Webhooks' status handling.
struct WebhookSender: ChannelSender {
    let http: HTTPClient
    let limits: DeliveryLimits

    func send(_ job: DeliveryJob, now: Date) async -> DeliveryOutcome {
        guard let url = job.channel.url, let secret = job.channel.secret,
              let key = try? StandardWebhooks.key(fromSecret: secret)
        else { return .failed(status: nil, error: "the webhook channel has no usable URL or secret") }
        let payload = WebhookPayload(
            type: "notification.\(job.notification.kind.rawValue)", timestamp: job.notification.createdAt, deliveryId: job.deliveryId,
            data: job.notification)
        guard let body = try? WireCoding.encode(payload) else { return .failed(status: nil, error: "cannot encode the payload") }
        let timestamp = Int64(now.timeIntervalSince1970)
        let request = limits.post(url: url, headers: [
            ("content-type", "application/json"), ("user-agent", "StudyBus-notifier"),
            ("webhook-id", job.deliveryId), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", StandardWebhooks.signature(id: job.deliveryId, timestamp: timestamp, body: body, key: key)),
        ], body: body)
        return await HTTPOutcome.of(request, http: http, now: now)
    }
}
