import Bus
import Contracts
import Foundation
import NotifierCore
import TestSupport
import Testing
import Wire

@Suite("Alarm flags: the timer's sound and vibration reach each channel", .serialized)
struct AlarmFlagTests {
    /// Timers with both flags on, sound only, and both off.
    static let timers: [(id: String, sound: Bool, vibration: Bool)] = [("t-loud", true, true), ("t-sound", true, false), ("t-quiet", false, false)]

    @Test("webhook data and the inbox carry isSoundOn and isVibrationOn; ntfy priority is 5, 3 or 2 by them")
    func webhookAndNtfy() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                try await world.addWebhook(receiver.url("/ok/flags"))
                _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: receiver.url("/alarms")))
                for timer in Self.timers {
                    try world.timers.publish("timer.completed", Payloads.timerCompleted(timer.id, user: "u1", label: timer.id, sound: timer.sound, vibration: timer.vibration), user: "u1")
                }
                try await eventually("each timer's first ring on both channels") {
                    let all = try await receiver.received("/")
                    return all.filter { $0.path == "/" }.count >= 3 && all.filter { $0.path == "/ok/flags" }.count >= 3
                }
                for timer in Self.timers { _ = try await world.call(Notifier.ack, AckRequest(timerId: timer.id)) }
                let hooks = try await receiver.received("/ok/flags").map { try WireCoding.decode(WebhookPayload.self, from: Data($0.body.utf8)).data }
                let pushes = try await receiver.received("/").filter { $0.path == "/" }.map { try JSONValue.parse($0.body) }
                for timer in Self.timers {
                    let data = try #require(hooks.first { $0.timerId == timer.id })
                    #expect(data.isSoundOn == timer.sound && data.isVibrationOn == timer.vibration, "\(timer.id)")
                    // ntfy carries no timer id: each timer is labelled with its id, the alarm's title.
                    let push = try #require(pushes.first { $0["title"] == .string(timer.id) })
                    #expect(push["priority"] == .int(timer.vibration ? 5 : timer.sound ? 3 : 2), "\(timer.id)")
                }
                let inbox = try await world.inbox().filter { $0.kind == .alarm }
                #expect(inbox.allSatisfy { record in Self.timers.contains { $0.id == record.timerId && $0.sound == record.isSoundOn && $0.vibration == record.isVibrationOn } })
                #expect(Set(inbox.map(\.priority)) == [5, 3, 2])
                // Other kinds do not carry the flags.
                let message = try await world.call(Notifier.send, SendNotificationRequest(title: "Hello", body: ""))
                #expect(message.isSoundOn == nil && message.isVibrationOn == nil)
            }
        }
    }

    @Test("APNs: an alarm is time-sensitive while it rings or vibrates, passive with both off; sound only with sound on")
    func apns() async throws {
        let directory = try temporaryDirectory()
        try await withWorld(APNsReceiver(directory: directory)) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.apns = receiver.configuration })) { world in
                _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .apns, deviceToken: deviceToken("0001")))
                for timer in Self.timers {
                    try world.timers.publish("timer.completed", Payloads.timerCompleted(timer.id, user: "u1", label: timer.id, sound: timer.sound, vibration: timer.vibration), user: "u1")
                }
                func first(_ timerId: String) async throws -> JSONValue? {
                    try await receiver.received().map { try JSONValue.parse($0.body) }.first { $0["aps"]?["thread-id"] == .string(timerId) }
                }
                try await eventually("each timer's first ring") {
                    for timer in Self.timers where try await first(timer.id) == nil { return false }
                    return true
                }
                for timer in Self.timers { _ = try await world.call(Notifier.ack, AckRequest(timerId: timer.id)) }
                let loud = try #require(try await first("t-loud"))
                #expect(loud["aps"]?["interruption-level"] == .string("time-sensitive") && loud["aps"]?["sound"] == .string("default"))
                let soundOnly = try #require(try await first("t-sound"))
                #expect(soundOnly["aps"]?["interruption-level"] == .string("time-sensitive") && soundOnly["aps"]?["sound"] == .string("default"))
                let quiet = try #require(try await first("t-quiet"))
                #expect(quiet["aps"]?["interruption-level"] == .string("passive") && quiet["aps"]?["sound"] == nil)
            }
        }
    }
}
