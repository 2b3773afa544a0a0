import Bus
import Contracts
import Crypto
import Foundation
import GRDB
import StoreCore
import Synchronization
import TestSupport
import Testing
import Wire

@Suite("Backups of the running store: _backup and busctl backup")
struct BackupTests {
    @Test("_backup while writes go on: the copy matches its size and checksum, passes integrity_check and holds every row written before")
    func backupThroughTheBus() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let before = try await addTasks(world, count: 40, prefix: "before")
            let writer = try await BackgroundWriter.start(world)
            let (info, attachment) = try await world.client.callWithAttachment(
                Reserved.backup("store"), Empty(), options: CallOptions(timeout: .seconds(120)))
            await writer.stop()

            let data = try #require(attachment)
            #expect(info.service == "store" && info.file == "store.sqlite")
            #expect(info.bytes == Int64(data.count))
            #expect(info.sha256 == SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
            #expect(info.migrations == StoreSchema.migrator.migrations)
            let copy = try temporaryDirectory().appending(path: "store-backup.sqlite")
            try data.write(to: copy)
            try expectSoundCopy(at: copy, holding: before)
            #expect(try leftovers(in: world.directory).isEmpty)
        }
    }

    @Test("busctl backup writes the checked copy to the file atomically and prints its size and path")
    func busctlBackup() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let before = try await addTasks(world, count: 40, prefix: "before")
            let writer = try await BackgroundWriter.start(world)
            let folder = try temporaryDirectory()
            let target = folder.appending(path: "store.sqlite")
            try Data("an older backup".utf8).write(to: target)
            let result = try await busctl(["backup", "store", target.path], world.endpoints, timeout: .seconds(120))
            await writer.stop()

            #expect(result.status == 0, "busctl failed: \(result.err)")
            let size = try #require(FileManager.default.attributesOfItem(atPath: target.path)[.size] as? NSNumber).int64Value
            #expect(result.out.hasPrefix("store: \(size) bytes, sha256 "))
            #expect(result.out.contains("migrations (newest: store.v5.processing-lease) -> \(target.path)"))
            let permissions = try #require(FileManager.default.attributesOfItem(atPath: target.path)[.posixPermissions] as? NSNumber)
            #expect(permissions.intValue == 0o600)
            try expectSoundCopy(at: target, holding: before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix("store.sqlite") } == [])
        }
    }

    @Test("a database larger than the broker's largest message is RESOURCE_EXHAUSTED naming the limit and the setting; nothing is left behind")
    func tooLarge() async throws {
        let limit: Int64 = 16 << 10
        try await withWorld(StoreWorld.start(maxMessageBytes: limit)) { world in
            _ = try await addTasks(world, count: 40, prefix: "t")
            do throws(BusError) {
                _ = try await world.client.callWithAttachment(Reserved.backup("store"), Empty(), options: CallOptions(timeout: .seconds(60)))
                Issue.record("_backup succeeded with a \(limit)-byte limit")
            } catch {
                #expect(error.code == .resourceExhausted)
                #expect(error.message.contains("more than the largest message the broker accepts (BROKER_MAX_MESSAGE_BYTES = 16384)"))
                #expect(error.details?["setting"] == .string("BROKER_MAX_MESSAGE_BYTES") && error.details?["limit"] == .int(limit))
                #expect((error.details?["bytes"]?.intValue ?? 0) > limit)
            }
            let target = try temporaryDirectory().appending(path: "store.sqlite")
            let result = try await busctl(["backup", "store", target.path], world.endpoints, timeout: .seconds(120))
            #expect(result.status == 8)
            #expect(result.err.contains("RESOURCE_EXHAUSTED: the backup of store is"))
            #expect(!FileManager.default.fileExists(atPath: target.path))
            #expect(try leftovers(in: world.directory).isEmpty)
            #expect(try await world.client.call(Reserved.health("store"), Empty()).status == .serving)
        }
    }

    @Test("a temporary copy left by a process that died while backing up is deleted when the store starts")
    func leftoverCopy() async throws {
        let directory = try temporaryDirectory()
        try Data("half a copy".utf8).write(to: directory.appending(path: ".backup-0f1e2d3c.sqlite"))
        try await withWorld(StoreWorld.start(directory: directory)) { world in
            let remaining = try leftovers(in: directory)
            #expect(remaining.isEmpty)
        }
    }

    @Test("restored as docs/operations.md says, the store starts on the backup and numbers its next events after every one published before")
    func restore() async throws {
        let directory = try temporaryDirectory()
        var kept: [String] = [], lost: [String] = [], backup: Data?, publishedBefore: Int64 = 0
        do {  // the store's first life, ended before its file is replaced
            try await withWorld(StoreWorld.start(directory: directory)) { world in
                kept = try await addTasks(world, count: 5, prefix: "kept")
                backup = try await world.client.callWithAttachment(Reserved.backup("store"), Empty(), options: CallOptions(timeout: .seconds(60))).attachment
                lost = try await addTasks(world, count: 5, prefix: "lost")
                publishedBefore = try await world.events().last?.header.seq ?? 0
            }
        }

        // Restoring: replace the file, drop the old write-ahead log, move the event numbering on.
        let file = directory.appending(path: "store.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        try #require(backup).write(to: file)
        let restoring = try DatabaseQueue(path: file.path)
        try await restoring.write { db in try db.execute(sql: "UPDATE sqlite_sequence SET seq = seq + 1000000 WHERE name = 'bus_outbox'") }
        try restoring.close()

        try await withWorld(StoreWorld.start(directory: directory)) { world in
            let tasks = Set(try await world.call(Store.listTasks, StudyTaskList(limit: 500)).items.map(\.id))
            #expect(tasks == Set(kept), "lost: \(lost)")
            let next = try await world.call(Store.createTask, StudyTaskCreate(id: "after-restore", title: "After"))
            let last = try #require(try await world.events().last)
            #expect(last.topic == "task.created")
            #expect(try last.decode(Store.taskCreated).id == next.id)
            #expect(last.header.seq > publishedBefore)
        }
    }
}

/// Creates `count` tasks for alice, one call each; returns their ids.
private func addTasks(_ world: StoreWorld, count: Int, prefix: String) async throws -> [String] {
    var ids: [String] = []
    for index in 0..<count {
        ids.append(try await world.call(Store.createTask, StudyTaskCreate(id: "\(prefix)-\(index)", title: "Task \(index)")).id)
    }
    return ids
}

/// Keeps creating tasks until stopped, so a backup is taken while the store writes.
private struct BackgroundWriter {
    let task: Task<Void, Never>

    /// Starts writing, and returns once the first write went through.
    static func start(_ world: StoreWorld) async throws -> BackgroundWriter {
        let written = Atomic<Int>(0)
        let task = Task {
            var index = 0
            while !Task.isCancelled {
                index += 1
                if (try? await world.call(Store.createTask, StudyTaskCreate(id: "during-\(index)", title: "During \(index)"))) != nil {
                    written.add(1, ordering: .relaxed)
                }
            }
        }
        try await eventually("writes are going on") { written.load(ordering: .relaxed) > 0 }
        return BackgroundWriter(task: task)
    }

    func stop() async {
        task.cancel()
        await task.value
    }
}

/// Checks that the SQLite file at `url` is sound and holds alice's tasks `ids`.
private func expectSoundCopy(at url: URL, holding ids: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
    let copy = try DatabaseQueue(path: url.path)
    try copy.read { db in
        #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok", sourceLocation: sourceLocation)
        let stored = Set(try String.fetchAll(db, sql: "SELECT id FROM task WHERE user_id = 'alice'"))
        #expect(stored.isSuperset(of: ids), "missing: \(Set(ids).subtracting(stored).sorted())", sourceLocation: sourceLocation)
    }
    try copy.close()
}

/// The temporary files a backup could leave in the store's folder.
private func leftovers(in directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".backup-") }
}
