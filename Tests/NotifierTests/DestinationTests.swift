import Bus
import Contracts
import Foundation
import HTTPClient
import NotifierCore
import ServiceKit
import TestSupport
import Testing
import Wire

/// Outbound requests users aim: where webhooks and ntfy topics may lead, what of the answer is
/// read, and what the user reads back — through the real notifier, its HTTP client and a local
/// receiver.
@Suite("Destinations: non-public addresses refused at connect time, answers never echoed", .serialized)
struct DestinationTests {
    /// Waits until `user`'s deliveries have all ended; returns them by channel id.
    func settled(_ world: NotifierWorld, user: String, count: Int) async throws -> [String: Delivery] {
        try await eventually("\(count) deliveries of \(user) settled") {
            let deliveries = try await world.deliveries(user: user)
            return deliveries.count == count && deliveries.allSatisfy { $0.state == .failed || $0.state == .sent }
        }
        return Dictionary(uniqueKeysWithValues: try await world.deliveries(user: user).map { ($0.channelId, $0) })
    }

    @Test("without NOTIFIER_ALLOWED_NETWORKS, webhooks and ntfy on loopback in any spelling fail at once, classified; the receiver sees nothing")
    func loopbackRefused() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.allowedNetworks = [] })) { world in
                let port = receiver.server.port
                let spellings: [(host: String, reason: String)] = [
                    ("127.0.0.1", "loopback"), ("localhost", "loopback"), ("127.1", "loopback"), ("2130706433", "loopback"), ("0x7f.1", "loopback"),
                    ("0177.0.0.1", "loopback"), ("[::1]", "loopback"), ("[::ffff:127.0.0.1]", "loopback"), ("[::ffff:7f00:1]", "loopback"),
                    ("0", "unspecified"), ("0.0.0.0", "unspecified"),
                ]
                var expected: [String: String] = [:]
                for (host, reason) in spellings {
                    expected[try await world.addWebhook("http://\(host):\(port)/ok/in")] = "destination not allowed: \(reason) address"
                }
                for host in ["localhost", "[::ffff:127.0.0.1]"] {
                    let channel = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: "http://\(host):\(port)/alerts"))
                    expected[channel.id] = "destination not allowed: loopback address"
                }
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Scan", body: ""))
                let deliveries = try await settled(world, user: "u1", count: expected.count)
                for (channel, reason) in expected {
                    let delivery = try #require(deliveries[channel])
                    #expect(delivery.state == .failed && delivery.attempts == 1 && delivery.lastStatus == nil, "\(delivery)")
                    #expect(delivery.lastError == reason, "\(delivery)")
                }
                #expect(try await receiver.received().isEmpty, "nothing was sent to the refused destination")
                #expect(try await world.client.call(Reserved.health("notifier"), Empty()).status == .serving)
            }
        }
    }

    @Test("private ranges, carrier-grade NAT, link-local and the cloud metadata address are refused the same way")
    func privateRangesRefused() async throws {
        try await withWorld(NotifierWorld.start(settings: { $0.allowedNetworks = [] })) { world in
            let targets: [(url: String, reason: String)] = [
                ("http://169.254.169.254/latest/meta-data/iam/", "link-local"), ("http://[fe80::1]/", "link-local"),
                ("http://[::ffff:169.254.169.254]/", "link-local"), ("http://10.0.0.1:5432/", "private"), ("http://172.16.0.1/", "private"),
                ("http://192.168.1.1/admin", "private"), ("http://100.64.0.1/", "private"), ("http://[fd00::1]:8080/", "private"),
                ("https://[fc00::1]/", "private"), ("http://224.0.0.1/", "multicast"),
            ]
            var expected: [String: String] = [:]
            for (url, reason) in targets { expected[try await world.addWebhook(url)] = "destination not allowed: \(reason) address" }
            let ntfy = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: "http://10.1.2.3/alerts"))
            expected[ntfy.id] = "destination not allowed: private address"
            let started = ContinuousClock.now
            _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Scan", body: ""))
            let deliveries = try await settled(world, user: "u1", count: expected.count)
            for (channel, reason) in expected {
                let delivery = try #require(deliveries[channel])
                #expect(delivery.state == .failed && delivery.attempts == 1 && delivery.lastError == reason, "\(delivery)")
            }
            // A connection attempt to these would wait for the connect timeout (3 s here) or be
            // retried after a network error; refused, they end in one attempt straight away.
            #expect(ContinuousClock.now - started < .seconds(20))
        }
    }

    @Test("an operator's NOTIFIER_ALLOWED_NETWORKS lets a network through, and only that network")
    func allowedNetwork() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.allowedNetworks = [IPNetwork("127.0.0.1/32")!] })) { world in
                let allowed = try await world.addWebhook("http://localhost:\(receiver.server.port)/ok/allowed")
                let other = try await world.addWebhook("http://127.0.0.2:\(receiver.server.port)/ok/other")
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Hi", body: ""))
                let deliveries = try await settled(world, user: "u1", count: 2)
                #expect(deliveries[allowed]?.state == .sent)
                #expect(deliveries[other]?.lastError == "destination not allowed: loopback address")
                #expect(try await receiver.received().map(\.path) == ["/ok/allowed"])
            }
        }
    }

    @Test("lastError holds the status, never the answer's body; a redirect is not followed")
    func answersNotEchoed() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.maximumAttempts = 1 })) { world in
                let failing = try await world.addWebhook(receiver.url("/leak/500/a"))
                let missing = try await world.addWebhook(receiver.url("/leak/404/b"))
                let moved = try await world.addWebhook(receiver.url("/leak/302/c"))
                let ntfy = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: receiver.url("/leak/401/topic")))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Read me back", body: ""))
                let deliveries = try await settled(world, user: "u1", count: 4)
                #expect(deliveries[failing]?.lastError == "HTTP 500 (gave up after 1 attempts)")
                #expect(deliveries[missing]?.lastError == "HTTP 404" && deliveries[missing]?.lastStatus == 404)
                #expect(deliveries[moved]?.lastError == "HTTP 302: redirects are not followed")
                #expect(deliveries[ntfy.id]?.lastStatus == 401)
                let everything = String(decoding: try WireCoding.encode(try await world.deliveries()), as: UTF8.self)
                    + String(decoding: try WireCoding.encode(try await world.inbox()), as: UTF8.self)
                #expect(!everything.contains("hunter2") && !everything.contains("internal-only"))
                #expect(try await receiver.received("/ok/redirected").isEmpty, "the Location was not followed")
            }
        }
    }

    @Test("an answer that never ends is cut at the cap (the delivery is sent, not timed out); no compression is asked for")
    func answerCapped() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                try await world.addWebhook(receiver.url("/endless/e"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Big answer", body: ""))
                let delivery = try #require(try await settled(world, user: "u1", count: 1).values.first)
                // Reading on would run into the 3 s timeout and a retry.
                #expect(delivery.state == .sent && delivery.attempts == 1 && delivery.lastStatus == 200)
                let request = try #require(try await receiver.received("/endless/e").first)
                #expect(request.headers["accept-encoding"] == nil)
            }
        }
    }

    @Test("a hostile Retry-After (a 20-digit number, the year 9999) waits at most a day; the notifier stays up")
    func hostileRetryAfter() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                let huge = try await world.addWebhook(receiver.url("/seq/429:99999999999999999999,200/h"))
                let date = try await world.addWebhook(receiver.url("/seq/503:Fri%2C%2031%20Dec%209999%2023%3A59%3A59%20GMT,200/d"))
                let junk = try await world.addWebhook(receiver.url("/seq/503:-5,200/j"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Later", body: ""))
                try await eventually("the junk one retried at once") { try await world.deliveries().first { $0.channelId == junk }?.state == .sent }
                try await eventually("both others wait") {
                    try await world.deliveries().filter { [huge, date].contains($0.channelId) }.allSatisfy { $0.state == .pending && $0.attempts == 1 }
                }
                for delivery in try await world.deliveries() where [huge, date].contains(delivery.channelId) {
                    let wait = try #require(delivery.nextAttemptAt).timeIntervalSince(delivery.updatedAt)
                    #expect(wait > 86_000 && wait <= 86_400, "\(delivery)")
                }
                #expect(try await world.client.call(Reserved.health("notifier"), Empty()).status == .serving)
            }
        }
    }

    @Test("channels.add refuses URLs that are not plain http(s) with INVALID_ARGUMENT, and stores nothing")
    func registrationChecks() async throws {
        try await withWorld(NotifierWorld.start()) { world in
            let bad = [
                "ftp://example.com/hook", "file:///etc/passwd", "gopher://127.0.0.1:6379/_FLUSHALL", "javascript:alert(1)", "https://",
                "http://user:secret@example.com/hook", "https://token@example.com/hook", "http://exa mple.com/", "example.com/hook",
                "https://example.com/" + String(repeating: "x", count: 2000),
            ]
            for url in bad {
                for request in [AddChannelRequest(type: .webhook, url: url, secret: testSecret), AddChannelRequest(type: .ntfy, url: url)] {
                    let error = await #expect(throws: BusError.self) { _ = try await world.call(Notifier.channelsAdd, request) }
                    #expect(error?.code == .invalidArgument && error?.details?["field"] == .string("url"), "\(url): \(String(describing: error))")
                }
            }
            #expect(try await world.call(Notifier.channelsList, Empty()).channels.isEmpty)
            // Where a URL leads is judged at connect time: a loopback name is accepted here.
            _ = try await world.addWebhook("http://localhost:1/hook")
            #expect(try await world.call(Notifier.channelsList, Empty()).channels.count == 1)
        }
    }
}
