import Bus
import Contracts
import Foundation
import GRDB
import NotifierCore
import ServiceKit
import Storage
import TestSupport
import Testing
import Wire

@Suite("Events: timer alarms, reminders, materials, quiet hours, catch-up", .serialized)
struct EventTests {
    @Test("timer.completed rings 12 times as {timerId}_0…_11, the first at once, spaced by the interval")
    func alarmRepeats() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.alarmInterval = .milliseconds(150) })) { world in
                try await world.addWebhook(receiver.url("/ok/alarm"))
                try world.timers.publish("timer.completed", Payloads.timerCompleted("t1", user: "u1", label: "Tea"), user: "u1")
                // 1.8 s of repeats; the rest of the time is for a machine running every other suite too.
                try await eventually("12 alarms", timeout: .seconds(45)) { try await receiver.received("/ok/alarm").count == 12 }
                let received = try await receiver.received("/ok/alarm")
                let payloads = try received.map { try WireCoding.decode(WebhookPayload.self, from: Data($0.body.utf8)) }
                #expect(Set(payloads.map(\.data.id)) == Set((0..<12).map { "t1_\($0)" }))
                #expect(payloads.allSatisfy { $0.type == "notification.alarm" && $0.data.title == "Tea" && $0.data.timerId == "t1" })
                // Repeat i is due i intervals after the first, and never goes out before it is due. (Two
                // repeats may overlap in flight on a loaded machine, so arrival order is not asserted.)
                let due = payloads.map { $0.data.scheduledAt.unixMilliseconds }.sorted()
                #expect(zip(due.dropFirst(), due).allSatisfy { $0 - $1 == 150 }, "\(due)")
                #expect(zip(received, payloads).allSatisfy { $0.t_ns / 1_000_000 >= $1.data.scheduledAt.unixMilliseconds }, "no repeat before its time")
                #expect(Set(received.map { $0.headers["webhook-id"] ?? "" }).count == 12)
            }
        }
    }

    @Test("notify.ack for the timer stops the remaining repeats")
    func ackStopsAlarm() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.alarmInterval = .seconds(1) })) { world in
                try await world.addWebhook(receiver.url("/ok/ack"))
                try world.timers.publish("timer.completed", Payloads.timerCompleted("t2", user: "u1"), user: "u1")
                try await eventually("first alarm") { try await receiver.received("/ok/ack").count == 1 }
                let ack = try await world.call(Notifier.ack, AckRequest(timerId: "t2"))
                #expect(ack.cancelled == 11)
                try await Task.sleep(for: .milliseconds(1500))  // longer than one interval: a repeat would have come
                #expect(try await receiver.received("/ok/ack").count == 1)
                #expect(try await world.call(Notifier.ack, AckRequest(timerId: "t2"), user: "u2").cancelled == 0, "another user's timer is untouched")
            }
        }
    }

    @Test("timer.deleted between two repeats: nothing more is sent; stopped and restarted cancel the same way")
    func cancellationRace() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.alarmInterval = .milliseconds(600) })) { world in
                try await world.addWebhook(receiver.url("/ok/race"))
                for (timer, cancel) in [("t-del", "timer.deleted"), ("t-stop", "timer.stopped"), ("t-restart", "timer.restarted")] {
                    try world.timers.publish("timer.completed", Payloads.timerCompleted(timer, user: "u1"), user: "u1")
                    try await eventually("two repeats of \(timer)") {
                        try await receiver.received("/ok/race").filter { $0.body.contains("\"\(timer)_") }.count == 2
                    }
                    let payload = cancel == "timer.deleted" ? Payloads.timerDeleted(timer, user: "u1") : Payloads.timer(timer, user: "u1")
                    try world.timers.publish(cancel, payload, user: "u1")
                    try await eventually("\(timer) cancelled") {
                        try await world.database.pool.read { db in
                            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification WHERE timer_id = ? AND state = 'cancelled'", arguments: [timer])
                        } ?? 0 >= 9
                    }
                }
                try await Task.sleep(for: .milliseconds(1500))
                let received = try await receiver.received("/ok/race")
                for timer in ["t-del", "t-stop", "t-restart"] {
                    let count = received.filter { $0.body.contains("\"\(timer)_") }.count
                    #expect(count >= 2 && count <= 3, "\(timer): at most the repeat already in flight at the cancel, got \(count)")
                }
                let states = try await world.database.pool.read { db in
                    try String.fetchAll(db, sql: "SELECT DISTINCT state FROM notification WHERE timer_id IS NOT NULL AND state NOT IN ('released', 'cancelled')")
                }
                #expect(states.isEmpty)
            }
        }
    }

    @Test("a discard timer removed after it completed (reason discarded) keeps ringing all 12 times")
    func discardedTimerKeepsRinging() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.alarmInterval = .milliseconds(200) })) { world in
                try await world.addWebhook(receiver.url("/ok/discard"))
                try world.timers.publish("timer.completed", Payloads.timerCompleted("t-discard", user: "u1"), user: "u1")
                try await eventually("first ring") { try await receiver.received("/ok/discard").count == 1 }
                try world.timers.publish("timer.deleted", Payloads.timerDeleted("t-discard", user: "u1", reason: .discarded), user: "u1")
                try await eventually("all 12 rings", timeout: .seconds(15)) { try await receiver.received("/ok/discard").count == 12 }
                let ids = try await receiver.received("/ok/discard").compactMap { $0.body.firstMatch(of: /t-discard_[0-9]+/).map { String($0.output) } }
                #expect(Set(ids) == Set((0..<12).map { "t-discard_\($0)" }))
                let cancelled = try await world.database.pool.read { db in
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification WHERE timer_id = 't-discard' AND state = 'cancelled'")
                }
                #expect(cancelled == 0)
            }
        }
    }

    @Test("reminders are batched: at most one push per user per window, worded encouragingly")
    func remindersBatched() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start(settings: { $0.reminderWindow = .seconds(2) })) { world in
                try await world.addWebhook(receiver.url("/ok/rem"))
                try world.scheduler.publish("review.due", Payloads.reviewDue(user: "u1", dueCount: 12), user: "u1")
                try await eventually("first reminder at once") { try await receiver.received("/ok/rem").count == 1 }
                let started = ContinuousClock.now
                try world.scheduler.publish("habit.due", Payloads.habitDue(user: "u1", taskName: "Read 10 pages", title: "Read 10 pages",
                                                                       body: "Your reading system is strong today."), user: "u1")
                try world.scheduler.publish("test.due", Payloads.testDue(user: "u1", testName: "5k run"), user: "u1")
                try await eventually("one batched push after the window", timeout: .seconds(10)) { try await receiver.received("/ok/rem").count == 2 }
                #expect(ContinuousClock.now - started >= .milliseconds(1500))
                try await Task.sleep(for: .milliseconds(300))
                let pushes = try await receiver.received("/ok/rem").map { try WireCoding.decode(WebhookPayload.self, from: Data($0.body.utf8)).data }
                #expect(pushes.count == 2)
                #expect(pushes[0].title == "Time for a quick review" && pushes[0].body.contains("12 cards"))
                #expect(pushes[1].title == "2 gentle reminders")
                #expect(pushes[1].body.contains("Read 10 pages") && pushes[1].body.contains("5k run check-in"))
                for push in pushes { #expect(!push.body.lowercased().contains("missed") && !push.body.lowercased().contains("failed")) }
            }
        }
    }

    @Test("material.ingested and ingest.failed tell the user their material is ready or could not be processed; a cancel is not told")
    func materialEvents() async throws {
        try await withWorld(NotifierWorld.start()) { world in
            // Applied in order: once the later two are in the inbox, this one was handled.
            try world.store.publish("ingest.failed", Payloads.ingestFailed("m0", user: "u1", title: "Cancelled.pdf", reason: IngestFailed.cancelledReason), user: "u1")
            try world.store.publish("material.ingested", Payloads.materialIngested("m1", user: "u1", title: "Biology ch. 3", flashcardIds: ["f1", "f2"]), user: "u1")
            try world.store.publish("ingest.failed", Payloads.ingestFailed("m2", user: "u1", title: "Scan.png", reason: "The image has no readable text."), user: "u1")
            try await eventually("both in the inbox") { try await world.inbox().count == 2 }
            let items = try await world.inbox()
            #expect(items.contains { $0.title == "Your material is ready" && $0.body.contains("Biology ch. 3") && $0.body.contains("2 flashcards") })
            #expect(items.contains { $0.title == "“Scan.png” could not be processed" && $0.body.contains("no readable text") })
            #expect(items.count == 2 && !items.contains { $0.title.contains("Cancelled.pdf") })
        }
    }

    @Test("events published while the notifier was down are delivered after it starts, each once")
    func catchUpAfterDowntime() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withWorld(NotifierWorld.start()) { world in
                try await world.addWebhook(receiver.url("/ok/late"))
                await world.stopNotifier()
                for n in 1...5 {
                    try world.store.publish("ingest.failed", Payloads.ingestFailed("m\(n)", user: "u1", title: "Doc \(n)"), user: "u1")
                }
                try await world.startNotifier()
                try await eventually("caught up") { try await receiver.received("/ok/late").count == 5 }
                // A restart replays nothing twice: the cursor moved with the notifications.
                await world.stopNotifier()
                try world.store.publish("ingest.failed", Payloads.ingestFailed("m6", user: "u1", title: "Doc 6"), user: "u1")
                try await world.startNotifier()
                try await eventually("the sixth arrives") { try await receiver.received("/ok/late").count == 6 }
                try await Task.sleep(for: .milliseconds(500))  // time for a wrong second delivery to show
                #expect(try await receiver.received("/ok/late").count == 6)
                #expect(try await world.inbox().count == 6)
            }
        }
    }

    @Test("quiet hours hold non-urgent notifications until the window ends; urgent ones and opted-in alarms go through")
    func quietHours() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            // 23:30 in Berlin on a winter night, quiet 22:00–07:00: the window ends at 06:00Z.
            let clock = ManualWallClock(try WireCoding.decode(Date.self, from: Data(#""2026-01-15T22:30:00.000Z""#.utf8)))
            try await withWorld(NotifierWorld.start(settings: { $0.wallClock = clock })) { world in
                try await world.addWebhook(receiver.url("/ok/quiet"))
                _ = try await world.call(Notifier.preferencesSet, SetPreferencesRequest(timeZone: "Europe/Berlin", quietHours: QuietHours(start: "22:00", end: "07:00")))
                let held = try await world.call(Notifier.send, SendNotificationRequest(title: "Later", body: ""))
                let urgent = try await world.call(Notifier.send, SendNotificationRequest(title: "Now", body: "", urgent: true))
                try world.timers.publish("timer.completed", Payloads.timerCompleted("tq", user: "u1"), user: "u1")
                try await eventually("the urgent one is delivered") { try await receiver.received("/ok/quiet").count == 1 }
                func state(_ id: String) async throws -> String? {
                    try await world.database.pool.read { db in try String.fetchOne(db, sql: "SELECT state FROM notification WHERE id = ?", arguments: [id]) }
                }
                try await eventually("the alarm is held") { try await state("tq_0") == "held" }
                #expect(try await state(held.id) == "held")
                #expect(try await world.inbox().map(\.id) == [urgent.id])
                // At 06:00Z the window ends: the held message and the alarm's first repeat go out.
                clock.set(try WireCoding.decode(Date.self, from: Data(#""2026-01-16T06:00:00.000Z""#.utf8)))
                try await eventually("released at the end of the window") { try await receiver.received("/ok/quiet").count == 3 }
                let titles = try await receiver.received("/ok/quiet").map { try WireCoding.decode(WebhookPayload.self, from: Data($0.body.utf8)).data.id }
                #expect(Set(titles) == [urgent.id, held.id, "tq_0"])
                _ = try await world.call(Notifier.ack, AckRequest(timerId: "tq"))
                // Opting in lets alarms through quiet hours.
                clock.set(try WireCoding.decode(Date.self, from: Data(#""2026-01-16T23:00:00.000Z""#.utf8)))
                _ = try await world.call(Notifier.preferencesSet, SetPreferencesRequest(
                    timeZone: "Europe/Berlin", quietHours: QuietHours(start: "22:00", end: "07:00"), alarmsBypassQuietHours: true))
                try world.timers.publish("timer.completed", Payloads.timerCompleted("tb", user: "u1"), user: "u1")
                try await eventually("the opted-in alarm rings") { try await receiver.received("/ok/quiet").count == 4 }
                _ = try await world.call(Notifier.ack, AckRequest(timerId: "tb"))
            }
        }
    }

    @Test("quiet hours across the spring-forward night in New York end at 07:00 local, which is 11:00Z that morning")
    func quietHoursAcrossDST() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            func instant(_ text: String) throws -> Date { try WireCoding.decode(Date.self, from: Data("\"\(text)\"".utf8)) }
            // 23:00 EST on 7 March 2026; clocks jump from 02:00 to 03:00 during the night.
            let clock = ManualWallClock(try instant("2026-03-08T04:00:00.000Z"))
            try await withWorld(NotifierWorld.start(settings: { $0.wallClock = clock })) { world in
                try await world.addWebhook(receiver.url("/ok/dst"))
                _ = try await world.call(Notifier.preferencesSet, SetPreferencesRequest(timeZone: "America/New_York", quietHours: QuietHours(start: "22:00", end: "07:00")))
                let held = try await world.call(Notifier.send, SendNotificationRequest(title: "Good morning", body: ""))
                clock.set(try instant("2026-03-08T10:59:00.000Z"))  // 06:59 EDT (an hour before, 07:00 would have been 12:00Z)
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await receiver.received("/ok/dst").isEmpty, "still quiet at 06:59 local")
                clock.set(try instant("2026-03-08T11:00:00.000Z"))  // 07:00 EDT
                try await eventually("released at 07:00 local") { try await receiver.received("/ok/dst").count == 1 }
                let delivered = try WireCoding.decode(WebhookPayload.self, from: Data(try #require(try await receiver.received("/ok/dst").first).body.utf8))
                #expect(delivered.data.id == held.id)
            }
        }
    }
}
