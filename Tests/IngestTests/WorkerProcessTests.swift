import BrokerCore
import Bus
import Contracts
import Foundation
import Glibc
import TestSupport
import Testing
import Wire

/// The real `ingest` binary, next to the test bundle in the build folder.
struct IngestProcess {
    let process: ChildProcess

    static var binary: URL { builtProductsDirectory.appending(path: "ingest") }

    /// Settings that make a lost worker's material fail within seconds: jobs may take 8 s, a
    /// material processing for 10 s is lost, every worker sweeps every second.
    static let fastSweep = ["INGEST_JOB_TIMEOUT_SECONDS": "8", "INGEST_STUCK_AFTER_SECONDS": "10", "INGEST_SWEEP_INTERVAL_SECONDS": "1"]

    static func launch(_ world: IngestWorld, instance: String, settings: [String: String] = fastSweep) throws -> IngestProcess {
        var environment = serviceEnvironment(world.endpoints)
        environment["BUS_INSTANCE"] = instance
        environment["LOG_LEVEL"] = "info"
        environment.merge(settings) { _, new in new }
        let log = world.directory.appending(path: "\(instance).log").path
        return IngestProcess(process: try ChildProcess(executable: binary.path, environment: environment, logFile: log))
    }

    func kill9() async {
        process.send(SIGKILL)
        await process.waitForExit()
    }

    func terminate() async {
        await process.terminate()
    }
}

@Suite("Real ingest processes: killed mid-job, stopped gracefully, two sharing a burst", .serialized)
struct WorkerProcessTests {
    @Test("a worker killed mid-job: its material ends failed ('worker lost') by another worker's sweep, and retry succeeds")
    func workerKilledMidJob() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: IngestProcess.binary.path), "swift build --build-tests builds the ingest binary")
        let whisper = try await WhisperMock()
        let world = try await IngestWorld(ingest: nil, gateway: whisper.gatewayConfiguration)
        var workers: [IngestProcess] = []
        do {
            // The first transcription hangs, so the worker is mid-job when it dies.
            try await whisper.script([.object(["delayMs": .int(30_000)])])
            workers.append(try IngestProcess.launch(world, instance: "ingest-a"))
            try await world.waitForService("ingest")
            let submitted = try await world.submit("speech.wav", IngestSubmit(fileName: "speech.wav", wait: false))
            try await eventually("the job's transcription reached the provider", timeout: .seconds(30)) {
                try await whisper.transcriptions().count == 1
            }
            await workers[0].kill9()
            #expect(try await world.store(Store.getMaterial, RecordID(id: submitted.materialId)).status == .processing)

            workers.append(try IngestProcess.launch(world, instance: "ingest-b"))
            let failed = try await world.waitFor(submitted.materialId, status: .failed, timeout: .seconds(60))
            #expect(failed.failureReason?.hasPrefix("worker lost") == true)
            #expect(try await world.storeEvents(Store.ingestFailed).map(\.materialId) == [submitted.materialId])

            let retried = try await world.client.call(
                Ingest.retry, IngestRetry(materialId: submitted.materialId), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(retried.material.status == .ready)
            #expect(try await world.chunks(submitted.materialId).map(\.text) == ["show math\n\nmaterials"])  // the mock's two segments
        } catch {
            for worker in workers { await worker.terminate() }
            await world.stop()
            await whisper.stop()
            throw error
        }
        for worker in workers { await worker.terminate() }
        await world.stop()
        await whisper.stop()
    }

    @Test("a worker stopped with SIGTERM during a job that does not finish in its grace time fails it, saying to retry")
    func gracefulShutdownHandsBackUnfinishedJobs() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: IngestProcess.binary.path), "swift build --build-tests builds the ingest binary")
        let whisper = try await WhisperMock()
        let world = try await IngestWorld(ingest: nil, gateway: whisper.gatewayConfiguration)
        var worker: IngestProcess?
        do {
            try await whisper.script([.object(["delayMs": .int(30_000)])])
            worker = try IngestProcess.launch(world, instance: "ingest-a", settings: ["INGEST_SHUTDOWN_GRACE_SECONDS": "1"])
            try await world.waitForService("ingest")
            let submitted = try await world.submit("speech.wav", IngestSubmit(fileName: "speech.wav", wait: false))
            try await eventually("the job is extracting", timeout: .seconds(30)) {
                world.progress(submitted.materialId).contains { $0.stage == .extracting }
            }
            worker?.process.send(SIGTERM)
            #expect(await worker?.process.waitForExit(timeout: .seconds(30)) == 0)
            let material = try await world.waitFor(submitted.materialId, status: .failed)
            #expect(material.failureReason?.contains("stopped while processing this material; call ingest.retry") == true)
        } catch {
            await worker?.terminate()
            await world.stop()
            await whisper.stop()
            throw error
        }
        await world.stop()
        await whisper.stop()
    }

    @Test("two workers share a burst of jobs: every material ends ready, and both workers processed some")
    func twoWorkersShareABurst() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: IngestProcess.binary.path), "swift build --build-tests builds the ingest binary")
        let world = try await IngestWorld(ingest: nil)
        var workers: [IngestProcess] = []
        do {
            let settings = ["INGEST_CREDIT": "2", "INGEST_CONCURRENCY": "2"]
            workers.append(try IngestProcess.launch(world, instance: "ingest-a", settings: settings))
            workers.append(try IngestProcess.launch(world, instance: "ingest-b", settings: settings))
            try await eventually("both workers registered", timeout: Wait.startup) {
                let reply = try? await world.client.callRaw(service: BrokerProtocol.mmiServices, method: "list", payload: Data())
                let services = reply.flatMap { try? WireCoding.decode([ServiceStatus].self, from: $0.payload) }
                return services?.first { $0.name == "ingest" }?.workers == 2
            }
            let count = 24
            let results = try await withThrowingTaskGroup(of: IngestResult.self) { group in
                for index in 0..<count {
                    let text = "# Burst document \(index)\n\n" + String(repeating: "Sentence \(index) about cells and energy. ", count: 40)
                    group.addTask { try await world.submit(data: Data(text.utf8), IngestSubmit(fileName: "burst-\(index).md")) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0.material.status == .ready })
            #expect(Set(results.map(\.materialId)).count == count)
            try await eventually("the last progress events arrived") {
                results.allSatisfy { result in world.progress(result.materialId).last?.stage == .ready }
            }
            let instances = world.events.all.filter { $0.topic == Ingest.progress.name && $0.header.instance.hasPrefix("ingest-") }
                .map(\.header.instance)
            #expect(Set(instances) == ["ingest-a", "ingest-b"])
        } catch {
            for worker in workers { await worker.terminate() }
            await world.stop()
            throw error
        }
        for worker in workers { await worker.terminate() }
        await world.stop()
    }
}
