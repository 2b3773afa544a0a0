import Bus
import Contracts
import Foundation
import TestSupport
import Testing

/// End-to-end: the real binaries started by `scripts/dev`, as users run them. Each test owns a
/// whole system (own ports and data folder); within a test, flows run concurrently.
@Suite("The whole system, started by scripts/dev")
struct SystemTests {
    static let services = ["store", "ai-gateway", "scheduler", "timer-ticker", "notifier"]

    @Test("the flows of docs/flows.md complete end to end")
    func flows() async throws {
        let system = try await DevSystem.start()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Flows.habitReminder(system) }  // waits for the next minute: start it first
                group.addTask { try await Flows.timerAlarm(system) }
                group.addTask { try await Flows.deleteSet(system) }
                try await group.waitForAll()
            }
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test("a consumer killed with SIGKILL mid-flow catches up after restart: nothing lost, nothing twice")
    func consumerKilled() async throws {
        let system = try await DevSystem.start()
        do {
            let user = "killed-notifier"
            let timer = try await system.call(TimerTicker.createTimer, CreateTimerRequest(label: "Tea", seconds: 2), user: user)
            try await system.kill9("notifier-1")
            try await eventually("the timer completed while notifier was down", timeout: .seconds(10)) {
                try await system.call(TimerTicker.getTimer, TimerRef(id: timer.id), user: user).status == .completed
            }
            try await system.dev(["up", "notifier"])
            try await eventually("all 12 alarms arrive after the restart", timeout: .seconds(20)) {
                try await Flows.alarms(system, user: user)[timer.id] == 12
            }
            let ids = try await system.call(Notifier.inboxList, InboxListRequest(limit: 100), user: user).items.map(\.id)
            #expect(ids.count == 12 && Set(ids) == Set((0..<12).map { "\(timer.id)_\($0)" }))
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test("every service that owns data answers _backup with a copy of its SQLite file")
    func backups() async throws {
        let system = try await DevSystem.start()
        do {
            for service in ["store", "ai-gateway", "scheduler", "timer-ticker", "notifier"] {
                let (info, attachment) = try await system.client.callWithAttachment(
                    Reserved.backup(service), Empty(), options: CallOptions(timeout: .seconds(60)))
                let data = try #require(attachment)
                #expect(info.service == service && info.file == "\(service).sqlite" && info.bytes == Int64(data.count))
                #expect(data.prefix(16) == Data("SQLite format 3\0".utf8), "\(service)'s copy is not an SQLite file")
                #expect(!info.migrations.isEmpty, "\(service)'s copy lists no migrations")
            }
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test("after the broker is killed and restarted, every service reconnects by itself and flows work")
    func brokerRestart() async throws {
        let system = try await DevSystem.start()
        do {
            try await system.kill9("broker-1")
            try await system.dev(["up", "broker"])
            for service in Self.services {
                try await eventually("\(service) is back", timeout: .seconds(20)) {
                    (try? await system.client.call(Reserved.health(service), Empty(), options: CallOptions(timeout: .seconds(1))))?.status == .serving
                }
            }
            try await Flows.deleteSet(system, user: "after-broker-restart")
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }
}
