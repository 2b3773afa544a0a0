import BrokerCore
import Bus
import Crypto
import Foundation
import GRDB
import ServiceKit
@testable import Storage
import TestSupport
import Testing
import Wire

/// The "notes" service answering `_backup` with `policy`, on a real broker.
struct BackupWorld: TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let bus: Bus
    let client: Bus
    let database: ServiceDatabase
    let directory: URL
    let hostTask: Task<Void, any Error>

    static func start(policy: BackupPolicy = BackupPolicy()) async throws -> BackupWorld {
        let (broker, endpoints) = try await startBroker()
        let bus = try Bus(configuration: busConfiguration(endpoints, source: "notes"), logger: testLogger("notes"))
        let directory = try temporaryDirectory()
        let (database, _) = try Producer.open(at: directory, bus: bus)
        try await database.pool.write { db in
            for n in 1...2000 { try db.execute(sql: "INSERT INTO note (n) VALUES (?)", arguments: [n]) }
        }
        let host = ServiceHost(bus: bus, service: "notes", logger: testLogger("notes"))
        host.serveBackup(of: database, policy: policy)
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        let world = BackupWorld(broker: broker, endpoints: endpoints, bus: bus, client: client, database: database, directory: directory,
                                hostTask: Task { try await host.run() })
        try await eventually("notes serves", timeout: Wait.startup) { (try? await client.call(Reserved.health("notes"), Empty()))?.status == .serving }
        return world
    }

    func backup() async throws(BusError) -> (BackupInfo, Data?) {
        try await client.callWithAttachment(Reserved.backup("notes"), Empty(), options: CallOptions(timeout: .seconds(60)))
    }

    /// Files in the service's folder other than the database's own.
    func leftovers() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix("notes.sqlite") }
    }

    func stop() async {
        hostTask.cancel()
        _ = try? await hostTask.value
        await client.shutdown()
        await bus.shutdown()
        await broker.stop()
    }
}

@Suite("_backup: one copy at a time, never filling the disk")
struct BackupLimitTests {
    @Test("while a copy is being made, another _backup is RESOURCE_EXHAUSTED saying so; afterwards one succeeds")
    func oneAtATime() async throws {
        try await withWorld(BackupWorld.start()) { world in
            let slot = try world.database.reserveBackupSlot(service: "notes")
            do throws(BusError) {
                _ = try await world.backup()
                Issue.record("a second backup ran while one was being made")
            } catch {
                #expect(error.code == .resourceExhausted && error.message.contains("is being made already; one is made at a time"))
            }
            #expect(try world.leftovers().isEmpty, "the refused call wrote nothing")
            slot.release()
            let (info, attachment) = try await world.backup()
            let data = try #require(attachment)
            #expect(info.bytes == Int64(data.count) && info.sha256 == SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
            #expect(try world.leftovers().isEmpty)
        }
    }

    @Test("concurrent _backup calls: each is a whole, checked copy or the one-at-a-time refusal, never anything else")
    func concurrentCalls() async throws {
        try await withWorld(BackupWorld.start()) { world in
            let outcomes = await withTaskGroup(of: Result<Data, BusError>.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        do throws(BusError) {
                            let (info, attachment) = try await world.backup()
                            guard let data = attachment, Int64(data.count) == info.bytes else { return .failure(.internal("incomplete copy")) }
                            return .success(data)
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let copies = outcomes.filter { if case .success = $0 { true } else { false } }.count
            let refusals = outcomes.filter { if case .failure(let error) = $0 { error.code == .resourceExhausted } else { false } }.count
            #expect(copies >= 1 && copies + refusals == outcomes.count, "\(outcomes)")
            let leftovers = try world.leftovers()
            #expect(leftovers.isEmpty)
        }
    }

    @Test("a copy that would leave less than BACKUP_MIN_FREE_BYTES free is RESOURCE_EXHAUSTED naming the setting, before anything is written")
    func diskMargin() async throws {
        try await withWorld(BackupWorld.start(policy: BackupPolicy(minimumFreeBytes: Int64.max / 2))) { world in
            do throws(BusError) {
                _ = try await world.backup()
                Issue.record("the backup ran although the disk cannot keep the margin")
            } catch {
                #expect(error.code == .resourceExhausted && error.message.contains("BACKUP_MIN_FREE_BYTES = \(Int64.max / 2) must stay free"))
                #expect(error.details?["setting"] == .string("BACKUP_MIN_FREE_BYTES") && error.details?["minimumFree"] == .int(Int64.max / 2))
                #expect((error.details?["bytes"]?.intValue ?? 0) > 0 && (error.details?["free"]?.intValue ?? 0) > 0)
            }
            let leftovers = try world.leftovers()
            #expect(leftovers.isEmpty)
            #expect(try await world.client.call(Reserved.health("notes"), Empty()).status == .serving)
        }
    }

    @Test("busctl backup --json prints the copy's description and where it went")
    func busctlBackupJSON() async throws {
        try await withWorld(BackupWorld.start()) { world in
            let target = try temporaryDirectory().appending(path: "notes.sqlite")
            let result = try await busctl(["backup", "notes", target.path, "--json"], world.endpoints, timeout: .seconds(60))
            #expect(result.status == 0, "busctl failed: \(result.err)")
            let printed = try JSONValue.parse(Data(result.out.utf8))
            #expect(printed["service"] == .string("notes") && printed["path"] == .string(target.path))
            #expect(printed["bytes"]?.intValue == Int64(try Data(contentsOf: target).count))
        }
    }

    @Test("busctl backup replaces a destination that is a symbolic link instead of writing through it")
    func busctlDoesNotFollowLinks() async throws {
        try await withWorld(BackupWorld.start()) { world in
            let folder = try temporaryDirectory()
            let victim = folder.appending(path: "victim.txt")
            try Data("keep me".utf8).write(to: victim)
            let target = folder.appending(path: "notes.sqlite")
            try FileManager.default.createSymbolicLink(at: target, withDestinationURL: victim)
            let result = try await busctl(["backup", "notes", target.path], world.endpoints, timeout: .seconds(60))
            #expect(result.status == 0, "busctl failed: \(result.err)")
            #expect(String(decoding: try Data(contentsOf: victim), as: UTF8.self) == "keep me")
            let attributes = try FileManager.default.attributesOfItem(atPath: target.path)
            #expect(attributes[.type] as? FileAttributeType == .typeRegular)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["notes.sqlite", "victim.txt"])
        }
    }
}
