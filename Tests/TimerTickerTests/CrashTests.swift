import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import Glibc
import TestSupport
import Testing
import Wire

/// The real `timer-ticker` binary, next to the test bundle in the build folder.
struct TickerProcess {
    let process: ChildProcess

    static var binary: URL { builtProductsDirectory.appending(path: "timer-ticker") }

    static func launch(_ endpoints: Broker.Endpoints, dataDirectory: URL) throws -> TickerProcess {
        var environment = serviceEnvironment(endpoints)
        environment["DATA_DIR"] = dataDirectory.path
        environment["TIMER_MAX_ACTIVE"] = "100000"
        environment["LOG_LEVEL"] = "warning"
        return TickerProcess(process: try ChildProcess(executable: binary.path, environment: environment, logFile: "/dev/null"))
    }

    func kill9() async {
        process.send(SIGKILL)
        await process.waitForExit()
    }

    func terminate() async {
        process.send(SIGTERM)
        if await process.waitForExit() == nil {
            process.send(SIGKILL)
            await process.waitForExit()
        }
    }
}

@Suite("timer-ticker under kill -9")
struct CrashTests {
    @Test("kill -9 at random points during a burst of completions: every timer completes exactly once, every completion replayable")
    func killNineDuringBurst() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: TickerProcess.binary.path),
            "needs the timer-ticker binary beside the tests: swift build --build-tests builds it")
        let (broker, endpoints) = try await startBroker()
        let directory = try temporaryDirectory()
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        var ticker = try TickerProcess.launch(endpoints, dataDirectory: directory)
        try await eventually("timer-ticker serves", timeout: Wait.startup) {
            (try? await client.call(Reserved.health("timer-ticker"), Empty())) != nil
        }
        let count = 300
        // 20 creations in flight at a time: a burst for the service, gentle for the machine.
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            var created: [String] = []
            for n in 0..<count {
                if n >= 20, let id = try await group.next() { created.append(id) }
                group.addTask {
                    try await client.call(
                        TimerTicker.createTimer, .init(label: "burst \(n)", seconds: 1 + n % 2, endAction: .keep), options: .init(user: "u\(n % 7)")
                    ).id
                }
            }
            for try await id in group { created.append(id) }
            return created
        }
        #expect(Set(ids).count == count)

        // Kill at random points while the timers come due, and again during the start-ups that
        // fire the ones that ended while the process was dead.
        var kills = 0
        for round in 0..<5 {
            try await Task.sleep(for: .milliseconds(Int.random(in: round == 0 ? 600...1500 : 0...500)))
            await ticker.kill9()
            kills += 1
            ticker = try TickerProcess.launch(endpoints, dataDirectory: directory)
        }
        #expect(kills == 5)
        try await eventually("every timer completed", timeout: .seconds(60)) {
            let remaining = try? await DatabaseQueue(path: directory.appending(path: "timer-ticker.sqlite").path).read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM timer WHERE status != 'completed'")
            }
            return remaining == 0
        }

        // The database invariant: one completion (status + outbox row) per timer run.
        let database = try DatabaseQueue(path: directory.appending(path: "timer-ticker.sqlite").path)
        let (statuses, payloads) = try await database.read { db in
            (try String.fetchAll(db, sql: "SELECT DISTINCT status FROM timer"),
             try String.fetchAll(db, sql: "SELECT payload FROM bus_outbox WHERE topic = 'timer.completed' ORDER BY seq"))
        }
        #expect(statuses == ["completed"])
        let stored = try payloads.map { try WireCoding.decode(TimerCompleted.self, from: Data($0.utf8)) }
        #expect(stored.count == count)
        #expect(Set(stored.map(\.timer.id)) == Set(ids))
        #expect(stored.allSatisfy { $0.timer.run == 1 && $0.firedAt >= $0.endDate })

        // And every completion is obtainable from _events.replay, once.
        try await eventually("timer-ticker serves after the last restart", timeout: Wait.startup) {
            (try? await client.call(Reserved.health("timer-ticker"), Empty())) != nil
        }
        let replayed = try await replayAll(client).filter { $0.topic == "timer.completed" }.map { try $0.decode(TimerTicker.timerCompleted) }
        #expect(replayed.count == count)
        #expect(Set(replayed.map(\.timer.id)) == Set(ids))
        #expect(replayed == stored)

        await ticker.terminate()
        await client.shutdown()
        await broker.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
