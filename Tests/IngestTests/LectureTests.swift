import Bus
import Contracts
import Foundation
@testable import IngestCore
import TestSupport
import Testing
import Wire

/// A recorded lecture made for a test: sentences spoken by espeak-ng with 1.5 s of silence
/// between them, encoded by ffmpeg as AAC in M4A (what a phone records).
struct Lecture {
    static let pause = 1.5
    let data: Data
    /// Where each silence between sentences is, in seconds, from the sentences' own lengths.
    let silences: [ClosedRange<Double>]
    let duration: Double

    static func make(_ sentences: [String]) throws -> Lecture {
        let folder = FileManager.default.temporaryDirectory.appending(path: "studybus-lecture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var inputs: [String] = [], silences: [ClosedRange<Double>] = [], time = 0.0
        for (index, sentence) in sentences.enumerated() {
            let wav = folder.appending(path: "\(index).wav").path
            try run("/usr/bin/espeak-ng", ["-w", wav, sentence])
            // espeak-ng writes 22,050 Hz 16-bit mono with a 44-byte header.
            let bytes = try FileManager.default.attributesOfItem(atPath: wav)[.size] as! Int
            time += Double(bytes - 44) / (22_050 * 2)
            inputs += ["-i", wav]
            if index < sentences.count - 1 {
                inputs += ["-f", "lavfi", "-t", String(pause), "-i", "anullsrc=r=22050:cl=mono"]
                silences.append(time...(time + pause))
                time += pause
            }
        }
        let streams = inputs.filter { $0 == "-i" }.count
        let output = folder.appending(path: "lecture.m4a").path
        try run("/usr/bin/ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error"] + inputs + [
            "-filter_complex", (0..<streams).map { "[\($0):a]" }.joined() + "concat=n=\(streams):v=0:a=1", "-c:a", "aac", "-b:a", "32k", output,
        ])
        return Lecture(data: try Data(contentsOf: URL(filePath: output)), silences: silences, duration: time)
    }

    /// Just under three hours at 32 kbps AAC (32 MB): 5 s of a tone and 2 s of silence, repeated.
    static func threeHours() throws -> Data {
        let folder = FileManager.default.temporaryDirectory.appending(path: "studybus-lecture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let quiet = ["-nostdin", "-hide_banner", "-loglevel", "error"]
        try run("/usr/bin/ffmpeg", quiet + [
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=5", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono:d=2",
            "-filter_complex", "[0:a]volume=0.3[tone];[tone][1:a]concat=n=2:v=0:a=1", "-c:a", "aac", "-b:a", "32k", folder.appending(path: "seven.m4a").path,
        ])
        // AAC's frames make each repetition 7.04 s: 1,533 of them are 10,792 s.
        try run("/usr/bin/ffmpeg", quiet + ["-stream_loop", "1532", "-i", folder.appending(path: "seven.m4a").path, "-c", "copy", folder.appending(path: "long.m4a").path])
        return try Data(contentsOf: folder.appending(path: "long.m4a"))
    }

    /// Whether `seconds` is in one of the silences (give or take an MP3 frame and AAC's priming).
    func isInSilence(_ seconds: Double) -> Bool {
        silences.contains { seconds >= $0.lowerBound - 0.1 && seconds <= $0.upperBound + 0.1 }
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(filePath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BusError.internal("\(executable) \(arguments.joined(separator: " ")) failed") }
    }
}

/// Long recordings: split at silences, the pieces transcribed concurrently through ai-gateway
/// (the Whisper mock), chunks timed within the whole recording, progress while it runs, a lease
/// that keeps a long job from being taken for lost, and cancel.
@Suite("Recordings and lectures")
struct LectureTests {
    static let sentences = [
        "Part one. Today we study the cell and its membrane.", "The membrane lets water and small molecules pass.",
        "Part two. Mitochondria turn glucose into energy.", "This process is called cellular respiration.",
        "Part three. The nucleus holds the genetic code.", "Genes are read to make the proteins of the cell.",
    ]

    /// Pieces of at most 10 s — the 26 s lecture of ``sentences`` makes three — and small chunks
    /// (so that each piece's text has chunks of its own).
    static func configuration(_ change: (inout IngestConfiguration) -> Void = { _ in }) -> IngestConfiguration {
        testIngestConfiguration { configuration in
            configuration.recordings.pieceSeconds = 10
            configuration.chunking = ChunkingSettings(targetCharacters: 100, overlapCharacters: 0)
            change(&configuration)
        }
    }

    /// What the mock answers for piece `number` (1-based) of `lecture.m4a`: two segments of 60
    /// to 70 characters, so that each is a chunk of its own (a chunk of 100 ends at the strongest
    /// break in its second half).
    static func step(_ number: Int, delayMs: Int = 0) -> JSONValue {
        .object([
            "file": .string("lecture-part\(number).mp3"), "delayMs": .int(Int64(delayMs)),
            "transcript": WhisperMock.transcript([
                (0.5, 4, "Piece \(number) begins with this sentence about the cell and its parts."),
                (4, 6.5, "Piece \(number) goes on with more about how the parts of the cell work."),
            ]),
        ])
    }

    @Test("the cuts fall in the latest silence of each window, or at the piece's length where none is; silences are read as ffmpeg prints them")
    func cutsAndSilences() {
        let analysis = RecordingAnalysis(duration: 100, silences: [8...9, 14...16, 19...19.5, 33...34, 80...81])
        // Window (10, 20]: the silences at 15 and 19.25, the later wins. (29.25, 39.25]: 33.5.
        // (43.5, 53.5]: none, cut at 53.5. (63.5, 73.5]: none. Then 73.5 + 20 < 100: (83.5, 93.5]: none.
        #expect(RecordingSplitter.cuts(analysis, pieceSeconds: 20) == [19.25, 33.5, 53.5, 73.5, 93.5])
        #expect(RecordingSplitter.cuts(RecordingAnalysis(duration: 20, silences: []), pieceSeconds: 20).isEmpty)

        let metadata = """
            frame:148  pts:151552  pts_time:6.87
            lavfi.silence_start=6.4
            lavfi.silence_end=8.2
            lavfi.silence_duration=1.8
            lavfi.silence_start=7.0
            lavfi.silence_end=nan
            lavfi.silence_start=-3
            lavfi.silence_end=1e400
            lavfi.silence_start=95
            """
        // Overlapping the one before, not a number or infinite: left out; negative: from 0; open at the end: to the end.
        #expect(RecordingSplitter.silences(in: metadata, duration: 100) == [6.4...8.2, 95...100])
        #expect(RecordingSplitter.silences(in: "lavfi.silence_start=-3\nlavfi.silence_end=2\n", duration: 100) == [0...2])
        #expect(RecordingSplitter.decodedSeconds("out_time_us=45438\nprogress=continue\nout_time_us=49319188\nprogress=end\n") == 49.319188)
        #expect(RecordingSplitter.decodedSeconds("out_time_us=N/A\n") == nil)
    }

    @Test("a lecture is cut in its silences, the pieces transcribed at once, and its chunks timed in the whole recording")
    func lecture() async throws {
        let lecture = try Lecture.make(Self.sentences)
        try await withWhisper(Self.configuration { $0.recordings.concurrency = 3 }) { world, whisper in
            // Piece 1 answers last: the other pieces are asked for while it is still being transcribed.
            try await whisper.script([Self.step(1, delayMs: 3000), Self.step(2), Self.step(3)])
            let submitted = try await world.submit(data: lecture.data, IngestSubmit(fileName: "lecture.m4a", wait: false))
            try await eventually("three pieces asked for at once", timeout: .seconds(10)) { try await whisper.transcriptions().count == 3 }
            #expect(try await world.store(Store.getMaterial, RecordID(id: submitted.materialId)).status == .processing)
            let material = try await world.waitFor(submitted.materialId, status: .ready)
            #expect(material.sourceKind == .audio)

            let uploads = try await whisper.transcriptions()
            #expect(Set(uploads.map(\.fileName)) == ["lecture-part1.mp3", "lecture-part2.mp3", "lecture-part3.mp3"])
            #expect(uploads.allSatisfy { $0.bytes > 10_000 && $0.bytes <= AIGatewayLimits.audioBytes })

            let chunks = try await world.chunks(submitted.materialId)
            let text = chunks.map(\.text).joined(separator: " ")
            let order = (1...3).map { text.range(of: "Piece \($0) begins")?.lowerBound }
            #expect(order.allSatisfy { $0 != nil } && order == order.sorted { $0! < $1! })
            // Each piece's first segment starts 0.5 s into the piece; the pieces after the first begin in a silence.
            let starts = try (1...3).map { number in
                try #require(chunks.first { $0.text.hasPrefix("Piece \(number) begins") }?.startSeconds)
            }
            #expect(abs(starts[0] - 0.5) < 0.01)
            for start in starts.dropFirst() { #expect(lecture.isInSilence(start - 0.5), "piece starts at \(start - 0.5) s; silences \(lecture.silences)") }
            #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 <= 10 + 0.01 })
            #expect(chunks.allSatisfy { ($0.endSeconds ?? 0) <= lecture.duration + 0.5 })

            let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(chunks.first?.sourceDocumentId)))
            #expect(abs((document.durationSeconds ?? 0) - lecture.duration) < 0.5)
            let progress = world.progress(submitted.materialId).filter { $0.message?.hasPrefix("transcribed") == true }
            #expect(progress.map(\.message) == (1...3).map { "transcribed \($0) of 3 pieces of the recording" })
            #expect(progress.map(\.percent) == [20, 30, 40])
        }
    }

    @Test("a job longer than the sweep's age renews its material, so no worker takes it for lost; it and its calls get time for its length")
    func longJobIsRenewed() async throws {
        let lecture = try Lecture.make(Self.sentences)
        // Three pieces one after another, 2.5 s each: longer than the job's timeout, the sweep's
        // age and the worker's default call timeout (as the offline recognizer's pieces take
        // longer than the bus's default 30 s).
        let configuration = Self.configuration { $0.jobTimeout = .seconds(3); $0.stuckAfter = .seconds(4); $0.recordings.concurrency = 1 }
        try await withWhisper(configuration, callTimeout: .seconds(2)) { world, whisper in
            try await whisper.script((1...3).map { Self.step($0, delayMs: 2500) })
            let submitted = try await world.submit(data: lecture.data, IngestSubmit(fileName: "lecture.m4a", wait: false))
            try await eventually("the third piece asked for", timeout: Wait.work) { try await whisper.transcriptions().count == 3 }
            // More than 4 s since the job started: every worker's sweep asks this, and finds nothing.
            let stuck = try await world.client.call(Store.stuckMaterials, StuckMaterialsRequest(olderThanSeconds: 4))
            #expect(!stuck.materials.contains { $0.id == submitted.materialId })
            #expect(try await world.waitFor(submitted.materialId, status: .ready).failureReason == nil)
        }
    }

    @Test("ingest.cancel stops a lecture between its pieces: the rest are never sent, the material fails 'cancelled'")
    func cancelStopsThePieces() async throws {
        let lecture = try Lecture.make(Self.sentences)
        try await withWhisper(Self.configuration { $0.recordings.concurrency = 1 }) { world, whisper in
            try await whisper.script((1...3).map { Self.step($0, delayMs: 1500) })
            let submitted = try await world.submit(data: lecture.data, IngestSubmit(fileName: "lecture.m4a", wait: false))
            try await eventually("the first piece transcribed", timeout: Wait.work) {
                world.progress(submitted.materialId).contains { $0.message == "transcribed 1 of 3 pieces of the recording" }
            }
            _ = try await world.client.call(Ingest.cancel, IngestCancel(materialId: submitted.materialId), options: CallOptions(user: "alice"))
            let material = try await world.waitFor(submitted.materialId, status: .failed)
            #expect(material.failureReason == IngestFailed.cancelledReason)
            try await Task.sleep(for: .seconds(3))  // the rest of the pieces' time
            #expect(try await whisper.transcriptions().count == 2)
            #expect(try await world.chunks(submitted.materialId).isEmpty)
        }
    }

    @Test("a three-hour recording: 46 pieces of at most 240 s, each within transcribe's 5 MiB, chunks timed to its end")
    func threeHours() async throws {
        let recording = try Lecture.threeHours()
        try await withWhisper { world, whisper in  // the mock answers every piece "show math materials"
            let submitted = try await world.submit(data: recording, IngestSubmit(fileName: "three-hours.m4a", wait: false))
            let material = try await world.waitFor(submitted.materialId, status: .ready, timeout: .seconds(600))
            let uploads = try await whisper.transcriptions()
            // 10,792 s in pieces of at most 240 s, cut in the 2 s silences: 46 of up to 239.5 s.
            #expect(uploads.count == 46)
            #expect(uploads.allSatisfy { $0.bytes > 0 && $0.bytes <= 240 * 4200 })
            let progress = world.progress(material.id).compactMap(\.message).filter { $0.hasPrefix("transcribed") }
            #expect(progress.last == "transcribed 46 of 46 pieces of the recording")
            let chunks = try await world.chunks(material.id)
            let ends = chunks.compactMap(\.endSeconds)
            #expect(ends.max().map { $0 > 10_792 - 240 && $0 <= 10_793 } == true)
            let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(chunks.first?.sourceDocumentId)))
            #expect(abs((document.durationSeconds ?? 0) - 10_792.5) < 2)
        }
    }

    @Test("a recording longer than INGEST_AUDIO_MAX_MINUTES, or one ffmpeg cannot decode, fails with the reason")
    func tooLongOrUndecodable() async throws {
        let lecture = try Lecture.make(Array(Self.sentences.prefix(2)))
        try await withWhisper(Self.configuration { $0.recordings.maximumSeconds = 5 }) { world, _ in
            let long = try #require(try await world.submitFailure("lecture.m4a", data: lecture.data))
            #expect(long.code == .invalidArgument && long.message.contains("longer than 5 seconds") && long.message.contains("INGEST_AUDIO_MAX_MINUTES"))
            let garbage = Data("RIFF\0\0\0\0WAVEfmt ".utf8) + Data(repeating: 7, count: 4096)
            let broken = try #require(try await world.submitFailure("broken.wav", data: garbage))
            #expect(broken.code == .invalidArgument && broken.message.contains("ffmpeg"), "\(broken.message)")
        }
    }
}
