import Bus
import Contracts
import Foundation
import NotifierCore
import TestSupport
import Testing
import Wire

@Suite("Methods: validation, scoping, inbox paging, channels without secrets", .serialized)
struct APITests {
    @Test("bad input is INVALID_ARGUMENT naming the field; a missing user is refused")
    func validation() async throws {
        try await withWorld(NotifierWorld.start()) { world in
            func code(_ body: () async throws -> Void) async -> StatusCode? {
                do { try await body(); return nil } catch let error as BusError { return error.code } catch { return nil }
            }
            func message(_ body: () async throws -> Void) async -> String {
                do { try await body(); return "" } catch let error as BusError { return error.message } catch { return "" }
            }
            #expect(await message { _ = try await world.call(Notifier.send, SendNotificationRequest(title: "  ", body: "")) }.contains("'title'"))
            #expect(await message { _ = try await world.call(Notifier.send, SendNotificationRequest(title: "x", body: "", priority: 9)) }.contains("'priority'"))
            #expect(await message { _ = try await world.call(Notifier.send, SendNotificationRequest(title: "x", body: "", kind: .alarm)) }.contains("'kind'"))
            #expect(await message { _ = try await world.call(Notifier.send, SendNotificationRequest(title: "x", body: "", url: "javascript:x")) }.contains("'url'"))
            #expect(await message { _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .webhook, url: "https://e.x/h")) }.contains("'secret'"))
            #expect(await message { _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .webhook, url: "https://e.x/h", secret: "whsec_c2hvcnQ=")) }.contains("'secret'"))
            #expect(await message { _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .ntfy, url: "https://ntfy.sh/")) }.contains("'url'"))
            #expect(await code { _ = try await world.call(Notifier.channelsAdd, AddChannelRequest(type: .apns, deviceToken: deviceToken("1"))) } == .failedPrecondition)
            #expect(await message { _ = try await world.call(Notifier.preferencesSet, SetPreferencesRequest(timeZone: "Mars/Olympus")) }.contains("'timeZone'"))
            #expect(await message { _ = try await world.call(Notifier.preferencesSet, SetPreferencesRequest(quietHours: QuietHours(start: "22:00", end: "7"))) }.contains("'quietHours.end'"))
            #expect(await message { _ = try await world.call(Notifier.ack, AckRequest()) }.contains("'timerId'"))
            #expect(await message { _ = try await world.call(Notifier.inboxList, InboxListRequest(limit: 0)) }.contains("'limit'"))
            #expect(await message { _ = try await world.call(Notifier.inboxList, InboxListRequest(pageToken: "nonsense")) }.contains("'pageToken'"))
            #expect(await code { _ = try await world.client.call(Notifier.channelsList, Empty()) } == .invalidArgument)
        }
    }

    @Test("channels are per user, never show secrets, and another user's channel is NOT_FOUND")
    func channelsScoped() async throws {
        try await withWorld(NotifierWorld.start()) { world in
            let id = try await world.addWebhook("https://example.com/hook")
            let listed = try await world.call(Notifier.channelsList, Empty())
            #expect(listed.channels.count == 1 && listed.channels[0].hasSecret && listed.channels[0].url == "https://example.com/hook")
            let json = String(decoding: try WireCoding.encode(listed), as: UTF8.self)
            #expect(!json.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "the secret never leaves the service")
            #expect(try await world.call(Notifier.channelsList, Empty(), user: "u2").channels.isEmpty)
            await #expect(throws: BusError.self) { _ = try await world.call(Notifier.channelsRemove, ChannelRef(id: id), user: "u2") }
            _ = try await world.call(Notifier.channelsRemove, ChannelRef(id: id))
            #expect(try await world.call(Notifier.channelsList, Empty()).channels.isEmpty)
        }
    }

    @Test("inbox.list shows unread first, newest first, in pages; markRead and the unread count agree")
    func inboxPaging() async throws {
        try await withWorld(NotifierWorld.start()) { world in
            var ids: [String] = []
            for n in 1...7 {
                ids.append(try await world.call(Notifier.send, SendNotificationRequest(title: "N\(n)", body: "")).id)
                try await eventually("N\(n) released") { try await world.inbox().count == n }
            }
            _ = try await world.call(Notifier.inboxMarkRead, MarkReadRequest(ids: [ids[6], ids[5]]))
            var seen: [String] = []
            var token: String?
            repeat {
                let page = try await world.call(Notifier.inboxList, InboxListRequest(limit: 3, pageToken: token))
                #expect(page.unreadCount == 5)
                seen += page.items.map(\.title)
                token = page.nextPageToken
            } while token != nil
            #expect(seen == ["N5", "N4", "N3", "N2", "N1", "N7", "N6"])
            #expect(try await world.call(Notifier.inboxList, InboxListRequest(unreadOnly: true), user: "u1").items.count == 5)
            #expect(try await world.inbox(user: "u2").isEmpty)
            let all = try await world.call(Notifier.inboxMarkRead, MarkReadRequest(all: true))
            #expect(all.updated == 5 && all.unreadCount == 0)
        }
    }

    @Test("notify.send under the same idempotency key creates one notification")
    func idempotentSend() async throws {
        try await withWorld(NotifierWorld.start()) { world in
            let first = try await world.call(Notifier.send, SendNotificationRequest(title: "Once", body: ""), idem: "k1")
            let second = try await world.call(Notifier.send, SendNotificationRequest(title: "Once", body: ""), idem: "k1")
            #expect(first.id == second.id)
            try await eventually("released") { try await world.inbox().count == 1 }
        }
    }

    @Test("kinds choose channels: a channel for alarms only gets no messages")
    func kindsRouting() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                try await world.addWebhook(receiver.url("/ok/alarms-only"), kinds: [.alarm])
                try await world.addWebhook(receiver.url("/ok/all"))
                _ = try await world.call(Notifier.send, SendNotificationRequest(title: "Message", body: ""))
                try await eventually("delivered to the catch-all") { try await receiver.received("/ok/all").count == 1 }
                #expect(try await receiver.received("/ok/alarms-only").isEmpty)
                #expect(try await world.deliveries().count == 1)
            }
        }
    }
}
