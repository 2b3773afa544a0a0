import AIGatewayCore
import Bus
import Contracts
import Foundation
import GRDB
@testable import IngestCore
import ServiceKit
import Storage
import StoreCore
import TestSupport
import Testing
import Wire

/// Files ingest refuses before storing anything (INVALID_ARGUMENT), and files that fail while
/// being processed: then the material ends `failed` with a reason, `ingest.failed` is published
/// and nothing else is stored.
@Suite("Failure paths", .serialized)
struct FailureTests {
    @Test("an unknown format is INVALID_ARGUMENT listing the formats, and nothing is stored")
    func unknownFormat() async throws {
        try await withIngest { world in
            let error = try await world.submitFailure("unknown.xyz")
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("the format of 'unknown.xyz' is not supported") == true)
            #expect(error?.message.contains("PDF, DOCX") == true)
            #expect(try await world.materials().isEmpty)
        }
    }

    @Test("an empty or missing file is INVALID_ARGUMENT, and nothing is stored")
    func emptyFile() async throws {
        try await withIngest { world in
            let empty = try await world.submitFailure("notes.md", data: Data())
            #expect(empty?.code == .invalidArgument)
            #expect(empty?.message.contains("attachment frame") == true)
            do {
                _ = try await world.submit(data: nil, IngestSubmit(fileName: "notes.md"))
                Issue.record("a submit without attachment succeeded")
            } catch let error as BusError {
                #expect(error.code == .invalidArgument)
            }
            #expect(try await world.materials().isEmpty)
        }
    }

    @Test("a call without a user is INVALID_ARGUMENT")
    func noUser() async throws {
        try await withIngest { world in
            let error = try await world.submitFailure("notes.md", user: nil)
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("'user'") == true)
        }
    }

    @Test("a blank or too long file name or title and maxFlashcards outside 1...500 are INVALID_ARGUMENT naming the field")
    func badFields() async throws {
        try await withIngest(gateway: nil) { world in
            let data = try Fixture.data("notes.md")
            let cases: [(IngestSubmit, String, String)] = [
                (IngestSubmit(fileName: "   "), "fileName", "must not be empty"),
                (IngestSubmit(fileName: String(repeating: "n", count: 256) + ".md"), "fileName", "must be at most 255 characters"),
                (IngestSubmit(fileName: "notes.md", title: " "), "title", "must not be empty"),
                (IngestSubmit(fileName: "notes.md", options: IngestOptions(maxFlashcards: 501)), "options.maxFlashcards", "must be between 1 and 500, got 501"),
            ]
            for (request, field, requirement) in cases {
                do {
                    _ = try await world.submit(data: data, request)
                    Issue.record("a submit with a bad \(field) succeeded")
                } catch let error as BusError {
                    #expect(error == Field.invalid(field, requirement))
                }
            }
            #expect(try await world.materials().isEmpty)
        }
    }

    @Test("files over their kind's limit are INVALID_ARGUMENT naming it: images 10 MB, anything else (recordings too) 50 MB")
    func sizeLimits() async throws {
        try await withIngest { world in
            let image = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(count: 10 * 1024 * 1024)
            try await world.expectFailure("big.png", data: image, containing: "an image may have at most 10 MB")
            let audio = Data("RIFF\0\0\0\0WAVE".utf8) + Data(count: 50 * 1024 * 1024)
            try await world.expectFailure("big.wav", data: audio, containing: "a recording may have at most 50 MB")
            let pdf = Data("%PDF-1.4\n".utf8) + Data(count: 50 * 1024 * 1024)
            let error = try await world.submitFailure("big.pdf", data: pdf)
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("a material may have at most 50 MB") == true)
            #expect(try await world.materials().isEmpty)
        }
    }

    @Test("a file whose bytes are not its format (a PNG called .pdf, binary called .txt) is INVALID_ARGUMENT")
    func contentMismatch() async throws {
        try await withIngest { world in
            let png = try Fixture.data("scan.png")
            try await world.expectFailure("scan.pdf", data: png, containing: "is not a valid PDF file: it does not start with %PDF-")
            try await world.expectFailure("notes.txt", data: Data([0x41, 0x00, 0x42, 0x01, 0x00, 0x00, 0x07]), containing: "binary data")
            #expect(try await world.materials().isEmpty)
        }
    }

    @Test("a .eml that is no e-mail fails its material saying so")
    func notAnEmail() async throws {
        try await withIngest { world in
            let error = try #require(try await world.submitFailure("plain.eml", data: Data("Just some notes, no headers at all.\n".utf8)))
            #expect(error.code == .invalidArgument)
            #expect(error.message == "'plain.eml' is not an e-mail message: it has no From, Subject or Content-Type header")
            let materialId = try #require(error.details?["materialId"]?.stringValue)
            #expect(try await world.store(Store.getMaterial, RecordID(id: materialId)).status == .failed)
        }
    }

    @Test("when the store refuses materials.put the material ends failed with the store's reason; nothing of the job is stored")
    func storeRefusesPut() async throws {
        try await withIngest { world in
            // Injected fault: the store's database refuses chunks.
            try await world.store.owner.database.pool.write { db in
                try db.execute(sql: "CREATE TEMP TRIGGER refuse_chunks BEFORE INSERT ON chunk BEGIN SELECT RAISE(ABORT, 'disk quota reached'); END")
            }
            let error = try #require(try await world.submitFailure("notes.md"))
            #expect(error.code == .internal)
            #expect(error.message.contains("the store could not materials.put"))
            let materialId = try #require(error.details?["materialId"]?.stringValue)
            let material = try await world.store(Store.getMaterial, RecordID(id: materialId))
            #expect(material.status == .failed && material.failureReason == error.message)
            #expect(try await world.chunks(materialId).isEmpty)
            #expect(try await world.storeEvents(Store.materialIngested).isEmpty)
            #expect(try await world.storeEvents(Store.ingestFailed).map(\.materialId) == [materialId])
            // Once the store takes writes again, ingest.retry makes it ready from the stored original.
            try await world.store.owner.database.pool.write { db in try db.execute(sql: "DROP TRIGGER refuse_chunks") }
            let retried = try await world.client.call(Ingest.retry, IngestRetry(materialId: materialId), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(retried.material.status == .ready && (retried.outcome?.chunkCount ?? 0) > 0)
        }
    }

    @Test("a password-protected PDF fails its material saying to upload a copy without a password; nothing else is stored")
    func passwordProtectedPDF() async throws {
        try await withIngest { world in
            let error = try #require(try await world.submitFailure("locked.pdf"))
            #expect(error.code == .invalidArgument)
            #expect(error.message == "the PDF 'locked.pdf' is password-protected; upload a copy without a password")
            let materialId = try #require(error.details?["materialId"]?.stringValue)
            let material = try await world.store(Store.getMaterial, RecordID(id: materialId))
            #expect(material.status == .failed)
            #expect(material.failureReason == error.message)
            #expect(try await world.chunks(materialId).isEmpty)
            #expect(try await world.storeEvents(Store.ingestFailed).map(\.reason) == [error.message])
        }
    }

    @Test("a truncated PDF fails its material with a reason and ingest.failed; no document, chunk or card is stored")
    func truncatedPDF() async throws {
        try await withIngest { world in
            let error = try #require(try await world.submitFailure("truncated.pdf"))
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("the PDF 'truncated.pdf' is damaged or truncated"))
            let materialId = try #require(error.details?["materialId"]?.stringValue)
            let material = try await world.store(Store.getMaterial, RecordID(id: materialId))
            #expect(material.status == .failed)
            #expect(material.failureReason == error.message)
            #expect(try await world.chunks(materialId).isEmpty)
            #expect(try await world.store(Store.listSourceDocuments, SourceDocumentList(materialId: materialId)).items.isEmpty)
            let failed = try await world.storeEvents(Store.ingestFailed)
            #expect(failed.map(\.materialId) == [materialId])
            #expect(failed.first?.reason == error.message)
            #expect(try await world.storeEvents(Store.materialIngested).isEmpty)
        }
    }

    @Test("damaged Word files, a zip that is no Word file and a truncated image fail with reasons that say so")
    func damagedFiles() async throws {
        try await withIngest { world in
            try await world.expectFailure("damaged.docx", containing: "the Word document 'damaged.docx' cannot be read")
            try await world.expectFailure("notword.docx", containing: "not a Word document (it has no word/document.xml)")
            try await world.expectFailure("truncated.png", containing: "the image 'truncated.png' is damaged or truncated")
            let materials = try await world.materials()
            #expect(materials.count == 3 && materials.allSatisfy { $0.status == .failed })
        }
    }

    @Test("files without content fail: a CSV without cards, subtitles without cues, a calendar without events")
    func noContent() async throws {
        try await withIngest { world in
            try await world.expectFailure("one.csv", data: Data("just one column\nand another\n".utf8), containing: "no flashcards found")
            try await world.expectFailure("empty.srt", data: Data("1\nno timing here\n".utf8), containing: "no subtitle cues")
            try await world.expectFailure("empty.ics", data: Data("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n".utf8), containing: "no events or to-dos")
            try await world.expectFailure("blank.md", data: Data("   \n\n# \n".utf8), containing: "no text found")
        }
    }

    @Test("a document with more text than one bus message carries fails, saying to split it")
    func tooMuchTextForOneMessage() async throws {
        try await withIngest(messageLimit: 1 << 20) { world in
            let text = String(repeating: "A sentence about cells and their energy. ", count: 12_000)  // about 480 KB
            try await world.expectFailure("big.txt", data: Data(text.utf8), containing: "holds too much text for one material")
            _ = try await world.submit(data: Data(text.prefix(100_000).utf8), IngestSubmit(fileName: "fits.txt"))
        }
    }

    @Test("a missing tool is FAILED_PRECONDITION naming the Debian package to install")
    func missingTool() async throws {
        try await withIngest(testIngestConfiguration { $0.tools.pdftotext = "/nonexistent/pdftotext" }) { world in
            let error = try #require(try await world.submitFailure("lecture.pdf"))
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("apt-get install poppler-utils"))
            #expect(error.message.contains("INGEST_PDFTOTEXT"))
            #expect(try await world.materials().first?.status == .failed)
        }
    }

    @Test("a tool that runs over its time limit is killed, and the material fails saying so")
    func toolTimeout() async throws {
        // A stand-in for a tool that hangs: it ignores its input and sleeps.
        let script = FileManager.default.temporaryDirectory.appending(path: "hanging-tool-\(UUID().uuidString).sh")
        try "#!/bin/sh\nexec sleep 30\n".write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        defer { try? FileManager.default.removeItem(at: script) }
        try await withIngest(testIngestConfiguration {
            $0.tools.tesseract = script.path
            $0.tools.timeout = .milliseconds(300)
        }) { world in
            let started = ContinuousClock.now
            let error = try #require(try await world.submitFailure("scan.png"))
            #expect(error.code == .deadlineExceeded)
            #expect(error.message.contains("took longer than") && error.message.contains("INGEST_TOOL_TIMEOUT_SECONDS"))
            #expect(ContinuousClock.now - started < .seconds(20))  // not the tool's 30 s
        }
    }

    @Test("audio without a transcription provider (AI_ROUTE_TRANSCRIBE=) fails FAILED_PRECONDITION saying how to configure one")
    func noTranscriptionProvider() async throws {
        try await withIngest(gateway: { AIGatewayConfiguration(databaseURL: $0, routes: [.transcribe: []]) }) { world in
            let error = try #require(try await world.submitFailure("speech.wav"))
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("ai-gateway could not transcribe 'speech.wav'"))
            #expect(error.message.contains("AI_OPENAI_BASE_URL"))
        }
    }

    @Test("without ai-gateway the material fails UNAVAILABLE, saying to retry later")
    func aiGatewayDown() async throws {
        try await withIngest(gateway: nil) { world in
            let error = try #require(try await world.submitFailure("notes.md"))
            #expect(error.code == .unavailable)
            #expect(error.message.contains("retry later with ingest.retry"))
            #expect(try await world.materials().first?.status == .failed)
        }
    }

    @Test("a job over its hard time limit is stopped and its material fails saying so")
    func jobTimeout() async throws {
        try await withWhisper(testIngestConfiguration { $0.jobTimeout = .seconds(1) }) { world, whisper in
            try await whisper.script([.object(["delayMs": .int(8000)])])
            let error = try #require(try await world.submitFailure("speech.wav"))
            #expect(error.code == .deadlineExceeded)
            #expect(error.message.contains("processing took longer than the limit"))
            #expect(try await world.materials().first?.status == .failed)
        }
    }
}
