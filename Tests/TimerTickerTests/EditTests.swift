import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import TimerTickerCore
import Wire

@Suite("timers.update and presets.fromTimer over the bus")
struct EditTests {
    @Test("a paused timer's label, duration and flags change; a new duration is the time left; timer.updated carries it")
    func editPaused() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let created = try await world.call(TimerTicker.createTimer, .init(label: "Bread", minutes: 10))
            _ = try await world.call(TimerTicker.pauseTimer, .init(id: created.id))
            let edited = try await world.call(TimerTicker.updateTimer, .init(
                id: created.id, label: " Rye \n bread ", minutes: 20, isSoundOn: false, isVibrationOn: false))
            #expect(edited.status == .paused && edited.label == "Rye bread" && edited.durationSeconds == 1200 && edited.remainingSeconds == 1200)
            #expect(!edited.isSoundOn && !edited.isVibrationOn && edited.run == 1)
            // Only the label: the time left stays.
            let relabelled = try await world.call(TimerTicker.updateTimer, .init(id: created.id, label: "Rye"))
            #expect(relabelled.remainingSeconds == 1200 && relabelled.durationSeconds == 1200 && !relabelled.isSoundOn)
            let resumed = try await world.call(TimerTicker.resumeTimer, .init(id: created.id))
            #expect(abs(try #require(resumed.endDate).timeIntervalSince(resumed.updatedAt) - 1200) < 0.002)
            #expect(try await world.call(TimerTicker.getTimer, .init(id: created.id)).label == "Rye")
            let stored = try await replayAll(world.client)
            #expect(stored.map(\.topic) == ["timer.created", "timer.paused", "timer.updated", "timer.updated", "timer.resumed"])
            #expect(try stored[2].decode(TimerTicker.timerUpdated) == edited)
        }
    }

    @Test("a stopped timer can be edited and restarts with its new duration")
    func editStopped() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let created = try await world.call(TimerTicker.createTimer, .init(label: "Tea", minutes: 3))
            _ = try await world.call(TimerTicker.stopTimer, .init(id: created.id))
            let edited = try await world.call(TimerTicker.updateTimer, .init(id: created.id, minutes: 4, seconds: 30, isVibrationOn: false))
            #expect(edited.status == .stopped && edited.durationSeconds == 270 && edited.isSoundOn && !edited.isVibrationOn)
            let restarted = try await world.call(TimerTicker.restartTimer, .init(id: created.id))
            #expect(restarted.remainingSeconds == 270 && restarted.run == 2 && !restarted.isVibrationOn)
        }
    }

    @Test("a running or completed timer is FAILED_PRECONDITION and unchanged; bad fields INVALID_ARGUMENT; others' NOT_FOUND")
    func editRefused() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let running = try await world.call(TimerTicker.createTimer, .init(label: "Run", minutes: 5))
            let refused = await world.failure(TimerTicker.updateTimer, .init(id: running.id, label: "Walk"))
            #expect(refused?.code == .failedPrecondition)
            #expect(refused?.message == "cannot update a running timer (only a paused or stopped timer can be edited; pause or stop it first)")
            #expect(refused?.details == .object(["state": .string("running"), "action": .string("update")]))
            #expect(try await world.call(TimerTicker.getTimer, .init(id: running.id)).label == "Run")
            let short = try await world.call(TimerTicker.createTimer, .init(label: "Short", seconds: 1, endAction: .keep))
            try await eventually("the 1-second timer completed") { try await world.call(TimerTicker.getTimer, .init(id: short.id)).status == .completed }
            #expect(await world.failure(TimerTicker.updateTimer, .init(id: short.id, seconds: 5))?.code == .failedPrecondition)
            _ = try await world.call(TimerTicker.pauseTimer, .init(id: running.id))
            #expect(await world.failure(TimerTicker.updateTimer, .init(id: running.id, minutes: 60))?.isInvalid("minutes") == true)
            #expect(await world.failure(TimerTicker.updateTimer, .init(id: running.id, hours: 0, minutes: 0, seconds: 0))?.code == .invalidArgument)
            #expect(await world.failure(TimerTicker.updateTimer, .init(id: running.id, label: String(repeating: "x", count: 101)))?.isInvalid("label") == true)
            #expect(await world.failure(TimerTicker.updateTimer, .init(id: running.id, label: "Mine"), user: "u2")?.code == .notFound)
            #expect(try await world.call(TimerTicker.getTimer, .init(id: running.id)).label == "Run")
        }
    }

    @Test("a repeated timers.update with the same idempotency key applies once")
    func editIdempotent() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let created = try await world.call(TimerTicker.createTimer, .init(label: "Soup", minutes: 8))
            _ = try await world.call(TimerTicker.pauseTimer, .init(id: created.id))
            let first = try await world.call(TimerTicker.updateTimer, .init(id: created.id, label: "Stew"), idem: "edit-1")
            let again = try await world.call(TimerTicker.updateTimer, .init(id: created.id, label: "Stew"), idem: "edit-1")
            #expect(first == again)
            #expect(try await replayAll(world.client).filter { $0.topic == "timer.updated" }.count == 1)
        }
    }

    @Test("presets.fromTimer saves a timer's label, duration, flags and end action as a preset; the timer is unchanged")
    func presetFromTimer() async throws {
        try await withWorld(TimerWorld.start()) { world in
            let timer = try await world.call(TimerTicker.createTimer, .init(label: "Pasta", minutes: 9, seconds: 30, isSoundOn: false, endAction: .keep))
            let preset = try await world.call(TimerTicker.presetFromTimer, .init(timerId: timer.id))
            #expect(preset.label == "Pasta" && preset.minutes == 9 && preset.seconds == 30 && preset.hours == 0)
            #expect(!preset.isSoundOn && preset.isVibrationOn && preset.endAction == .keep && preset.userId == "u1" && preset.id != timer.id)
            #expect(try await world.call(TimerTicker.listPresets, Empty()).presets == [preset])
            let after = try await world.call(TimerTicker.getTimer, .init(id: timer.id))
            #expect(after.presetId == nil && after.status == .running)
            let missing = await world.failure(TimerTicker.presetFromTimer, .init(timerId: "no-such-timer"))
            #expect(missing?.code == .notFound && missing?.message.contains("timerId") == true)
            #expect(await world.failure(TimerTicker.presetFromTimer, .init(timerId: timer.id), user: "u2")?.code == .notFound)
            for n in 2...TimerLimits.maximumPresets { _ = try await world.call(TimerTicker.createPreset, .init(label: "p\(n)", minutes: 1)) }
            #expect(await world.failure(TimerTicker.presetFromTimer, .init(timerId: timer.id))?.code == .resourceExhausted)
        }
    }
}

extension BusError {
    /// Whether this is INVALID_ARGUMENT naming `field` in its details.
    func isInvalid(_ field: String) -> Bool {
        code == .invalidArgument && details?["field"]?.stringValue == field
    }
}
