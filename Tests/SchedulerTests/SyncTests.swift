import Bus
import Contracts
import Foundation
import GRDB
import SchedulerCore
import ServiceKit
import Storage
import TestSupport
import Testing
import Wire

/// The time the test changes are stamped from; the scheduler's clock is an hour later.
private let t0 = instant("2026-11-22T10:00:00Z")

private func change(_ kind: HabitSyncKind, _ id: String, at seconds: Double, _ record: some Encodable) throws -> HabitSyncChange {
    HabitSyncChange(kind: kind, id: id, updatedAt: t0.addingTimeInterval(seconds), record: try JSONValue.parse(WireCoding.encode(record)))
}

private func deletion(_ kind: HabitSyncKind, _ id: String, at seconds: Double) -> HabitSyncChange {
    HabitSyncChange(kind: kind, id: id, updatedAt: t0.addingTimeInterval(seconds), deleted: true)
}

private func push(_ world: SchedulerWorld, _ device: String, _ changes: [HabitSyncChange], user: String = "u1") async throws -> [SyncOutcome] {
    try await world.call(Scheduler.syncPush, HabitSyncPushRequest(deviceId: device, changes: changes), user: user).results.map(\.outcome)
}

/// A device of a test: its own copy of the user's habit records, what it changed offline, and
/// where its last pull ended.
private struct Device {
    let id: String
    var records: [String: HabitSyncChange] = [:]
    var pending: [HabitSyncChange] = []
    var cursor: String?

    init(_ id: String) { self.id = id }

    static func key(_ kind: HabitSyncKind, _ id: String) -> String { "\(kind.rawValue)/\(id.lowercased())" }

    /// A change made offline.
    mutating func make(_ change: HabitSyncChange) {
        pending.append(change)
        records[Self.key(change.kind, change.id)] = change
    }

    /// Pushes what was made offline, then pulls every change since the last pull, two a page.
    mutating func sync(_ world: SchedulerWorld) async throws -> [SyncOutcome] {
        let outcomes = try await push(world, id, pending)
        pending = []
        var more = true
        while more {
            let page = try await world.call(Scheduler.syncPull, HabitSyncPullRequest(cursor: cursor, limit: 2))
            for change in page.changes { records[Self.key(change.kind, change.id)] = change }
            cursor = page.cursor
            more = page.hasMore
        }
        return outcomes
    }

    /// What the device shows: its records that are not deleted.
    var live: [String: JSONValue] { records.filter { !$0.value.deleted }.mapValues { $0.record ?? .null } }

    func isDeleted(_ kind: HabitSyncKind, _ id: String) -> Bool { records[Self.key(kind, id)]?.deleted == true }
}

@Suite("Habit sync across devices: last write wins, tombstones, cursors, habit.* events")
struct HabitSyncTests {
    @Test("two devices edit offline (creates on both, one system renamed on both, a delete on one); either sync order ends equal")
    func offlineDevices() async throws {
        // Swift's UUID().uuidString is upper case: the scheduler keeps and returns lower case.
        let system = "5A0B0C7E-1111-4A2B-8C3D-000000000001", task = "5A0B0C7E-1111-4A2B-8C3D-000000000002"
        let phoneTask = "5A0B0C7E-1111-4A2B-8C3D-000000000003", tabletTask = "5A0B0C7E-1111-4A2B-8C3D-000000000004"
        let checkIn = "5A0B0C7E-1111-4A2B-8C3D-000000000005"
        var finals: [[String: JSONValue]] = []
        for phoneFirst in [true, false] {
            try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600))) { world in
                var phone = Device("phone"), tablet = Device("tablet")
                phone.make(try change(.system, system, at: 1, HabitSystemCreate(name: "Running")))
                phone.make(try change(.task, task, at: 2, HabitTaskCreate(systemId: system, name: "Run", frequency: .daily)))
                #expect(try await phone.sync(world) == [.applied, .applied])
                _ = try await tablet.sync(world)
                #expect(tablet.live == phone.live && phone.live.count == 2)
                #expect(phone.records.keys.allSatisfy { $0 == $0.lowercased() })

                // Offline, each device creates a task and renames the system; the phone deletes the
                // task that the tablet edits and checks in.
                phone.make(try change(.task, phoneTask, at: 10, HabitTaskCreate(systemId: system, name: "Stretch", frequency: .daily)))
                phone.make(try change(.system, system, at: 11, HabitSystemCreate(name: "Phone's name")))
                phone.make(deletion(.task, task, at: 15))
                tablet.make(try change(.task, tabletTask, at: 10, HabitTaskCreate(systemId: system, name: "Swim", frequency: .on([2, 4]))))
                tablet.make(try change(.system, system, at: 12, HabitSystemCreate(name: "Tablet's name")))
                tablet.make(try change(.task, task, at: 13, HabitTaskCreate(systemId: system, name: "Run far", frequency: .daily)))
                tablet.make(try change(.checkin, checkIn, at: 14, CheckInRequest(taskId: task, date: "2026-11-22")))

                if phoneFirst {
                    #expect(try await phone.sync(world) == [.applied, .applied, .applied])
                    // The edit and the check-in lose to the delete made later.
                    #expect(try await tablet.sync(world) == [.applied, .applied, .superseded, .superseded])
                    _ = try await phone.sync(world)
                } else {
                    #expect(try await tablet.sync(world) == [.applied, .applied, .applied, .applied])
                    // The rename at 11 loses to the tablet's at 12; the delete at 15 takes the check-in too.
                    #expect(try await phone.sync(world) == [.applied, .superseded, .applied])
                    _ = try await tablet.sync(world)
                }
                #expect(phone.live == tablet.live)
                let names = Set(phone.live.values.compactMap { $0.objectValue?["name"]?.stringValue })
                #expect(names == ["Tablet's name", "Stretch", "Swim"])
                #expect(phone.isDeleted(.task, task) && tablet.isDeleted(.task, task) && tablet.isDeleted(.checkin, checkIn))
                // The API and a new device see the same.
                var laptop = Device("laptop")
                _ = try await laptop.sync(world)
                #expect(laptop.live == phone.live)
                let systems = try await world.call(Scheduler.listSystems, Empty()).systems
                #expect(systems.map(\.name) == ["Tablet's name"] && systems[0].id == system.lowercased())
                #expect(Set(systems[0].tasks.map(\.name)) == ["Stretch", "Swim"])
                finals.append(phone.live)
            }
        }
        #expect(finals[0] == finals[1])
    }

    @Test("a tombstone wins over an older edit and loses to a newer one; an API delete leaves tombstones for what went with it")
    func tombstones() async throws {
        try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600))) { world in
            let system = UUID().uuidString.lowercased(), test = UUID().uuidString.lowercased(), entry = UUID().uuidString.lowercased()
            #expect(try await push(world, "phone", [
                try change(.system, system, at: 1, HabitSystemCreate(name: "Strength")),
                try change(.test, test, at: 2, PerformanceTestCreate(systemId: system, name: "Push-ups", unit: "reps", higherIsBetter: true, everyDays: 7)),
                try change(.entry, entry, at: 3, TestEntryCreate(testId: test, value: 20, date: "2026-11-22")),
            ]) == [.applied, .applied, .applied])
            #expect(try await world.call(Scheduler.listTests, Empty()).tests.first?.entries.map(\.value) == [20])

            #expect(try await push(world, "phone", [deletion(.test, test, at: 20)]) == [.applied])
            #expect(try await push(world, "tablet", [
                try change(.test, test, at: 15, PerformanceTestCreate(name: "Stale", unit: "reps", higherIsBetter: true, everyDays: 7)),
            ]) == [.superseded])
            #expect(try await world.call(Scheduler.listTests, Empty()).tests.isEmpty)
            let pulled = try await world.call(Scheduler.syncPull, HabitSyncPullRequest()).changes
            let tombstone = try #require(pulled.first { $0.id == test })
            #expect(tombstone.deleted && tombstone.record == nil && tombstone.updatedAt == t0.addingTimeInterval(20) && tombstone.deviceId == "phone")
            // The entry went with its test, at the test's time.
            #expect(pulled.first { $0.id == entry }?.deleted == true)
            // An older delete loses to the current version; a newer edit brings the record back.
            #expect(try await push(world, "tablet", [
                try change(.test, test, at: 25, PerformanceTestCreate(name: "Back", unit: "reps", higherIsBetter: true, everyDays: 7)),
            ]) == [.applied])
            #expect(try await push(world, "phone", [deletion(.test, test, at: 22)]) == [.superseded])
            #expect(try await world.call(Scheduler.listTests, Empty()).tests.map(\.name) == ["Back"])

            // Deleting a system through the API: its tasks and check-ins leave tombstones too.
            let task = try await world.call(Scheduler.createTask, HabitTaskCreate(systemId: system, name: "Squat", frequency: .daily))
            let check = try await world.call(Scheduler.checkIn, CheckInRequest(taskId: task.id, date: "2026-11-22"))
            let before = try await world.call(Scheduler.syncPull, HabitSyncPullRequest()).cursor
            _ = try await world.call(Scheduler.deleteSystem, HabitSystemID(systemId: system))
            let gone = try await world.call(Scheduler.syncPull, HabitSyncPullRequest(cursor: before)).changes
            #expect(Set(gone.map(\.id)) == [system, task.id, check.checkIn.id] && gone.allSatisfy { $0.deleted && $0.deviceId == "" })
            // A check-in for a task of a deleted system loses, and is recorded deleted so the device drops it.
            let late = UUID().uuidString.lowercased()
            #expect(try await push(world, "tablet", [try change(.checkin, late, at: 30, CheckInRequest(taskId: task.id, date: "2026-11-21"))]) == [.superseded])
            #expect(try await world.call(Scheduler.syncPull, HabitSyncPullRequest()).changes.first { $0.id == late }?.deleted == true)
        }
    }

    @Test("a tie of the same millisecond goes to the edit the scheduler receives later; a delete beats an edit from either side")
    func serverClockTieBreak() async throws {
        let system = UUID().uuidString.lowercased()
        for order in [["a-device", "b-device"], ["b-device", "a-device"]] {
            try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600))) { world in
                var devices = order.map(Device.init)
                _ = try await push(world, "a-device", [try change(.system, system, at: 1, HabitSystemCreate(name: "base"))])
                for index in devices.indices {
                    devices[index].make(try change(.system, system, at: 5, HabitSystemCreate(name: "from \(order[index])")))
                    #expect(try await devices[index].sync(world) == [.applied])
                }
                #expect(try await world.call(Scheduler.listSystems, Empty()).systems.map(\.name) == ["from \(order[1])"])
                _ = try await devices[0].sync(world)
                #expect(devices[0].live == devices[1].live)
                // Same millisecond, a delete and an edit: the delete wins whichever comes first.
                let racing = ["a-device": deletion(.system, system, at: 9), "b-device": try change(.system, system, at: 9, HabitSystemCreate(name: "edit at 9"))]
                for name in order { _ = try await push(world, name, [racing[name]!]) }
                #expect(try await world.call(Scheduler.listSystems, Empty()).systems.isEmpty)
            }
        }
    }

    @Test("pulls page by cursor with a limit; a record changed again moves to the end; kinds filter")
    func cursorPaging() async throws {
        try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600))) { world in
            let ids = (1...5).map { _ in UUID().uuidString.lowercased() }
            _ = try await push(world, "phone", try ids.enumerated().map { index, id in
                try change(.system, id, at: Double(index), HabitSystemCreate(name: "S\(index)"))
            })
            var cursor: String?
            var pages: [[String]] = []
            var more = true
            while more {
                let page = try await world.call(Scheduler.syncPull, HabitSyncPullRequest(cursor: cursor, limit: 2))
                pages.append(page.changes.map(\.id))
                cursor = page.cursor
                more = page.hasMore
            }
            #expect(pages == [[ids[0], ids[1]], [ids[2], ids[3]], [ids[4]]])
            #expect(try await world.call(Scheduler.syncPull, HabitSyncPullRequest(cursor: cursor)).changes.isEmpty)
            _ = try await world.call(Scheduler.updateSystem, HabitSystemUpdate(systemId: ids[0], name: "S0 renamed"))
            let next = try await world.call(Scheduler.syncPull, HabitSyncPullRequest(cursor: cursor))
            #expect(next.changes.map(\.id) == [ids[0]] && !next.hasMore && next.changes[0].deviceId == "")
            #expect(try await world.call(Scheduler.syncPull, HabitSyncPullRequest()).changes.map(\.id) == Array(ids[1...]) + [ids[0]])
            #expect(try await world.call(Scheduler.syncPull, HabitSyncPullRequest(kinds: [.task])).changes.isEmpty)
            #expect(await world.failure(Scheduler.syncPull, HabitSyncPullRequest(limit: 0))?.isInvalid("limit") == true)
            #expect(await world.failure(Scheduler.syncPull, HabitSyncPullRequest(limit: 501))?.isInvalid("limit") == true)
            #expect(await world.failure(Scheduler.syncPull, HabitSyncPullRequest(cursor: "bm90IGEgY3Vyc29y"))?.code == .invalidArgument)
            // Another user's pull sees none of it.
            #expect(try await world.call(Scheduler.syncPull, HabitSyncPullRequest(), user: "u2").changes.isEmpty)
        }
    }

    @Test("hostile pushes fail whole with nothing written: bad UUIDs, clocks far ahead, oversized batches, another user's id")
    func hostileInput() async throws {
        try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600))) { world in
            let good = try change(.system, UUID().uuidString, at: 1, HabitSystemCreate(name: "Fine"))
            func rejected(_ changes: [HabitSyncChange], user: String = "u1") async -> BusError? {
                await world.failure(Scheduler.syncPush, HabitSyncPushRequest(deviceId: "evil", changes: changes), user: user)
            }
            func nothingWritten() async throws -> Bool {
                try await world.call(Scheduler.syncPull, HabitSyncPullRequest()).changes.isEmpty
            }

            let badID = await rejected([good, try change(.system, "not-a-uuid", at: 2, HabitSystemCreate(name: "x"))])
            #expect(badID?.code == .invalidArgument && badID?.message.hasPrefix("changes[1]: field 'changes[1].id' must be a UUID") == true)
            #expect(try await nothingWritten())
            #expect(await world.failure(Scheduler.createSystem, HabitSystemCreate(name: "x", id: "123"))?.isInvalid("id") == true)

            // Clocks: up to five minutes ahead of the scheduler's is accepted; further is refused.
            let farAhead = HabitSyncChange(kind: .system, id: UUID().uuidString, updatedAt: instant("9999-12-31T23:59:59.999Z"), record: good.record)
            let future = await rejected([good, farAhead])
            #expect(future?.code == .invalidArgument && future?.details == .object(["field": .string("changes[1].updatedAt")]))
            #expect(future?.message.contains("must not be more than 300 seconds after the scheduler's clock") == true)
            #expect(try await nothingWritten())
            let slightlyAhead = HabitSyncChange(kind: .system, id: UUID().uuidString, updatedAt: world.clock.now().addingTimeInterval(240), record: good.record)
            #expect(try await push(world, "fast-clock", [slightlyAhead]) == [.applied])
            // An API edit of a record stamped ahead still wins: it is stamped just after it.
            let edited = try await world.call(Scheduler.updateSystem, HabitSystemUpdate(systemId: slightlyAhead.id, name: "Edited"))
            #expect(edited.name == "Edited" && edited.updatedAt > slightlyAhead.updatedAt)
            let written = try await world.call(Scheduler.syncPull, HabitSyncPullRequest()).cursor

            // Batches: 500 changes at most.
            let oversized = await rejected(try (0...500).map { index in try change(.system, UUID().uuidString, at: Double(index), HabitSystemCreate(name: "S")) })
            #expect(oversized?.isInvalid("changes") == true)
            // A change that fails midway takes the whole push back.
            let task = try change(.task, UUID().uuidString, at: 3, HabitTaskCreate(systemId: good.id, name: "T", frequency: .daily))
            let broken = HabitSyncChange(kind: .task, id: UUID().uuidString, updatedAt: t0, record: .object(["name": .string("no system")]))
            let midway = await rejected([good, task, broken])
            #expect(midway?.code == .invalidArgument && midway?.message.hasPrefix("changes[2].record: ") == true)
            let orphan = await rejected([try change(.task, UUID().uuidString, at: 3, HabitTaskCreate(systemId: UUID().uuidString, name: "T", frequency: .daily))])
            #expect(orphan?.code == .notFound && orphan?.message.hasPrefix("changes[0]: field 'systemId'") == true)
            #expect(try await world.call(Scheduler.syncPull, HabitSyncPullRequest(cursor: written)).changes.isEmpty)
            #expect(try await world.call(Scheduler.listSystems, Empty()).systems.count == 1)

            // Another user's id is refused in the same words as one's own, saying nothing of its record.
            let mine = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Private plans", id: UUID().uuidString))
            let theirs = await rejected([try change(.system, mine.id.uppercased(), at: 50, HabitSystemCreate(name: "Hijacked"))], user: "u2")
            #expect(theirs?.code == .alreadyExists && theirs?.message.contains("Private") == false && theirs?.message.contains("u1") == false)
            let viaAPI = await world.failure(Scheduler.createSystem, HabitSystemCreate(name: "x", id: mine.id), user: "u2")
            let ownAgain = await world.failure(Scheduler.createSystem, HabitSystemCreate(name: "x", id: mine.id), user: "u1")
            #expect(viaAPI?.code == .alreadyExists && viaAPI?.message == ownAgain?.message && viaAPI?.message == theirs.map { String($0.message.dropFirst("changes[0]: ".count)) })
            #expect(try await world.call(Scheduler.listSystems, Empty()).systems.contains { $0.id == mine.id && $0.name == "Private plans" })
            #expect(try await world.call(Scheduler.syncPull, HabitSyncPullRequest(), user: "u2").changes.isEmpty)
            // Nor can another user hang a task on it.
            let foreignParent = await world.failure(Scheduler.createTask, HabitTaskCreate(systemId: mine.id, name: "T", frequency: .daily), user: "u2")
            #expect(foreignParent?.code == .notFound)
        }
    }

    @Test("every habit change publishes habit.<kind>.created|updated|deleted for the record's user, with the device that made it")
    func events() async throws {
        try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600))) { world in
            let listener = try Bus(configuration: busConfiguration(world.endpoints, source: "tablet"), logger: testLogger("tablet"))
            let live = EventCollector(try listener.subscribe(["habit.checkin."]))
            try await eventually("the subscription is live") {
                try listener.publish(topic: "habit.checkin.probe", payload: Data("{}".utf8))
                return live.topics().contains("habit.checkin.probe")
            }
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Reading"))
            let task = try await world.call(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Read 10 pages", frequency: .daily))
            _ = try await world.call(Scheduler.updateSystem, HabitSystemUpdate(systemId: system.id, name: "Reader"))
            let checkIn = UUID().uuidString.lowercased()
            _ = try await push(world, "phone", [try change(.checkin, checkIn, at: 100, CheckInRequest(taskId: task.id, date: "2026-11-22", note: "on the train"))])
            let test = try await world.call(Scheduler.createTest, PerformanceTestCreate(name: "Pages/hour", unit: "pages", higherIsBetter: true, everyDays: 30))
            let recorded = try await world.call(Scheduler.recordTest, TestEntryCreate(testId: test.id, value: 42))
            _ = try await world.call(Scheduler.deleteTask, HabitTaskID(taskId: task.id))

            let events = try await world.storedEvents(habitData: true)
            #expect(events.map(\.topic) == [
                "habit.system.created", "habit.task.created", "habit.system.updated", "habit.checkin.created",
                "habit.test.created", "habit.entry.created", "habit.checkin.deleted", "habit.task.deleted",
            ])
            #expect(events.allSatisfy { $0.header.user == "u1" && $0.header.source == "scheduler" })
            let declared = Set(Scheduler.topics.map(\.name))
            #expect(events.allSatisfy { declared.contains($0.topic) })
            let changes = try events.map { try WireCoding.decode(HabitSyncChange.self, from: $0.payload.jsonData) }
            #expect(changes.map(\.id) == [system.id, task.id, system.id, checkIn, test.id, recorded.entries[0].id, checkIn, task.id])
            #expect(changes[3].deviceId == "phone" && changes[3].record?.objectValue?["note"]?.stringValue == "on the train")
            #expect(changes[2].record?.objectValue?["name"]?.stringValue == "Reader" && changes[2].deviceId == "")
            #expect(changes[6].deleted && changes[6].record == nil)
            // Recording an entry is a change of the entry, not of the test's definition.
            #expect(recorded.updatedAt == test.updatedAt)
            // Another device hears of it as it happens.
            try await eventually("the live check-in events arrive") { Set(live.topics()).isSuperset(of: ["habit.checkin.created", "habit.checkin.deleted"]) }
            #expect(live.all.first { $0.topic == "habit.checkin.created" }?.header.user == "u1")
            live.cancel()
            await listener.shutdown()
        }
    }

    @Test("one check-in per task and day: of two devices' check-ins for the same day, the later one stays")
    func checkInsOfOneDay() async throws {
        try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600))) { world in
            let system = UUID().uuidString, task = UUID().uuidString
            _ = try await push(world, "phone", [
                try change(.system, system, at: 1, HabitSystemCreate(name: "Health")),
                try change(.task, task, at: 2, HabitTaskCreate(systemId: system, name: "Walk", frequency: .daily)),
            ])
            let phoneCheckIn = UUID().uuidString.lowercased(), watchCheckIn = UUID().uuidString.lowercased()
            #expect(try await push(world, "watch", [try change(.checkin, watchCheckIn, at: 20, CheckInRequest(taskId: task, date: "2026-11-22", note: "watch"))]) == [.applied])
            #expect(try await push(world, "phone", [try change(.checkin, phoneCheckIn, at: 10, CheckInRequest(taskId: task, date: "2026-11-22", note: "phone"))]) == [.superseded])
            var pulled = try await world.call(Scheduler.syncPull, HabitSyncPullRequest(kinds: [.checkin])).changes
            #expect(pulled.first { $0.id == phoneCheckIn }?.deleted == true && pulled.first { $0.id == watchCheckIn }?.deleted == false)
            // A later one takes the day.
            #expect(try await push(world, "phone", [try change(.checkin, phoneCheckIn, at: 30, CheckInRequest(taskId: task, date: "2026-11-22", note: "phone again"))]) == [.applied])
            pulled = try await world.call(Scheduler.syncPull, HabitSyncPullRequest(kinds: [.checkin])).changes
            #expect(pulled.first { $0.id == watchCheckIn }?.deleted == true)
            let list = try await world.call(Scheduler.listCheckIns, CheckInListRequest(from: "2026-11-22", to: "2026-11-22"))
            #expect(list.checkIns.map(\.id) == [phoneCheckIn] && list.checkIns[0].note == "phone again")
        }
    }

    @Test("a database from before sync keeps every habit row; a first pull returns them, oldest first")
    func migration() async throws {
        let directory = try temporaryDirectory()
        let url = directory.appending(path: "scheduler.sqlite")
        // The schema as released before sync, with one record of each kind.
        let queue = try DatabaseQueue(path: url.path)
        try SchedulerDatabase.migrator.migrate(queue, upTo: "scheduler.v3: task description, check-ins by date")
        let ids = (0..<5).map { _ in UUID().uuidString.lowercased() }
        try await queue.write { db in
            try db.execute(sql: """
                INSERT INTO habit_system (id, user_id, name, identity, category, created_at, updated_at) VALUES (?, 'u1', 'Old system', 'a reader', NULL, 1000, 1000);
                INSERT INTO habit_task (id, user_id, system_id, name, weekdays, created_at, updated_at, description) VALUES (?, 'u1', ?, 'Old task', '1,3', 2000, 2000, 'ten pages');
                INSERT INTO check_in (id, user_id, task_id, date, note, created_at, updated_at) VALUES (?, 'u1', ?, '2026-11-20', 'kept', 3000, 3000);
                INSERT INTO perf_test (id, user_id, system_id, name, unit, higher_is_better, every_days, start_date, created_at, updated_at)
                    VALUES (?, 'u1', ?, 'Old test', 'pages', 1, 7, '2026-11-01', 4000, 5000);
                INSERT INTO perf_entry (id, user_id, test_id, date, value, note, created_at, updated_at) VALUES (?, 'u1', ?, '2026-11-02', 12.5, NULL, 4500, 4500);
                """, arguments: [ids[0], ids[1], ids[0], ids[2], ids[1], ids[3], ids[0], ids[4], ids[3]])
        }
        try queue.close()
        try await withWorld(SchedulerWorld.start(at: t0.addingTimeInterval(3600), directory: directory)) { world in
            let pulled = try await world.call(Scheduler.syncPull, HabitSyncPullRequest())
            #expect(pulled.changes.map(\.id) == [ids[0], ids[1], ids[2], ids[4], ids[3]])  // by updatedAt
            #expect(pulled.changes.map(\.kind) == [.system, .task, .checkin, .entry, .test] && pulled.changes.allSatisfy { $0.deviceId == "" })
            let systems = try await world.call(Scheduler.listSystems, Empty()).systems
            #expect(systems.map(\.name) == ["Old system"] && systems[0].tasks.map(\.description) == ["ten pages"])
            #expect(systems[0].tasks[0].frequency == .on([1, 3]) && systems[0].updatedAt == Date(unixMilliseconds: 1000))
            let tests = try await world.call(Scheduler.listTests, Empty()).tests
            #expect(tests.map(\.name) == ["Old test"] && tests[0].entries.map(\.value) == [12.5] && tests[0].best == 12.5)
            #expect(try await world.call(Scheduler.listCheckIns, CheckInListRequest(from: "2026-11-20", to: "2026-11-20")).checkIns.map(\.note) == ["kept"])
            // And they sync like any other.
            #expect(try await push(world, "phone", [try change(.system, ids[0], at: 10, HabitSystemCreate(name: "Renamed"))]) == [.applied])
        }
    }
}
