import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import TestSupport
import Testing
import TimerTickerCore
import Wire

@Suite("timer-ticker over the bus")
struct ServiceTests {
    @Test("a timer fires timer.completed at its end, not before, and the event is replayable")
    func firesOnTime() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let listener = try Bus(configuration: busConfiguration(world.endpoints, source: "listener"), logger: testLogger("listener"))
            let events = try await EventCollector.subscribed(listener, ["timer."])
            let timer = try await world.call(TimerTicker.createTimer, .init(label: "  Tea \n time ", seconds: 1, endAction: .keep))
            #expect(timer.label == "Tea time" && timer.status == .running && timer.run == 1)
            try await eventually("timer.completed received") { events.topics().contains("timer.completed") }
            let completed = try #require(events.all.first { $0.topic == "timer.completed" }).decode(TimerTicker.timerCompleted)
            #expect(completed.timer.id == timer.id && completed.timer.status == .completed && completed.timer.remainingSeconds == 0)
            #expect(completed.endDate == timer.endDate)
            #expect(completed.firedAt >= completed.endDate)
            #expect(completed.latenessSeconds >= 0 && completed.latenessSeconds < 1 && !completed.late)
            #expect(events.topics() == ["timer.created", "timer.completed"])
            let stored = try await replayAll(world.client)
            #expect(stored.map(\.topic) == ["timer.created", "timer.completed"])
            #expect(try stored[1].decode(TimerTicker.timerCompleted) == completed)
            let fetched = try await world.call(TimerTicker.getTimer, .init(id: timer.id))
            #expect(fetched.status == .completed && fetched.pendingDeletionAt == nil)
            events.cancel()
            await listener.shutdown()
        }
    }

    /// Puts a fresh timer in `status`.
    func timer(in status: TimerStatus, _ world: TimerWorld) async throws -> CountdownTimer {
        let seconds = status == .completed ? 1 : 0
        let timer = try await world.call(TimerTicker.createTimer, .init(label: "\(status)", hours: status == .completed ? 0 : 1, seconds: seconds, endAction: .keep))
        switch status {
        case .running: return timer
        case .paused: return try await world.call(TimerTicker.pauseTimer, .init(id: timer.id))
        case .stopped: return try await world.call(TimerTicker.stopTimer, .init(id: timer.id))
        case .completed: return timer
        }
    }

    @Test("every method on a timer in every state does what the status machine says, through the bus")
    func statusMachineOverTheBus() async throws {
        try await withWorld(TimerWorld.start(settings: { $0.maximumActiveTimers = 100 })) { world in
            let actions: [(TimerAction, Method<TimerRef, CountdownTimer>?)] = [
                (.pause, TimerTicker.pauseTimer), (.resume, TimerTicker.resumeTimer), (.stop, TimerTicker.stopTimer),
                (.restart, TimerTicker.restartTimer), (.duplicate, TimerTicker.duplicateTimer), (.delete, nil),
            ]
            var subjects: [(TimerStatus, TimerAction, Method<TimerRef, CountdownTimer>?, CountdownTimer)] = []
            for status in TimerStatus.allCases {
                for (action, method) in actions { subjects.append((status, action, method, try await timer(in: status, world))) }
            }
            try await eventually("the 1-second timers completed") {
                for subject in subjects where subject.0 == .completed {
                    guard try await world.call(TimerTicker.getTimer, .init(id: subject.3.id)).status == .completed else { return false }
                }
                return true
            }
            for (status, action, method, timer) in subjects {
                let want = try #require(RulesTests.expected[status]?[action])
                let reply: CountdownTimer?
                let error: BusError?
                do throws(BusError) {
                    if let method { reply = try await world.call(method, .init(id: timer.id)) } else {
                        _ = try await world.call(TimerTicker.deleteTimer, .init(id: timer.id))
                        reply = nil
                    }
                    error = nil
                } catch let caught {
                    reply = nil
                    error = caught
                }
                switch want {
                case nil:
                    #expect(error?.code == .failedPrecondition, "\(action) on \(status)")
                    #expect(error?.message.contains(status.rawValue) == true && error?.message.contains(action.rawValue) == true)
                    #expect(try await world.call(TimerTicker.getTimer, .init(id: timer.id)).status == status)
                case .becomes(let next):
                    #expect(error == nil && reply?.status == next && reply?.id == timer.id, "\(action) on \(status): \(String(describing: error))")
                case .copied:
                    #expect(reply?.status == .running && reply?.id != timer.id && reply?.label == timer.label, "\(action) on \(status)")
                    #expect(try await world.call(TimerTicker.getTimer, .init(id: timer.id)).status == status)
                case .removed:
                    #expect(error == nil, "\(action) on \(status)")
                    #expect(await world.failure(TimerTicker.getTimer, .init(id: timer.id))?.code == .notFound)
                }
            }
        }
    }

    @Test("pause keeps the remaining time, resume ends after it, restart starts a new run; each change has its event")
    func lifecycle() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let created = try await world.call(TimerTicker.createTimer, .init(label: "Bread", minutes: 10))
            let paused = try await world.call(TimerTicker.pauseTimer, .init(id: created.id))
            #expect(paused.status == .paused && paused.endDate == nil)
            #expect(paused.remainingSeconds <= 600 && paused.remainingSeconds > 590)
            let resumed = try await world.call(TimerTicker.resumeTimer, .init(id: created.id))
            let resumedEnd = try #require(resumed.endDate)
            #expect(abs(resumedEnd.timeIntervalSince(resumed.updatedAt) - paused.remainingSeconds) < 0.002)
            let stopped = try await world.call(TimerTicker.stopTimer, .init(id: created.id))
            #expect(stopped.status == .stopped && stopped.endDate == nil)
            let restarted = try await world.call(TimerTicker.restartTimer, .init(id: created.id))
            #expect(restarted.run == 2 && restarted.remainingSeconds == 600 && restarted.status == .running)
            _ = try await world.call(TimerTicker.deleteTimer, .init(id: created.id))
            #expect(world.server.engine.count == 0)
            let topics = try await replayAll(world.client).map(\.topic)
            #expect(topics == ["timer.created", "timer.paused", "timer.resumed", "timer.stopped", "timer.restarted", "timer.deleted"])
            let list = try await world.call(TimerTicker.listTimers, .init())
            #expect(list.timers.isEmpty)
        }
    }

    @Test("a request that meets a run already over records that completion first, once")
    func requestCompletesEndedRun() async throws {
        let wallClock = ManualWallClock(Date())
        try await withWorld(TimerWorld.start(wallClock: wallClock)) { world in
            let timer = try await world.call(TimerTicker.createTimer, .init(label: "Eggs", minutes: 5, endAction: .keep))
            wallClock.advance(by: 301)  // the time of day passes the end; the engine's monotonic deadline has not
            let refused = await world.failure(TimerTicker.pauseTimer, .init(id: timer.id))
            #expect(refused?.code == .failedPrecondition && refused?.message.contains("completed") == true)
            // The refusal did not take the completion back: the timer reads completed at once.
            #expect(try await world.call(TimerTicker.getTimer, .init(id: timer.id)).status == .completed)
            #expect(try await replayAll(world.client).map(\.topic) == ["timer.created", "timer.completed"])
            let restarted = try await world.call(TimerTicker.restartTimer, .init(id: timer.id))
            #expect(restarted.run == 2 && restarted.status == .running)
            let events = try await replayAll(world.client)
            #expect(events.map(\.topic) == ["timer.created", "timer.completed", "timer.restarted"])
            let completed = try events[1].decode(TimerTicker.timerCompleted)
            #expect(completed.timer.run == 1 && completed.endDate == timer.endDate && completed.firedAt >= completed.endDate)
            #expect(world.server.engine.entry(for: 1)?.run == 2)
        }
    }

    @Test("limits: running+paused per user is enforced atomically, bad fields are INVALID_ARGUMENT, others' timers NOT_FOUND")
    func limits() async throws {
        try await withWorld(TimerWorld.start(settings: { $0.maximumActiveTimers = 3 })) { world in
            // Ten creations at once: exactly three get through.
            let results = await withTaskGroup(of: Bool.self) { group in
                for n in 0..<10 {
                    group.addTask { (try? await world.call(TimerTicker.createTimer, .init(label: "t\(n)", hours: 1))) != nil }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 3)
            let timers = try await world.call(TimerTicker.listTimers, .init()).timers
            let full = await world.failure(TimerTicker.createTimer, .init(seconds: 5))
            #expect(full?.code == .resourceExhausted && full?.message.contains("3") == true)
            #expect(await world.failure(TimerTicker.duplicateTimer, .init(id: timers[0].id))?.code == .resourceExhausted)
            _ = try await world.call(TimerTicker.stopTimer, .init(id: timers[0].id))
            _ = try await world.call(TimerTicker.createTimer, .init(seconds: 5))
            #expect(await world.failure(TimerTicker.restartTimer, .init(id: timers[0].id))?.code == .resourceExhausted)
            // Another user has their own allowance and cannot see u1's timers.
            _ = try await world.call(TimerTicker.createTimer, .init(seconds: 5), user: "u2")
            #expect(await world.failure(TimerTicker.getTimer, .init(id: timers[1].id), user: "u2")?.code == .notFound)
            #expect(await world.failure(TimerTicker.pauseTimer, .init(id: timers[1].id), user: "u2")?.code == .notFound)
            #expect(await world.failure(TimerTicker.listTimers, .init(), user: nil)?.code == .invalidArgument)
            for (request, field) in [
                (CreateTimerRequest(seconds: 0), "more than 0"), (CreateTimerRequest(seconds: -3), "seconds"),
                (CreateTimerRequest(hours: 25), "hours"), (CreateTimerRequest(hours: 24, seconds: 1), "24 hours"),
                (CreateTimerRequest(label: String(repeating: "a", count: 101), seconds: 5), "100"),
            ] {
                let error = await world.failure(TimerTicker.createTimer, request, user: "u3")
                #expect(error?.code == .invalidArgument && error?.message.contains(field) == true, "\(String(describing: error))")
            }
            #expect(try await world.call(TimerTicker.listTimers, .init(), user: "u3").timers.isEmpty)
        }
    }

    @Test("presets: create, start a timer from one (fields given win), update, list, delete; at most 20")
    func presets() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let preset = try await world.call(TimerTicker.createPreset, .init(label: " Eggs ", minutes: 7, isVibrationOn: false, endAction: .keep))
            #expect(preset.label == "Eggs" && preset.minutes == 7 && !preset.isVibrationOn && preset.isSoundOn)
            let fromPreset = try await world.call(TimerTicker.createTimer, .init(presetId: preset.id))
            #expect(fromPreset.label == "Eggs" && fromPreset.durationSeconds == 420 && !fromPreset.isVibrationOn && fromPreset.presetId == preset.id)
            #expect(fromPreset.endAction == .keep)
            let overridden = try await world.call(TimerTicker.createTimer, .init(label: "Soft eggs", minutes: 5, presetId: preset.id))
            #expect(overridden.label == "Soft eggs" && overridden.durationSeconds == 300)
            #expect(await world.failure(TimerTicker.createTimer, .init(presetId: preset.id), user: "u2")?.code == .notFound)
            let updated = try await world.call(TimerTicker.updatePreset, .init(id: preset.id, seconds: 30))
            #expect(updated.minutes == 7 && updated.seconds == 30 && updated.label == "Eggs")
            #expect(await world.failure(TimerTicker.updatePreset, .init(id: preset.id, minutes: 0, seconds: 0))?.code == .invalidArgument)
            for n in 2...20 { _ = try await world.call(TimerTicker.createPreset, .init(label: "p\(n)", seconds: n)) }
            #expect(await world.failure(TimerTicker.createPreset, .init(label: "one too many", seconds: 1))?.code == .resourceExhausted)
            #expect(try await world.call(TimerTicker.listPresets, Empty()).presets.count == 20)
            _ = try await world.call(TimerTicker.deletePreset, .init(id: preset.id))
            #expect(await world.failure(TimerTicker.deletePreset, .init(id: preset.id))?.code == .notFound)
            #expect(try await world.call(TimerTicker.listPresets, Empty()).presets.first?.label == "p2")
            #expect(try await world.call(TimerTicker.getTimer, .init(id: fromPreset.id)).presetId == preset.id)
        }
    }

    @Test("_describe lists every method and event of the contract, with the status values")
    func describe() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let description = try await world.client.call(Reserved.describe("timer-ticker"), Empty())
            let methods = Set(description.methods.map(\.name))
            #expect(Set(TimerTicker.methods.map(\.name)).isSubset(of: methods) && methods.contains("_events.replay"))
            #expect(description.events.map(\.topic) == [
                "timer.created", "timer.paused", "timer.resumed", "timer.updated", "timer.stopped", "timer.restarted", "timer.deleted",
                "timer.completed",
            ])
            let created = try #require(description.methods.first { $0.name == "timers.create" })
            #expect(created.response.jsonText.contains("running|paused|stopped|completed"))
        }
    }

    @Test("a repeated create with the same idempotency key starts one timer")
    func idempotentCreate() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let first = try await world.call(TimerTicker.createTimer, .init(minutes: 1), idem: "k1")
            let second = try await world.call(TimerTicker.createTimer, .init(minutes: 1), idem: "k1")
            #expect(first.id == second.id)
            #expect(try await world.call(TimerTicker.listTimers, .init()).timers.count == 1)
        }
    }

    @Test("a discard timer is deleted a while after completion, with timer.deleted; a keep timer stays")
    func discardAfterCompletion() async throws {
        try await withWorld(TimerWorld.start(settings: { $0.discardAfterSeconds = 1 })) { world in
            let discard = try await world.call(TimerTicker.createTimer, .init(label: "gone", seconds: 1))
            let keep = try await world.call(TimerTicker.createTimer, .init(label: "kept", seconds: 1, endAction: .keep))
            try await eventually("the discard timer is deleted") {
                await world.failure(TimerTicker.getTimer, .init(id: discard.id))?.code == .notFound
            }
            let events = try await replayAll(world.client)
            let deleted = try #require(events.first { $0.topic == "timer.deleted" }).decode(TimerTicker.timerDeleted)
            #expect(deleted.timer.id == discard.id && deleted.reason == .discarded && deleted.timer.pendingDeletionAt != nil)
            let completions = try events.filter { $0.topic == "timer.completed" }.map { try $0.decode(TimerTicker.timerCompleted) }
            #expect(Set(completions.map(\.timer.id)) == [discard.id, keep.id])
            #expect(try await world.call(TimerTicker.getTimer, .init(id: keep.id)).status == .completed)
        }
    }

    @Test("timers whose end passed while the service was down fire once, marked late, right after start-up")
    func firesMissedOnRestart() async throws {
        let first = try await TimerWorld.start(firing: false)
        var ids: [String] = []
        for n in 0..<5 { ids.append(try await first.call(TimerTicker.createTimer, .init(label: "m\(n)", seconds: 1, endAction: .keep)).id) }
        let running = try await first.call(TimerTicker.createTimer, .init(label: "later", hours: 1))
        await first.stop(keepBroker: true)
        let ends = try await DatabaseQueue(path: first.databaseURL.path).read { db in
            try Int64.fetchAll(db, sql: "SELECT end_ms FROM timer WHERE status = 'running'")
        }
        #expect(ends.count == 6)
        let missedEnd = try #require(ends.sorted().dropLast().last)
        while Date().unixMilliseconds <= missedEnd + 100 { try await Task.sleep(for: .milliseconds(50)) }  // the service is down meanwhile

        try await withWorld(TimerWorld.start(directory: first.directory, broker: (first.broker, first.endpoints))) { second in
            try await eventually("the missed timers completed") {
                try await second.call(TimerTicker.listTimers, .init(statuses: [.completed])).timers.count == 5
            }
            let completions = try await replayAll(second.client).filter { $0.topic == "timer.completed" }.map { try $0.decode(TimerTicker.timerCompleted) }
            #expect(completions.map(\.timer.id).sorted() == ids.sorted())
            #expect(completions.allSatisfy { $0.late && $0.latenessSeconds > 0 && $0.firedAt > $0.endDate })
            #expect(try await second.call(TimerTicker.getTimer, .init(id: running.id)).status == .running)
            #expect(second.server.engine.count == 1)
        }
    }

    @Test("a timer row an older version wrote, without the newer columns, loads with defaults")
    func oldRows() async throws {
        let directory = try temporaryDirectory()
        let url = directory.appending(path: "timer-ticker.sqlite")
        let database = try ServiceDatabase.open(at: url, migrator: TimerSchema.migrator(), logger: testLogger("setup"))
        let createdMs = Date().unixMilliseconds - 5_000
        try await database.pool.write { db in
            try db.execute(sql: """
                INSERT INTO timer (id, user_id, label, hours, minutes, seconds, status, created_ms) VALUES ('old', 'u1', 'Tea', 0, 2, 0, 'paused', ?)
                """, arguments: [createdMs])
        }
        try database.pool.close()
        try await withWorld(TimerWorld.start(directory: directory)) { world in
            let timer = try await world.call(TimerTicker.getTimer, .init(id: "old"))
            #expect(timer.remainingSeconds == 120 && timer.isSoundOn && timer.isVibrationOn && timer.endAction == .discard)
            #expect(timer.run == 1 && timer.updatedAt == timer.createdAt && timer.presetId == nil)
            let resumed = try await world.call(TimerTicker.resumeTimer, .init(id: "old"))
            #expect(resumed.status == .running && world.server.engine.count == 1)
        }
    }
}
