import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import Synchronization
import TestSupport
import Testing
import Wire

/// The real `store` executable as a child process. (Spawned by ChildProcess: Foundation's
/// `Process.run()` crashed now and then while other tests spawned processes at the same time.)
struct StoreProcess {
    let process: ChildProcess

    init(endpoints: Broker.Endpoints, dataDirectory: URL) throws {
        var environment = serviceEnvironment(endpoints)
        environment["DATA_DIR"] = dataDirectory.path
        environment["LOG_LEVEL"] = "warning"
        process = try ChildProcess(executable: builtProductsDirectory.appending(path: "store").path, environment: environment,
                                   logFile: dataDirectory.appending(path: "store.log").path)
    }

    func kill9() async {
        process.send(SIGKILL)
        await process.waitForExit()
    }
}

/// What the store acknowledged, collected by concurrent writers.
final class Acknowledged: Sendable {
    let tasks = Mutex<[String]>([])
    let puts = Mutex<[MaterialPutResult]>([])
}

@Suite("Crash safety of the real binary")
struct CrashTests {
    @Test("kill -9 during a write burst: after restart the file is sound and every acknowledged write is there")
    func killDuringWrites() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let directory = try temporaryDirectory()
            let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
            var store = try StoreProcess(endpoints: endpoints, dataDirectory: directory)
            try await eventually("the store binary serves", timeout: Wait.startup) {
                (try? await client.call(Reserved.health("store"), Empty(), options: CallOptions(timeout: .seconds(1)))) != nil
            }

            let acknowledged = Acknowledged()
            let options = CallOptions(user: "alice", timeout: .seconds(2))
            let writers = (0..<8).map { writer in
                Task {
                    for index in 0..<10_000 where !Task.isCancelled {
                        do {
                            if writer == 0 {
                                let result = try await client.call(Store.putMaterial, samplePut(title: "Put \(index)", cards: 5), options: options)
                                acknowledged.puts.withLock { $0.append(result) }
                            } else {
                                let id = "w\(writer)-\(index)"
                                _ = try await client.call(Store.createTask, StudyTaskCreate(id: id, title: "Task \(id)"), options: options)
                                acknowledged.tasks.withLock { $0.append(id) }
                            }
                        } catch {
                            return  // the store is gone
                        }
                    }
                }
            }
            try await eventually("a burst of writes acknowledged", timeout: Wait.work) { acknowledged.tasks.withLock { $0.count } >= 300 && acknowledged.puts.withLock { $0.count } >= 3 }
            await store.kill9()
            for writer in writers { await writer.value }
            let tasks = acknowledged.tasks.withLock { $0 }, puts = acknowledged.puts.withLock { $0 }

            // The file as the killed process left it.
            do {
                let queue = try DatabaseQueue(path: directory.appending(path: "store.sqlite").path)
                let check = try await queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
                #expect(check == "ok")
                try queue.close()
            }

            store = try StoreProcess(endpoints: endpoints, dataDirectory: directory)
            try await eventually("the restarted binary serves", timeout: Wait.startup) {
                (try? await client.call(Reserved.health("store"), Empty(), options: CallOptions(timeout: .seconds(1)))) != nil
            }
            var pages: [StudyTask] = []
            var cursor: String?
            repeat {
                let page = try await client.call(Store.listTasks, StudyTaskList(limit: 500, cursor: cursor), options: options)
                pages += page.items
                cursor = page.nextCursor
            } while cursor != nil
            let stored = Set(pages.map(\.id))
            #expect(Set(tasks).isSubset(of: stored), "missing acknowledged tasks: \(Set(tasks).subtracting(stored).sorted().prefix(5))")
            for put in puts {
                let chunks = try await client.call(Store.listChunks, ChunkList(materialId: put.material.id), options: options)
                let cards = try await client.call(Store.listFlashcards, FlashcardList(materialId: put.material.id), options: options)
                #expect(chunks.items.map(\.id) == put.chunkIds && cards.items.map(\.id) == put.flashcardIds)
            }
            // Every material that exists is whole: the transaction of a put is all or nothing.
            let materials = try await client.call(Store.listMaterials, MaterialList(limit: 500), options: options).items
            for material in materials {
                #expect(try await client.call(Store.listFlashcards, FlashcardList(materialId: material.id), options: options).items.count == 5)
            }
            await store.process.terminate()
            await client.shutdown()
        }
    }
}
