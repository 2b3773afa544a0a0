import Bus
import Contracts
import Foundation
import NotifierCore
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("Channels: webhook, ntfy, APNs over real local receivers", .serialized)
struct ChannelTests {
    @Test("notify.send reaches the webhook signed per Standard Webhooks, lands in the inbox, and deliveries.list says sent")
    func webhookDelivery() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                try await world.addWebhook(receiver.url("/ok/a"))
                let record = try await world.call(Notifier.send, SendNotificationRequest(title: "Hello", body: "From the tutor", url: "https://example.com/x"))
                try await eventually("webhook received") { try await receiver.received("/ok/a").count == 1 }
                let request = try #require(try await receiver.received("/ok/a").first)
                let id = try #require(request.headers["webhook-id"])
                let timestamp = try #require(Int64(request.headers["webhook-timestamp"] ?? ""))
                #expect(abs(timestamp - Int64(Date().timeIntervalSince1970)) < 60)
                #expect(StandardWebhooks.verify(id: id, timestamp: timestamp, body: Data(request.body.utf8),
                                                signatureHeader: request.headers["webhook-signature"] ?? "", key: try StandardWebhooks.key(fromSecret: testSecret)))
                let payload = try WireCoding.decode(WebhookPayload.self, from: Data(request.body.utf8))
                #expect(payload.type == "notification.message")
                #expect(payload.data.id == record.id && payload.data.title == "Hello" && payload.deliveryId == id)
                try await eventually("delivery recorded as sent") { try await world.deliveries().first?.state == .sent }
                let delivery = try #require(try await world.deliveries().first)
                #expect(delivery.id == id && delivery.attempts == 1 && delivery.lastStatus == 200 && delivery.sentAt != nil)
                #expect(try await world.inbox().map(\.id) == [record.id])
            }
        }
    }

    @Test("timeouts, 429 and 5xx are retried with back-off honouring Retry-After, then delivered once")
    func webhookRetries() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                try await world.addWebhook(receiver.url("/seq/503,429:1,500,200/r"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Retry me", body: ""))
                try await eventually("delivered after retries", timeout: .seconds(15)) { try await world.deliveries().first?.state == .sent }
                let attempts = try await receiver.received("/seq/503,429:1,500,200/r")
                #expect(attempts.count == 4)
                #expect(Set(attempts.map { $0.headers["webhook-id"] ?? "" }).count == 1, "every attempt carries the same webhook-id")
                // The 429 said Retry-After: 1, so the third attempt came at least a second after the second.
                #expect(attempts[2].t_ns - attempts[1].t_ns >= 950_000_000)
                #expect(try await world.deliveries().first?.attempts == 4)
            }
        }
    }

    @Test("an attempt that times out is retried; a 404 fails at once; the last attempt gives up")
    func webhookTimeoutAndDrop() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: {
                $0.httpTimeout = .milliseconds(300)
                $0.maximumAttempts = 2
            })) { world in
                let slow = try await world.addWebhook(receiver.url("/slow/2000/s"))
                let missing = try await world.addWebhook(receiver.url("/seq/404/m"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Slow", body: ""))
                try await eventually("both deliveries end", timeout: .seconds(15)) {
                    let deliveries = try await world.deliveries()
                    return deliveries.count == 2 && deliveries.allSatisfy { $0.state == .failed }
                }
                let deliveries = try await world.deliveries()
                let timedOut = try #require(deliveries.first { $0.channelId == slow })
                #expect(timedOut.attempts == 2 && timedOut.lastError?.contains("timed out") == true)
                let refused = try #require(deliveries.first { $0.channelId == missing })
                #expect(refused.attempts == 1 && refused.lastStatus == 404)
            }
        }
    }

    @Test("a slow endpoint gets at most its share of concurrent deliveries; others are not held up")
    func perChannelLimit() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.maximumInFlightPerChannel = 2 })) { world in
                try await world.addWebhook(receiver.url("/slow/1500/s"))
                try await world.addWebhook(receiver.url("/ok/f"))
                for n in 1...6 { _ = try await world.call(Notifier.send, SendNotificationRequest(title: "N\(n)", body: "")) }
                try await eventually("the fast endpoint has all six") { try await receiver.received("/ok/f").count == 6 }
                #expect(try await receiver.received("/slow/1500/s").count <= 2, "two in flight to the slow one")
                try await eventually("the slow one gets all six in the end", timeout: .seconds(15)) { try await receiver.received("/slow/1500/s").count == 6 }
            }
        }
    }

    @Test("410 Gone disables the endpoint and tells the user in the inbox")
    func webhookGone() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                let channel = try await world.addWebhook(receiver.url("/seq/410/g"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "One", body: ""))
                try await eventually("channel disabled") {
                    try await world.call(Notifier.channelsList, Empty()).channels.first?.status == .disabled
                }
                #expect(try await world.deliveries().first?.state == .failed)
                let notice = try #require(try await world.inbox().first { $0.kind == .system })
                #expect(notice.title.contains("paused") && notice.body.contains("410"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Two", body: ""))
                try await eventually("second notification in the inbox") { try await world.inbox().contains { $0.title == "Two" } }
                #expect(try await receiver.received("/seq/410/g").count == 1, "nothing more is sent to a disabled endpoint")
                #expect(try await world.deliveries().filter { $0.channelId == channel }.count == 1)
            }
        }
    }

    @Test("an endpoint failing for days is disabled and the user told (injected clock)")
    func webhookFailingForDays() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            let clock = ManualWallClock(Date(timeIntervalSince1970: 1_795_000_000))
            try await withWorld(NotifierWorld.start(settings: {
                $0.maximumAttempts = 100
                $0.retryBase = .seconds(3600)
                $0.retryMaximum = .seconds(6 * 3600)
                $0.wallClock = clock
            })) { world in
                try await world.addWebhook(receiver.url("/seq/500/d"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Anyone there?", body: ""))
                var attempts = 0
                while try await world.call(Notifier.channelsList, Empty()).channels.first?.status == .active {
                    attempts += 1
                    try await eventually("attempt \(attempts)") { try await receiver.received("/seq/500/d").count >= attempts }
                    try await eventually("attempt \(attempts) recorded") {
                        let state = try await world.deliveries().first?.state
                        return state == .pending || state == .failed
                    }
                    clock.advance(by: 6 * 3600)
                    #expect(attempts < 40)
                    if attempts >= 40 { break }
                }
                let channel = try #require(try await world.call(Notifier.channelsList, Empty()).channels.first)
                #expect(channel.status == .disabled && channel.disabledReason?.contains("failing since") == true)
                #expect(attempts >= 20, "5 days at one attempt per 6 hours")
                let notice = try #require(try await world.inbox().first { $0.kind == .system })
                #expect(notice.body.contains("HTTP 500"))
            }
        }
    }

    @Test("an endpoint that refuses every delivery (404, not retried) for days is disabled too, and the user told")
    func webhookRefusingForDays() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            let clock = ManualWallClock(Date(timeIntervalSince1970: 1_795_000_000))
            try await withWorld(NotifierWorld.start(settings: { $0.wallClock = clock })) { world in
                try await world.addWebhook(receiver.url("/seq/404/gone"))
                var sent = 0
                while try await world.call(Notifier.channelsList, Empty()).channels.first?.status == .active, sent < 20 {
                    sent += 1
                    _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Reminder \(sent)", body: ""))
                    try await eventually("delivery \(sent) failed") {
                        try await world.deliveries().filter { $0.state == .failed }.count == sent
                    }
                    clock.advance(by: 12 * 3600)
                }
                let channel = try #require(try await world.call(Notifier.channelsList, Empty()).channels.first)
                #expect(channel.status == .disabled && channel.disabledReason?.contains("failing since") == true)
                #expect(sent == 11, "the 11th refusal comes 5 days after the first")
                #expect(try await receiver.received("/seq/404/gone").count == sent, "each delivery tried once")
                let notice = try #require(try await world.inbox().first { $0.kind == .system })
                #expect(notice.body.contains("404"))
            }
        }
    }

    @Test("ntfy gets JSON with topic, title, priority, tags and click, with the access token")
    func ntfyPublish() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                let channel = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: receiver.url("/studybus-alerts"), token: "tk_secret"))
                #expect(channel.hasSecret)
                _ = try await world.call(Notifier.send, SendNotificationRequest(
                    title: "Cards ready", body: "12 new cards", priority: 4, url: "https://example.com/set/1", tags: ["tada"]))
                try await eventually("ntfy received") { try await receiver.received("/").count == 1 }
                let request = try #require(try await receiver.received("/").first)
                #expect(request.path == "/")
                #expect(request.headers["authorization"] == "Bearer tk_secret")
                let message = try JSONValue.parse(request.body)
                #expect(message["topic"] == .string("studybus-alerts") && message["title"] == .string("Cards ready"))
                #expect(message["message"] == .string("12 new cards") && message["priority"] == .int(4))
                #expect(message["tags"] == .array([.string("tada")]) && message["click"] == .string("https://example.com/set/1"))
                try await eventually("sent") { try await world.deliveries().first?.state == .sent }
            }
        }
    }

    @Test("ntfy: a 503 is retried, a 410 fails the delivery but keeps the channel (ntfy's 410 is no request to stop)")
    func ntfyRetries() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                let retried = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: receiver.url("/seq/503,200/alerts")))
                let refused = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: receiver.url("/seq/410/gone")))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Cards ready", body: "12 new cards"))
                try await eventually("both deliveries settled") {
                    let deliveries = try await world.deliveries()
                    return deliveries.count == 2 && deliveries.allSatisfy { $0.state == .sent || $0.state == .failed }
                }
                let deliveries = try await world.deliveries()
                let first = try #require(deliveries.first { $0.channelId == retried.id })
                #expect(first.state == .sent && first.attempts == 2)
                let second = try #require(deliveries.first { $0.channelId == refused.id })
                #expect(second.state == .failed && second.attempts == 1 && second.lastStatus == 410)
                #expect(try await world.call(Notifier.channelsList, Empty()).channels.allSatisfy { $0.status == .active })
                #expect(try await receiver.received("/seq/503,200").count == 2)
            }
        }
    }

    @Test("APNs: HTTP/2 with a verified ES256 provider token and the apns-* headers")
    func apnsDelivery() async throws {
        let directory = try temporaryDirectory()
        try await withWorld(APNsReceiver(directory: directory)) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.apns = receiver.configuration })) { world in
                let token = deviceToken("0001")
                _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .apns, deviceToken: token))
                try world.timers.publish("timer.completed", Payloads.timerCompleted("t-apns", user: "u1", label: "Pasta"), user: "u1")
                try await eventually("first alarm pushed") { try await receiver.received().count >= 1 }
                let request = try #require(try await receiver.received().first)
                #expect(request.path == "/3/device/\(token)")
                #expect(request.claims?["iss"] == .string("TEAM123456") && request.jwtHeader?["kid"] == .string("KEY1234567"))
                #expect(request.jwtHeader?["alg"] == .string("ES256"))
                #expect(request.headers["apns-push-type"] == "alert" && request.headers["apns-topic"] == "com.example.quicklabeltimer")
                #expect(request.headers["apns-priority"] == "10" && request.headers["apns-collapse-id"] == "t-apns")
                #expect(UUID(uuidString: request.headers["apns-id"] ?? "") != nil)
                let expiration = try #require(Int64(request.headers["apns-expiration"] ?? ""))
                #expect(expiration > Int64(Date().timeIntervalSince1970))
                let body = try JSONValue.parse(request.body)
                #expect(body["notificationId"] == .string("t-apns_0"))
                #expect(body["aps"]?["alert"]?["title"] == .string("Pasta") && body["aps"]?["thread-id"] == .string("t-apns"))
                _ = try await world.call(Notifier.ack, AckRequest(timerId: "t-apns"))
            }
        }
    }

    @Test("APNs: 410 and 400 BadDeviceToken remove the device token, 429 and 500 are retried, PayloadTooLarge is dropped")
    func apnsErrors() async throws {
        let directory = try temporaryDirectory()
        try await withWorld(APNsReceiver(directory: directory)) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.apns = receiver.configuration })) { world in
                var channelOfSuffix: [String: String] = [:]
                for suffix in ["0410", "0400", "0429", "0500", "0413"] {
                    channelOfSuffix[suffix] = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .apns, name: suffix, deviceToken: deviceToken(suffix))).id
                }
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Check", body: "in"))
                try await eventually("every delivery settled") {
                    let deliveries = try await world.deliveries()
                    return deliveries.count == 5 && deliveries.allSatisfy { $0.state == .sent || $0.state == .failed }
                }
                let channels = try await world.call(Notifier.channelsList, Empty()).channels
                #expect(Set(channels.map(\.name)) == ["0429", "0500", "0413"], "the unregistered and the bad token were removed")
                let byName = Dictionary(uniqueKeysWithValues: try await world.deliveries().map { delivery in
                    (channelOfSuffix.first { $0.value == delivery.channelId }?.key ?? "?", delivery)
                })
                #expect(byName["0410"]?.state == .failed && byName["0410"]?.lastError?.contains("Unregistered") == true)
                #expect(byName["0400"]?.state == .failed && byName["0400"]?.lastError?.contains("BadDeviceToken") == true)
                #expect(byName["0429"]?.state == .sent && byName["0429"]?.attempts == 2)
                #expect(byName["0500"]?.state == .sent && byName["0500"]?.attempts == 2)
                #expect(byName["0413"]?.state == .failed && byName["0413"]?.attempts == 1 && byName["0413"]?.lastStatus == 413)
            }
        }
    }

    @Test("APNs provider tokens are reused, re-signed after the refresh age, and re-signed on ExpiredProviderToken")
    func apnsTokenRefresh() async throws {
        let directory = try temporaryDirectory()
        try await withWorld(APNsReceiver(directory: directory)) { receiver in
            let clock = ManualWallClock(Date())
            try await withWorld(NotifierWorld.start(settings: {
                $0.apns = receiver.configuration
                $0.wallClock = clock
            })) { world in
                _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .apns, deviceToken: deviceToken("0001")))
                func iats() async throws -> [Int64] { try await receiver.received().compactMap { $0.claims?["iat"]?.intValue } }
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "1", body: ""))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "2", body: ""))
                try await eventually("two pushes") { try await iats().count == 2 }
                #expect(Set(try await iats()).count == 1, "one token for both")
                clock.advance(by: 51 * 60)
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "3", body: ""))
                try await eventually("third push") { try await iats().count == 3 }
                let third = try await iats()
                #expect(third[2] - third[0] >= 51 * 60, "a token 51 minutes old is re-signed (default refresh 50 minutes)")
                // Apple calls the current token expired: once it is 20 minutes old it is re-signed and the push retried.
                clock.advance(by: 21 * 60)
                _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .apns, deviceToken: deviceToken("0403")))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "4", body: ""))
                try await eventually("retried with a new token") {
                    clock.advance(by: 1)  // the retry is scheduled on the injected clock
                    return try await world.deliveries().filter { $0.state == .sent }.count == 5
                }
                let expired = try await receiver.received().filter { $0.path.hasSuffix("0403") }
                #expect(expired.count == 2 && expired[0].claims?["iat"] != expired[1].claims?["iat"])
            }
        }
    }
}
