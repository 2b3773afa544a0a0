import Bus
import Contracts
import Foundation
import IngestCore
import ServiceKit
import TestSupport
import Testing
import Wire

/// How jobs run: waiting or not, progress, duplicates, retries, the queue, lost workers.
@Suite("Jobs: waiting, progress, duplicates, retry, lost workers", .serialized)
struct JobTests {
    @Test("the same file twice is one material: the second submit returns the first, marked duplicate")
    func sameFileTwice() async throws {
        try await withIngest { world in
            let first = try await world.submit("notes.md")
            let second = try await world.submit("notes.md", IngestSubmit(fileName: "copy-of-notes.md", title: "Another title"))
            #expect(!first.duplicate)
            #expect(second.duplicate)
            #expect(second.materialId == first.materialId)
            #expect(second.material.title == first.material.title)
            #expect(second.outcome == nil)
            #expect(try await world.materials().count == 1)
            #expect(try await world.storeEvents(Store.materialIngested).count == 1)
            // Another user's copy is their own material.
            let bobs = try await world.submit("notes.md", user: "bob")
            #expect(!bobs.duplicate && bobs.materialId != first.materialId)
        }
    }

    @Test("wait false replies at once with the material processing; progress events follow stage by stage up to ready")
    func noWait() async throws {
        try await withIngest { world in
            let result = try await world.submit("lecture.pdf", IngestSubmit(fileName: "lecture.pdf", wait: false))
            #expect(result.material.status == .processing)
            #expect(result.outcome == nil)
            try await eventually("progress reaches ready", timeout: .seconds(60)) { world.progress(result.materialId).last?.stage == .ready }
            let progress = world.progress(result.materialId)
            #expect(progress.map(\.stage) == [.queued, .extracting, .chunking, .analyzing, .saving, .ready])
            #expect(progress.map(\.percent) == progress.map(\.percent).sorted())
            #expect(progress.last?.percent == 100)
            #expect(progress.allSatisfy { $0.userId == "alice" })
            let material = try await world.waitFor(result.materialId, status: .ready)
            #expect(material.summary != nil)
            #expect(try await world.storeEvents(Store.materialIngested).map(\.material.id) == [result.materialId])
        }
    }

    @Test("wait false on a broken file: progress ends failed with the reason, and the store publishes ingest.failed")
    func noWaitFailure() async throws {
        try await withIngest { world in
            let result = try await world.submit("truncated.pdf", IngestSubmit(fileName: "truncated.pdf", wait: false))
            #expect(result.material.status == .processing)
            let material = try await world.waitFor(result.materialId, status: .failed)
            #expect(material.failureReason?.contains("damaged or truncated") == true)
            try await eventually("progress says failed") { world.progress(result.materialId).last?.stage == .failed }
            #expect(world.progress(result.materialId).last?.message == material.failureReason)
            #expect(try await world.storeEvents(Store.ingestFailed).map(\.reason) == [material.failureReason])
        }
    }

    @Test("ingest.retry re-runs a failed material from its stored original, and it ends ready")
    func retryAfterFailure() async throws {
        try await withIngest(gateway: nil) { world in
            let error = try #require(try await world.submitFailure("notes.md"))
            let materialId = try #require(error.details?["materialId"]?.stringValue)
            try await world.startGateway()
            let retried = try await world.client.call(Ingest.retry, IngestRetry(materialId: materialId), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(retried.materialId == materialId)
            #expect(retried.material.status == .ready)
            #expect(retried.material.failureReason == nil)
            #expect(try await world.chunks(materialId).count == retried.outcome?.chunkCount)
            #expect(try await world.materials().count == 1)
        }
    }

    @Test("ingest.retry of a ready material is FAILED_PRECONDITION, of an unknown one NOT_FOUND, of another user's NOT_FOUND")
    func retryRefusals() async throws {
        try await withIngest { world in
            let ready = try await world.submit("notes.txt")
            func retryError(_ id: String, user: String = "alice") async -> BusError? {
                do {
                    _ = try await world.client.call(Ingest.retry, IngestRetry(materialId: id), options: CallOptions(user: user))
                    return nil
                } catch {
                    return error
                }
            }
            #expect(await retryError(ready.materialId)?.code == .failedPrecondition)
            #expect(await retryError("no-such-material")?.code == .notFound)
            #expect(await retryError(ready.materialId, user: "bob")?.code == .notFound)
        }
    }

    @Test("a full queue refuses submits with RESOURCE_EXHAUSTED before storing anything")
    func fullQueue() async throws {
        try await withWhisper(testIngestConfiguration { $0.concurrency = 1; $0.queueLimit = 0 }) { world, whisper in
            try await whisper.script([.object(["delayMs": .int(4000)])])
            let busy = try await world.submit("speech.wav", IngestSubmit(fileName: "speech.wav", wait: false))
            let error = try #require(try await world.submitFailure("notes.md"))
            #expect(error.code == .resourceExhausted)
            #expect(error.message.contains("retry in a moment"))
            #expect(try await world.materials().map(\.id) == [busy.materialId])
        }
    }

    @Test("the sweep fails a material whose worker was lost (processing too long) with 'worker lost'; retry then succeeds")
    func sweepFailsLostWorkersMaterials() async throws {
        let clock = ManualWallClock(Date())
        try await withIngest(storeClock: clock) { world in
            // A worker uploaded this and died before processing it.
            let upload = try await world.client.call(
                Store.uploadMaterial, MaterialUpload(title: "Orphan", sourceKind: .md, fileName: "notes.md", mimeType: "text/markdown"),
                options: CallOptions(user: "alice", attachment: try Fixture.data("notes.md")))
            #expect(upload.material.status == .processing)
            let sweeper = try #require(world.ingest?.sweeper)
            #expect(await sweeper.sweep() == 0)  // not old enough yet
            clock.advance(by: 121)
            #expect(await sweeper.sweep() == 1)
            let material = try await world.store(Store.getMaterial, RecordID(id: upload.material.id))
            #expect(material.status == .failed)
            #expect(material.failureReason?.hasPrefix("worker lost") == true)
            #expect(try await world.storeEvents(Store.ingestFailed).first?.reason.hasPrefix("worker lost") == true)
            let retried = try await world.client.call(Ingest.retry, IngestRetry(materialId: material.id), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(retried.material.status == .ready)
        }
    }

    @Test("_describe lists ingest's methods and its progress event; ingest.formats lists formats with their limits")
    func describe() async throws {
        try await withIngest { world in
            let description = try await world.client.call(Reserved.describe("ingest"), Empty())
            #expect(Set(description.methods.map(\.name)).isSuperset(of: ["ingest.submit", "ingest.retry", "ingest.formats"]))
            #expect(description.events.map(\.topic) == ["ingest.progress"])
            let formats = try await world.client.call(Ingest.formats, Empty(), options: CallOptions(user: "alice"))
            #expect(Set(formats.formats.map(\.format)) == Set(IngestFormat.allCases))
            #expect(formats.formats.first { $0.format == .png }?.maxBytes == 10 * 1024 * 1024)
            #expect(formats.formats.first { $0.format == .mp3 }?.maxBytes == 50 * 1024 * 1024)
            #expect(formats.formats.first { $0.format == .pdf }?.maxBytes == 50 * 1024 * 1024)
            #expect(formats.chunkTargetCharacters == 1000 && formats.chunkOverlapCharacters == 150)
        }
    }
}
