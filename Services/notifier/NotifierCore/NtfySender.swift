import Bus
import Contracts
import Foundation
import HTTPClient
import Wire

/// Publishes to ntfy topics with ntfy's JSON publishing: a POST to the server's root URL with
/// `topic`, `message`, `title`, `priority` (1–5), `tags` and `click`.
struct NtfySender: ChannelSender {
    let http: HTTPClient
    let limits: DeliveryLimits

    /// The JSON ntfy publishes from.
    struct Message: Codable, Equatable {
        var topic: String
        var message: String
        var title: String
        var priority: Int
        var tags: [String]
        var click: String?
    }

    /// Splits a topic URL `https://ntfy.sh/my-topic` into the server root and the topic.
    static func split(topicURL: String) -> (root: String, topic: String)? {
        guard let url = URL(string: topicURL), let scheme = url.scheme, scheme == "http" || scheme == "https", url.host != nil else { return nil }
        let topic = url.lastPathComponent
        guard !topic.isEmpty, topic != "/" else { return nil }
        var root = topicURL
        root.removeLast(topic.count)
        return (root, topic)
    }

    func send(_ job: DeliveryJob, now: Date) async -> DeliveryOutcome {
        guard let url = job.channel.url, let (root, topic) = Self.split(topicURL: url) else {
            return .failed(status: nil, error: "the ntfy channel has no usable topic URL")
        }
        let notification = job.notification
        let message = Message(
            topic: topic, message: notification.body, title: notification.title, priority: min(max(notification.priority, 1), 5),
            tags: notification.tags, click: notification.url)
        guard let body = try? WireCoding.encode(message) else { return .failed(status: nil, error: "cannot encode the message") }
        var headers: [(name: String, value: String)] = [("content-type", "application/json"), ("x-message-id", job.deliveryId)]
        if let token = job.channel.token { headers.append(("authorization", "Bearer \(token)")) }
        let request = limits.post(url: root, headers: headers, body: body)
        let outcome = await HTTPOutcome.of(request, http: http, now: now)
        // ntfy answers 410 for nothing a user chose; treat it as any other refusal, not a request to stop.
        if case .disableChannel(let status, let error) = outcome { return .failed(status: status, error: error) }
        return outcome
    }
}
