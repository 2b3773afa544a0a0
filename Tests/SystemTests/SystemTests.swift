import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

/// End-to-end: the real binaries started by `scripts/dev`, as users run them. Each test owns a
/// whole system (own ports and data folder); within a test, flows run concurrently. The tests
/// run one after another: a system is ten processes, and two cores are what CI has.
@Suite("The whole system, started by scripts/dev", .serialized)
struct SystemTests {
    static let services = ["store", "ai-gateway", "scheduler", "timer-ticker", "notifier", "connectors", "ingest"]

    @Test("the five flows of docs/flows.md complete end to end")
    func flows() async throws {
        try await DevSystem.run { system in
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The two reminder flows wait for the next minute: start them first.
                group.addTask { try await Flows.materialToReview(system) }
                group.addTask { try await Flows.habitReminder(system) }
                group.addTask { try await Flows.timerAlarm(system) }
                group.addTask { try await Flows.tutor(system) }
                group.addTask { try await Flows.deleteSet(system) }
                try await group.waitForAll()
            }
        }
    }

    @Test("consumers killed with SIGKILL in the middle of flows 1 and 2 catch up after restart: nothing lost, nothing twice")
    func consumersKilled() async throws {
        try await DevSystem.run { system in
            let user = "killed-consumers"
            let timer = try await system.call(TimerTicker.createTimer, CreateTimerRequest(label: "Tea", seconds: 2), user: user)
            try await system.kill9("notifier-1")
            try await system.kill9("scheduler-1")
            // Flow 1 while both consumers are down: store publishes flashcard.created and
            // material.ingested to nobody who keeps them.
            let submitted = try await Flows.submit(system, StudyText.photosynthesis, fileName: "cells.md", user: user)
            let cards = try #require(submitted.outcome).flashcardIds
            try await eventually("the timer completed while notifier was down", timeout: .seconds(10)) {
                try await system.call(TimerTicker.getTimer, TimerRef(id: timer.id), user: user).status == .completed
            }
            try await system.dev(["up", "notifier", "scheduler"])

            try await eventually("all 12 alarms arrive after the restart", timeout: .seconds(20)) {
                try await Flows.alarms(system, user: user)[timer.id] == 12
            }
            try await eventually("scheduler has every card of the material") {
                try await Set(system.call(Scheduler.dueCards, DueRequest(limit: 1000), user: user).cards.map(\.cardId)) == Set(cards)
            }
            try await eventually("the material-ready notice arrives") {
                try await Flows.inbox(system, user: user).contains { $0.kind == .material }
            }
            let inbox = try await Flows.inbox(system, user: user)
            let alarmIds = inbox.filter { $0.kind == .alarm }.map(\.id)
            #expect(alarmIds.count == 12 && Set(alarmIds) == Set((0..<12).map { "\(timer.id)_\($0)" }))
            #expect(inbox.filter { $0.kind == .material }.count == 1, "the material-ready notice came twice")
            let due = try await system.call(Scheduler.dueCards, DueRequest(limit: 1000), user: user).cards
            #expect(due.count == cards.count, "a card was added twice")
        }
    }

    @Test("scripts/demo walks through the running system and exits cleanly")
    func demo() async throws {
        try await DevSystem.run { system in
            let output = try await system.script("demo", timeout: .seconds(120))
            for step in ["material ", ": ready,", "keywords:", "rated good", "alarm 1", "acknowledged", "1 question and 1 answer stored", "assistant:"] {
                #expect(output.contains(step), "the demo's output lacks '\(step)':\n\(output)")
            }
        }
    }

    @Test("every service that owns data answers _backup with a copy of its SQLite file")
    func backups() async throws {
        try await DevSystem.run { system in
            for service in ["store", "ai-gateway", "scheduler", "timer-ticker", "notifier", "connectors"] {
                let (info, attachment) = try await system.client.callWithAttachment(
                    Reserved.backup(service), Empty(), options: CallOptions(timeout: .seconds(60)))
                let data = try #require(attachment)
                #expect(info.service == service && info.file == "\(service).sqlite" && info.bytes == Int64(data.count))
                #expect(data.prefix(16) == Data("SQLite format 3\0".utf8), "\(service)'s copy is not an SQLite file")
                #expect(!info.migrations.isEmpty, "\(service)'s copy lists no migrations")
            }
        }
    }

    @Test("the broker killed and restarted mid-flow: every service reconnects by itself and the flow completes")
    func brokerRestart() async throws {
        try await DevSystem.run { system in
            let user = "broker-restart"
            let timer = try await system.call(TimerTicker.createTimer, CreateTimerRequest(label: "Tea", seconds: 3), user: user)
            try await system.kill9("broker-1")
            try await system.dev(["up", "broker"])
            for service in Self.services {
                try await eventually("\(service) is back", timeout: Wait.startup) {
                    (try? await system.client.call(Reserved.health(service), Empty(), options: CallOptions(timeout: .seconds(1))))?.status == .serving
                }
            }
            try await eventually("the timer's alarms ring after the restart", timeout: .seconds(30)) {
                try await Flows.alarms(system, user: user)[timer.id] == 12
            }
            try await Flows.deleteSet(system, user: user)
        }
    }

    @Test("ingest scaled from 1 to 3 workers with scripts/dev scale: a burst of jobs spreads over the three")
    func scaleIngest() async throws {
        try await DevSystem.run { system in
            try await system.dev(["scale", "ingest", "1"])
            try await system.waitForWorkers("ingest", count: 1)
            try await system.dev(["scale", "ingest", "3"])
            try await system.waitForWorkers("ingest", count: 3)

            let progress = try await EventCollector.active(
                system.client, Ingest.progress, probe: IngestProgress(materialId: "probe", userId: "probe", stage: .queued, percent: 0))
            let user = "scaled"
            let materialIds = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<30 {
                    group.addTask {
                        let text = "# Note \(index)\n\nNote \(index) is about cells. A cell is the smallest unit of life.\n"
                        return try await system.call(Ingest.submit, IngestSubmit(fileName: "note-\(index).md", wait: false), user: user,
                                                     attachment: Data(text.utf8)).materialId
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(materialIds.count == 30)
            let finished = {
                progress.all.compactMap { event in (try? event.decode(Ingest.progress)).map { (event.header.instance, $0) } }
                    .filter { materialIds.contains($0.1.materialId) && $0.1.stage == .ready }
            }
            try await eventually("every job finished", timeout: .seconds(60)) { finished().count == 30 }
            let workers = Set(finished().map(\.0))
            #expect(workers.count == 3, "jobs ran on \(workers.sorted())")
            progress.cancel()
        }
    }
}
