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
    let timeout: Duration

    func send(_ job: DeliveryJob, now: Date) async -> DeliveryOutcome {
        guard let url = job.channel.url, let secret = job.channel.secret,
              let key = try? StandardWebhooks.key(fromSecret: secret)
        else { return .failed(status: nil, error: "the webhook channel has no usable URL or secret") }
        let payload = WebhookPayload(
            type: "notification.\(job.notification.kind.rawValue)", timestamp: job.notification.createdAt, deliveryId: job.deliveryId,
            data: job.notification)
        guard let body = try? WireCoding.encode(payload) else { return .failed(status: nil, error: "cannot encode the payload") }
        let timestamp = Int64(now.timeIntervalSince1970)
        let request = HTTPRequest(
            method: "POST", url: url,
            headers: [
                ("content-type", "application/json"), ("user-agent", "StudyBus-notifier"),
                ("webhook-id", job.deliveryId), ("webhook-timestamp", String(timestamp)),
                ("webhook-signature", StandardWebhooks.signature(id: job.deliveryId, timestamp: timestamp, body: body, key: key)),
            ],
            body: body, timeout: timeout, connectTimeout: min(timeout, .seconds(10)), version: .http2WhenOffered)
        return await HTTPOutcome.of(request, http: http, now: now)
    }
}

/// The outcome of a plain HTTP delivery (webhook, ntfy), by status.
enum HTTPOutcome {
    static func of(_ request: HTTPRequest, http: HTTPClient, now: Date) async -> DeliveryOutcome {
        let response: HTTPResponse
        do {
            response = try await http.send(request)
        } catch {
            return .retry(status: nil, error: error.description, after: nil)
        }
        let status = response.status
        let detail = String(decoding: response.body.prefix(200), as: UTF8.self)
        switch status {
        case 200..<300:
            return .sent(status: status)
        case 410:
            return .disableChannel(status: status, error: "HTTP 410 Gone: the endpoint asked for no more deliveries")
        case 408, 425, 429, 500..<600:
            return .retry(status: status, error: "HTTP \(status) \(detail)",
                          after: RetryPolicy.parseRetryAfter(response.header("retry-after"), now: now))
        default:
            return .failed(status: status, error: "HTTP \(status) \(detail)")
        }
    }
}
