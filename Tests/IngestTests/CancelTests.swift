import Bus
import Contracts
import Foundation
@testable import IngestCore
import TestSupport
import Testing
import Wire

/// `ingest.cancel`: a running or queued job stops (its tool killed), its material ends `failed`
/// with reason `cancelled`, and nothing of the job is stored; a result that comes late is refused.
@Suite("ingest.cancel", .serialized)
struct CancelTests {
    /// A pdftotext that writes its pid to `pidFile` and sleeps a minute: a job that stays in
    /// its extracting stage until it is stopped. The caller removes both files. The pid goes to
    /// a temporary name first and is renamed into place, so whoever sees the file sees the pid.
    static func slowTool() async throws -> (tool: URL, pidFile: URL) {
        let pidFile = FileManager.default.temporaryDirectory.appending(path: "cancel-\(UUID().uuidString).pid")
        let tool = FileManager.default.temporaryDirectory.appending(path: "slow-tool-\(UUID().uuidString).sh")
        // Written by a shell of its own: a file this process wrote could be held open by a child
        // another test forks at that moment (a web server lives for its whole test), and
        // executing it then fails with ETXTBSY.
        let writer = try ChildProcess(executable: "/bin/sh", arguments: [
            "-c", "printf '%s\\n' \"$1\" > \"$2\" && chmod 755 \"$2\"", "sh", "#!/bin/sh\necho $$ > \(pidFile.path).$$ && mv \(pidFile.path).$$ \(pidFile.path)\nexec sleep 60", tool.path,
        ])
        #expect(await writer.waitForExit() == 0)
        return (tool, pidFile)
    }

    /// The pid the slow tool wrote, once it runs (`what` names the wait).
    static func runningPID(_ pidFile: URL, _ what: String) async throws -> Int32 {
        try await eventually(what, timeout: .seconds(20)) { FileManager.default.fileExists(atPath: pidFile.path) }
        return try #require(Int32(String(decoding: try Data(contentsOf: pidFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    func cancel(_ world: IngestWorld, _ materialId: String, user: String? = "alice") async throws(BusError) -> Material {
        try await world.client.call(Ingest.cancel, IngestCancel(materialId: materialId), options: CallOptions(user: user))
    }

    /// The error cancelling fails with (the test fails if it succeeds).
    func cancelFailure(_ world: IngestWorld, _ materialId: String, user: String? = "alice", sourceLocation: SourceLocation = #_sourceLocation) async -> BusError? {
        do throws(BusError) {
            _ = try await cancel(world, materialId, user: user)
            Issue.record("ingest.cancel of \(materialId) succeeded; expected an error", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    /// Nothing of the material but the material itself: no document, chunks or cards.
    func expectNothingStored(_ world: IngestWorld, _ materialId: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await world.chunks(materialId).isEmpty, sourceLocation: sourceLocation)
        #expect(try await world.flashcards(materialId).isEmpty, sourceLocation: sourceLocation)
        #expect(try await world.store(Store.listSourceDocuments, SourceDocumentList(materialId: materialId)).items.isEmpty, sourceLocation: sourceLocation)
        let ingested = try await world.storeEvents(Store.materialIngested)
        #expect(!ingested.contains(where: { $0.material.id == materialId }), sourceLocation: sourceLocation)
    }

    @Test("cancelling a running job kills its tool, fails the material with reason 'cancelled' and stores nothing of it; again is the same")
    func cancelRunning() async throws {
        let (tool, pidFile) = try await Self.slowTool()
        defer { for url in [tool, pidFile] { try? FileManager.default.removeItem(at: url) } }
        try await withIngest(testIngestConfiguration { $0.tools.pdftotext = tool.path }) { world in
            let pdf = try Fixture.data("lecture.pdf")
            // One caller waits for the job, as the app's upload screen does.
            let waiting = Task { try await world.submit(data: pdf, IngestSubmit(fileName: "lecture.pdf")) }
            let pid = try await Self.runningPID(pidFile, "the tool runs")
            let materialId = try #require(try await world.materials().first?.id)

            let started = ContinuousClock.now
            let cancelled = try await cancel(world, materialId)
            #expect(cancelled.status == .failed && cancelled.failureReason == "cancelled")
            let waited = await waiting.result
            #expect(ContinuousClock.now - started < .seconds(10))
            guard case .failure(let failure) = waited, let error = failure as? BusError else { Issue.record("the waiting submit did not fail: \(waited)"); return }
            #expect(error.code == .cancelled && error.details?["materialId"]?.stringValue == materialId, "\(error)")
            try await eventually("the tool is killed", timeout: .seconds(10)) { Hostile.isGone(pid) }
            #expect(world.ingest?.runner.activeCount == 0)

            let material = try await world.store(Store.getMaterial, RecordID(id: materialId))
            #expect(material.status == .failed && material.failureReason == "cancelled")
            try await expectNothingStored(world, materialId)
            #expect(try await world.storeEvents(Store.ingestFailed).filter { $0.materialId == materialId }.map(\.reason) == ["cancelled"])
            try await eventually("progress says failed: cancelled") {
                world.progress(materialId).contains { $0.stage == .failed && $0.message == "cancelled" }
            }
            // Idempotent: the cancelled material as it is.
            let again = try await cancel(world, materialId)
            #expect(again.status == .failed && again.failureReason == "cancelled" && again.updatedAt == material.updatedAt)
        }
    }

    @Test("a cancel handled by another worker reaches the job's worker through ingest.failed: its tool is killed, nothing stored")
    func cancelThroughAnotherWorker() async throws {
        let (tool, pidFile) = try await Self.slowTool()
        defer { for url in [tool, pidFile] { try? FileManager.default.removeItem(at: url) } }
        try await withIngest(testIngestConfiguration { $0.tools.pdftotext = tool.path }, gateway: nil) { world in
            let submitted = try await world.submit(data: try Fixture.data("lecture.pdf"), IngestSubmit(fileName: "lecture.pdf", wait: false))
            let pid = try await Self.runningPID(pidFile, "the tool runs")
            // What the worker that took the ingest.cancel does: fail the material with reason
            // 'cancelled' in the store; this worker hears of it only through the store's event.
            _ = try await world.store(Store.failMaterial, MaterialFail(id: submitted.materialId, reason: "cancelled"))
            try await eventually("the tool is killed", timeout: .seconds(10)) { Hostile.isGone(pid) }
            try await eventually("the job has ended", timeout: .seconds(10)) { world.ingest?.runner.activeCount == 0 }
            let material = try await world.store(Store.getMaterial, RecordID(id: submitted.materialId))
            #expect(material.status == .failed && material.failureReason == "cancelled")
            try await expectNothingStored(world, submitted.materialId)
        }
    }

    @Test("after a cancel and a retry, the first attempt's late event does not stop the retry, nor its late result write into it")
    func lateCancelOfEarlierAttempt() async throws {
        let (tool, pidFile) = try await Self.slowTool()
        defer { for url in [tool, pidFile] { try? FileManager.default.removeItem(at: url) } }
        try await withIngest(testIngestConfiguration { $0.tools.pdftotext = tool.path }, gateway: nil) { world in
            let submitted = try await world.submit(data: try Fixture.data("lecture.pdf"), IngestSubmit(fileName: "lecture.pdf", wait: false))
            try await eventually("the tool runs", timeout: .seconds(20)) { FileManager.default.fileExists(atPath: pidFile.path) }
            let cancelled = try await cancel(world, submitted.materialId)
            try await eventually("the first attempt has ended", timeout: .seconds(10)) { world.ingest?.runner.activeCount == 0 }
            try FileManager.default.removeItem(at: pidFile)
            _ = try await world.client.call(
                Ingest.retry, IngestRetry(materialId: submitted.materialId, wait: false), options: CallOptions(user: "alice"))
            let pid = try await Self.runningPID(pidFile, "the retry's tool runs")
            // The first cancel's event, delivered now (what a slow event path does): the
            // retry's job is newer than that failure and goes on.
            let failed = try #require(try await world.storeEvents(Store.ingestFailed).first { $0.materialId == submitted.materialId })
            #expect(failed.failedAt == cancelled.updatedAt)
            world.ingest?.runner.cancel(materialId: submitted.materialId, failedAt: failed.failedAt)
            try await Task.sleep(for: .milliseconds(500))
            #expect(world.ingest?.runner.activeCount == 1 && !Hostile.isGone(pid))
            #expect(try await world.store(Store.getMaterial, RecordID(id: submitted.materialId)).status == .processing)
            // A result of the first attempt, from a worker that missed the cancel, is refused:
            // the material is processing again, but for the retry.
            let stale = MaterialPut(
                materialId: submitted.materialId, summary: "stale", sourceDocument: SourceDocumentInput(title: "lecture.pdf"),
                chunks: [ChunkInput(ordinal: 0, text: "a stale chunk")], onlyIfProcessing: true,
                attemptStartedAt: submitted.material.processingStartedAt)
            do throws(BusError) {
                _ = try await world.store(Store.putMaterial, stale)
                Issue.record("the first attempt's result was stored into the retry")
            } catch {
                #expect(error.code == .failedPrecondition && error.message.contains("later attempt"), "\(error)")
            }
            #expect(try await world.chunks(submitted.materialId).isEmpty)
            // A cancel of the retry itself still stops it.
            _ = try await cancel(world, submitted.materialId)
            try await eventually("the retry's tool is killed", timeout: .seconds(10)) { Hostile.isGone(pid) }
        }
    }

    @Test("cancelling a queued job (the worker busy with another) stops it before it runs; the running one goes on")
    func cancelQueued() async throws {
        let (tool, pidFile) = try await Self.slowTool()
        defer { for url in [tool, pidFile] { try? FileManager.default.removeItem(at: url) } }
        try await withIngest(testIngestConfiguration {
            $0.tools.pdftotext = tool.path
            $0.concurrency = 1
        }) { world in
            let running = try await world.submit(data: try Fixture.data("lecture.pdf"), IngestSubmit(fileName: "lecture.pdf", wait: false))
            try await eventually("the first job's tool runs", timeout: .seconds(20)) { FileManager.default.fileExists(atPath: pidFile.path) }
            let queued = try await world.submit(
                data: Data("# Queued\n\nThis job waits behind the PDF.\n".utf8), IngestSubmit(fileName: "queued.md", wait: false))
            #expect(queued.material.status == .processing)
            let cancelled = try await cancel(world, queued.materialId)
            #expect(cancelled.status == .failed && cancelled.failureReason == "cancelled")
            try await eventually("the queued job is gone", timeout: .seconds(10)) { world.ingest?.runner.activeCount == 1 }
            try await expectNothingStored(world, queued.materialId)
            #expect(!world.progress(queued.materialId).contains { $0.stage == .extracting })
            #expect(try await world.store(Store.getMaterial, RecordID(id: running.materialId)).status == .processing)
            _ = try await cancel(world, running.materialId)
        }
    }

    @Test("a ready or failed material is FAILED_PRECONDITION naming its state; another user's is NOT_FOUND; no user INVALID_ARGUMENT")
    func cancelFinished() async throws {
        try await withIngest { world in
            let ready = try await world.submit("notes.md")
            #expect(ready.material.status == .ready)
            let readyError = await cancelFailure(world, ready.materialId)
            #expect(readyError?.code == .failedPrecondition && readyError?.message.contains("is ready") == true, "\(String(describing: readyError))")
            let failed = try await world.expectJobFailure(data: try Fixture.data("truncated.pdf"), name: "truncated.pdf", code: .invalidArgument)
            let failedId = try #require(failed.details?["materialId"]?.stringValue)
            let failedError = await cancelFailure(world, failedId)
            #expect(failedError?.code == .failedPrecondition && failedError?.message.contains("is failed") == true, "\(String(describing: failedError))")
            #expect(await cancelFailure(world, ready.materialId, user: "bob")?.code == .notFound)
            #expect(await cancelFailure(world, ready.materialId, user: nil)?.code == .invalidArgument)
            #expect(try await world.store(Store.getMaterial, RecordID(id: ready.materialId)).status == .ready)
            let chunks = try await world.chunks(ready.materialId)
            #expect(!chunks.isEmpty)
        }
    }

    @Test("a job's result that arrives after the cancel is refused by the store (materials.put only while processing)")
    func lateResultRefused() async throws {
        let (tool, pidFile) = try await Self.slowTool()
        defer { for url in [tool, pidFile] { try? FileManager.default.removeItem(at: url) } }
        try await withIngest(testIngestConfiguration { $0.tools.pdftotext = tool.path }, gateway: nil) { world in
            let submitted = try await world.submit(data: try Fixture.data("lecture.pdf"), IngestSubmit(fileName: "lecture.pdf", wait: false))
            _ = try await cancel(world, submitted.materialId)
            // What a worker that missed the cancel would send when its job ends.
            let late = MaterialPut(
                materialId: submitted.materialId, summary: "late", sourceDocument: SourceDocumentInput(title: "lecture.pdf"),
                chunks: [ChunkInput(ordinal: 0, text: "a late chunk")], onlyIfProcessing: true)
            do throws(BusError) {
                _ = try await world.store(Store.putMaterial, late)
                Issue.record("the late result was stored")
            } catch {
                #expect(error.code == .failedPrecondition && error.message.contains("not processing"), "\(error)")
            }
            let material = try await world.store(Store.getMaterial, RecordID(id: submitted.materialId))
            #expect(material.status == .failed && material.failureReason == "cancelled" && material.summary == nil)
            try await expectNothingStored(world, submitted.materialId)
        }
    }
}
