import Bus
import Crypto
import Foundation
import HTTPClient
@testable import NotifierCore
import ServiceKit
import Testing
import Wire

@Suite("Signing, quiet hours, retry policy, APNs reasons")
struct UnitTests {
    @Test("webhook signatures match the Standard Webhooks specification's known-answer vector")
    func standardWebhooksVector() throws {
        let key = try StandardWebhooks.key(fromSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let body = Data(#"{"test": 2432232314}"#.utf8)
        let signature = StandardWebhooks.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: body, key: key)
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(StandardWebhooks.verify(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: body,
                                        signatureHeader: "v1,bm90IGl0 " + signature, key: key))
        #expect(!StandardWebhooks.verify(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_331, body: body, signatureHeader: signature, key: key))
    }

    @Test("webhook secrets must be whsec_ and base64 of 24 to 64 bytes")
    func secretFormat() throws {
        #expect(throws: BusError.self) { try StandardWebhooks.key(fromSecret: "whsec_c2hvcnQ=") }
        #expect(throws: BusError.self) { try StandardWebhooks.key(fromSecret: "whsec_not base64!") }
        let fresh = StandardWebhooks.newSecret()
        #expect(fresh.hasPrefix("whsec_"))
        _ = try StandardWebhooks.key(fromSecret: fresh)
    }

    private func window(_ start: String, _ end: String, _ zone: String) throws -> QuietWindow {
        QuietWindow(startMinute: try QuietWindow.minute(of: start, field: "start"), endMinute: try QuietWindow.minute(of: end, field: "end"),
                    timeZone: TimeZone(identifier: zone)!)
    }

    private func utc(_ text: String) -> Date { try! WireCoding.decode(Date.self, from: Data("\"\(text)\"".utf8)) }

    @Test("a window that wraps midnight holds until its end on the next local morning")
    func wrapsMidnight() throws {
        let quiet = try window("22:00", "07:00", "Europe/Berlin")
        // 23:30 in Berlin (CET, UTC+1) is inside; it ends at 07:00 local = 06:00Z.
        #expect(quiet.end(containing: utc("2026-01-15T22:30:00.000Z")) == utc("2026-01-16T06:00:00.000Z"))
        // 05:00 local, after midnight, is inside too and ends the same morning.
        #expect(quiet.end(containing: utc("2026-01-16T04:00:00.000Z")) == utc("2026-01-16T06:00:00.000Z"))
        // 07:00 local exactly is outside (the end is exclusive), as is 21:59.
        #expect(quiet.end(containing: utc("2026-01-16T06:00:00.000Z")) == nil)
        #expect(quiet.end(containing: utc("2026-01-16T20:59:00.000Z")) == nil)
    }

    @Test("on DST days the end is the local end time: 8 hours in spring, 10 in autumn (Berlin)")
    func dstDays() throws {
        let quiet = try window("22:00", "07:00", "Europe/Berlin")
        // Night of 28–29 March 2026: clocks go 02:00 -> 03:00; 07:00 CEST is 05:00Z.
        #expect(quiet.end(containing: utc("2026-03-28T21:30:00.000Z")) == utc("2026-03-29T05:00:00.000Z"))
        // Night of 24–25 October 2026: clocks go 03:00 -> 02:00; 07:00 CET is 06:00Z.
        #expect(quiet.end(containing: utc("2026-10-24T20:30:00.000Z")) == utc("2026-10-25T06:00:00.000Z"))
    }

    @Test("an end inside the skipped hour moves to the first minute that exists (New York)")
    func skippedEnd() throws {
        let quiet = try window("23:00", "02:30", "America/New_York")
        // 8 March 2026: 02:00 EST jumps to 03:00 EDT, so 02:30 does not exist; the window ends at 03:00 EDT = 07:00Z.
        #expect(quiet.end(containing: utc("2026-03-08T05:00:00.000Z")) == utc("2026-03-08T07:00:00.000Z"))
    }

    @Test("a window within one day, in another zone, and the same instant in two zones")
    func sameDayWindow() throws {
        let quiet = try window("13:00", "15:00", "Asia/Tokyo")
        #expect(quiet.end(containing: utc("2026-06-01T04:30:00.000Z")) == utc("2026-06-01T06:00:00.000Z"))  // 13:30 JST
        #expect(quiet.end(containing: utc("2026-06-01T06:30:00.000Z")) == nil)  // 15:30 JST
        let berlin = try window("13:00", "15:00", "Europe/Berlin")
        #expect(berlin.end(containing: utc("2026-06-01T04:30:00.000Z")) == nil)  // 06:30 CEST
        #expect(throws: BusError.self) { try QuietWindow.minute(of: "24:00", field: "quietHours.start") }
        #expect(throws: BusError.self) { try QuietWindow.minute(of: "7:00", field: "quietHours.start") }
    }

    @Test("back-off doubles per attempt within jitter, is capped, and Retry-After wins")
    func backoff() {
        let policy = RetryPolicy(base: .seconds(1), maximum: .seconds(60), maximumAttempts: 10)
        for attempt in 1...8 {
            let expected = min(Double(1 << (attempt - 1)), 60)
            let delay = policy.delay(afterAttempt: attempt, retryAfter: nil)
            #expect(delay >= .seconds(expected / 2) && delay <= .seconds(expected))
        }
        let delays = Set((0..<20).map { _ in policy.delay(afterAttempt: 5, retryAfter: nil) })
        #expect(delays.count > 1, "jitter spreads retries")
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(120)) == .seconds(120))
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        #expect(RetryPolicy.parseRetryAfter("7", now: now) == .seconds(7))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(RetryPolicy.parseRetryAfter(formatter.string(from: now.addingTimeInterval(30)), now: now) == .seconds(30))
        #expect(RetryPolicy.parseRetryAfter("soon", now: now) == nil)
    }

    @Test("Retry-After from an answer is range-checked: digits saturate at a day, dates in all three forms, junk is nil")
    func hostileRetryAfter() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        let day = Duration.seconds(86_400)
        #expect(RetryPolicy.parseRetryAfter("86401", now: now) == day)
        #expect(RetryPolicy.parseRetryAfter("9223372036854775807", now: now) == day)
        #expect(RetryPolicy.parseRetryAfter(String(repeating: "9", count: 100), now: now) == day)
        #expect(RetryPolicy.parseRetryAfter(" 0 ", now: now) == .zero)
        for junk in ["-1", "+5", "1e9", "1.5", "0x10", "5 s", "", String(repeating: "9", count: 101), "Sun, 06 Nov 1994 08:49:37 UTC",
                     "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 99999 08:49:37 GMT",
                     "Sun, 06 Nov 0000 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 6 Nov 1994 8:49:37 GMT"] {
            #expect(RetryPolicy.parseRetryAfter(junk, now: now) == nil, "\(junk)")
        }
        #expect(RetryPolicy.parseRetryAfter("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == .seconds(60))
        #expect(RetryPolicy.parseRetryAfter("Sunday, 06-Nov-94 08:50:37 GMT", now: now) == .seconds(60))
        #expect(RetryPolicy.parseRetryAfter("Sun Nov  6 08:50:37 1994", now: now) == .seconds(60))
        #expect(RetryPolicy.parseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == day)
        #expect(RetryPolicy.parseRetryAfter("Mon, 01 Jan 0001 00:00:00 GMT", now: now) == .zero, "the past is now")
        #expect(HTTPDate.secondsSince1970("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.secondsSince1970("Tue, 29 Feb 2000 12:00:00 GMT") == 951_825_600)
        #expect(HTTPDate.secondsSince1970("Mon, 01 Jan 0001 00:00:00 GMT") == -62_135_596_800)
        #expect(HTTPDate.secondsSince1970("Fri, 31 Dec 9999 23:59:59 GMT") == 253_402_300_799)
        #expect(HTTPDate.secondsSince1970("Thu, 29 Feb 1900 00:00:00 GMT") == nil, "1900 was no leap year")
    }

    @Test("APNs reasons map to retry, drop, remove the token, or refresh credentials")
    func apnsReasons() {
        #expect(APNsSender.action(status: 410, reason: "Unregistered") == .removeToken)
        #expect(APNsSender.action(status: 400, reason: "BadDeviceToken") == .removeToken)
        #expect(APNsSender.action(status: 400, reason: "DeviceTokenNotForTopic") == .removeToken)
        #expect(APNsSender.action(status: 403, reason: "ExpiredProviderToken") == .refreshCredentials)
        #expect(APNsSender.action(status: 403, reason: "InvalidProviderToken") == .refreshCredentials)
        #expect(APNsSender.action(status: 429, reason: "TooManyRequests") == .retry)
        #expect(APNsSender.action(status: 500, reason: "InternalServerError") == .retry)
        #expect(APNsSender.action(status: 503, reason: "ServiceUnavailable") == .retry)
        #expect(APNsSender.action(status: 413, reason: "PayloadTooLarge") == .drop)
        #expect(APNsSender.action(status: 400, reason: "BadCollapseId") == .drop)
        let id = APNsSender.apnsID(for: "t1_0.ch_1")
        #expect(id == APNsSender.apnsID(for: "t1_0.ch_1"))
        #expect(UUID(uuidString: id) != nil)
        #expect(id != APNsSender.apnsID(for: "t1_1.ch_1"))
        #expect(APNsSender.reason(in: Data(#"{"reason":"BadDeviceToken"}"#.utf8)) == "BadDeviceToken")
        #expect(APNsSender.reason(in: Data(#"{"reason":"<script>\u001b[2J"}"#.utf8)) == nil)
        #expect(APNsSender.reason(in: Data(("{\"reason\":\"" + String(repeating: "A", count: 65) + "\"}").utf8)) == nil)
        #expect(APNsSender.reason(in: Data("not json".utf8)) == nil)
    }

    @Test("ntfy topic URLs split into the server root and the topic")
    func ntfyTopics() {
        #expect(NtfySender.split(topicURL: "https://ntfy.sh/my-topic")! == ("https://ntfy.sh/", "my-topic"))
        #expect(NtfySender.split(topicURL: "http://127.0.0.1:8080/sub/path/alerts")! == ("http://127.0.0.1:8080/sub/path/", "alerts"))
        #expect(NtfySender.split(topicURL: "https://ntfy.sh/") == nil)
        #expect(NtfySender.split(topicURL: "ftp://x/y") == nil)
    }

    @Test("reminder wording encourages and never blames")
    func wording() {
        let texts = [Wording.reviewDue(dueCount: 12), Wording.habitDue(taskName: "Read 10 pages", systemName: "Reading", identity: "a Consistent Reader"),
                     Wording.habitDue(taskName: "Run", systemName: nil, identity: nil), Wording.testDue(testName: "5k run"),
                     Wording.reminderBatch(titles: ["a", "b"])]
        for (title, body) in texts {
            let text = (title + " " + body).lowercased()
            for word in ["missed", "failed", "behind", "overdue", "lazy", "should have"] { #expect(!text.contains(word), "\(text)") }
        }
    }

    @Test("the settings come from DATA_DIR and NOTIFIER_*; a value out of range names its variable")
    func configurationFromEnvironment() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try NotifierConfiguration(environment: Environment([
            "DATA_DIR": directory.path, "NOTIFIER_ALARM_INTERVAL_MS": "2500", "NOTIFIER_MAX_IN_FLIGHT": "8",
        ]))
        #expect(configuration.databaseURL == directory.appending(path: "notifier.sqlite"))
        #expect(configuration.alarmInterval == .milliseconds(2500) && configuration.maximumInFlight == 8)
        #expect(configuration.maximumAttempts == 24 && configuration.apns == nil)
        let error = #expect(throws: BusError.self) {
            _ = try NotifierConfiguration(environment: Environment(["DATA_DIR": directory.path, "NOTIFIER_MAX_ATTEMPTS": "0"]))
        }
        #expect(error?.code == .invalidArgument && error?.message.contains("NOTIFIER_MAX_ATTEMPTS") == true)
        #expect(configuration.allowedNetworks.isEmpty && configuration.httpMaximumResponseBytes == 4096, "public addresses only by default")
    }

    @Test("NOTIFIER_ALLOWED_NETWORKS lists CIDRs; anything else names the variable")
    func allowedNetworksSetting() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try NotifierConfiguration(environment: Environment([
            "DATA_DIR": directory.path, "NOTIFIER_ALLOWED_NETWORKS": "10.0.0.0/8, fd00::/8 192.168.1.20",
        ]))
        #expect(configuration.allowedNetworks.map(\.description) == ["10.0.0.0/8", "fd00::/8", "192.168.1.20/32"])
        let many = Array(repeating: "10.0.0.0/8", count: 101).joined(separator: ",")
        for bad in ["localhost", "10.0.0.0/33", "10.0.0.0/8;rm", "*", many] {
            let error = #expect(throws: BusError.self) {
                _ = try NotifierConfiguration(environment: Environment(["DATA_DIR": directory.path, "NOTIFIER_ALLOWED_NETWORKS": bad]))
            }
            #expect(error?.code == .invalidArgument && error?.message.contains("NOTIFIER_ALLOWED_NETWORKS") == true)
        }
    }
}
