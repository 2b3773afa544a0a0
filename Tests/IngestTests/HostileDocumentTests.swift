import Bus
import Contracts
import Foundation
import Glibc
@testable import IngestCore
import TestSupport
import ToolProcess
import Testing
import Wire

/// Hostile documents sent through the real ingest worker (real broker, store and ai-gateway): a
/// zip bomb, MIME nested without end, numbers no calendar or recording has, inputs that made
/// parsers quadratic, tools that try to take the machine. Each shows that the worker stays up,
/// the job fails with a reason that says what is wrong (or the document is read within bounds),
/// nothing of a failed job is stored, and the next job still works.
@Suite("Hostile documents", .serialized)
struct HostileDocumentTests {
    // MARK: Zip bombs

    @Test("a 64 KiB .docx inflating 1000:1 fails INVALID_ARGUMENT as a zip bomb before 6.4 MB are unpacked; the worker goes on")
    func zipBomb() async throws {
        let bomb = try Hostile.docx(.run(bytes: 64 * 1024 * 1024))
        #expect(bomb.count < 70 * 1024)
        // The same, its headers saying the part has 1,000 bytes: stopped while it inflates.
        let liar = try Hostile.docx(.lyingRun(bytes: 64 * 1024 * 1024))
        try await withIngest { world in
            for (data, name) in [(bomb, "bomb.docx"), (liar, "liar.docx")] {
                let error = try await world.expectJobFailure(data: data, name: name, code: .invalidArgument)
                #expect(error.message == "'\(name)' is refused: its part word/document.xml inflates to more than 100 times its compressed size, as zip bombs do (INGEST_MAX_COMPRESSION_RATIO)")
            }
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("ODT, EPUB and PPTX zip bombs and packages missing their parts fail INVALID_ARGUMENT saying which part; the worker goes on")
    func packageBombsAndMissingParts() async throws {
        // 64 MiB of one letter deflates about 1000:1, in the part each format reads first.
        let run = "b'<text:p>' + b'a' * (64 * 1024 * 1024) + b'</text:p>'"
        let odtBomb = try Hostile.zip([("mimetype", "b'application/vnd.oasis.opendocument.text'"), ("content.xml", run)])
        let epubContainer = #"b'<?xml version="1.0"?><container><rootfiles><rootfile full-path="OEBPS/content.opf"/></rootfiles></container>'"#
        let epubOPF = #"b'<?xml version="1.0"?><package><manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c1"/></spine></package>'"#
        let epubBomb = try Hostile.zip([
            ("mimetype", "b'application/epub+zip'"), ("META-INF/container.xml", epubContainer), ("OEBPS/content.opf", epubOPF), ("OEBPS/c1.xhtml", run),
        ])
        let pptxBomb = try Hostile.zip([("ppt/presentation.xml", "b'<p:presentation/>'"), ("ppt/slides/slide1.xml", run)])
        #expect(odtBomb.count < 70 * 1024 && epubBomb.count < 70 * 1024 && pptxBomb.count < 70 * 1024)
        let noContent = try Hostile.zip([("mimetype", "b'application/vnd.oasis.opendocument.text'"), ("meta.xml", "b'<x/>'")])
        let noOPF = try Hostile.zip([("mimetype", "b'application/epub+zip'"), ("META-INF/container.xml", epubContainer)])
        let noContainer = try Hostile.zip([("mimetype", "b'application/epub+zip'"), ("OEBPS/content.opf", epubOPF)])
        let noSlides = try Hostile.zip([("ppt/presentation.xml", "b'<p:presentation/>'")])
        let cases: [(Data, String, String)] = [
            (odtBomb, "bomb.odt", "'bomb.odt' is refused: its part content.xml inflates to more than 100 times its compressed size, as zip bombs do"),
            (epubBomb, "bomb.epub", "'bomb.epub' is refused: its part OEBPS/c1.xhtml inflates to more than 100 times its compressed size, as zip bombs do"),
            (pptxBomb, "bomb.pptx", "'bomb.pptx' is refused: its part ppt/slides/slide1.xml inflates to more than 100 times its compressed size, as zip bombs do"),
            (noContent, "empty.odt", "'empty.odt' is a zip archive but not an OpenDocument text (it has no content.xml)"),
            (noOPF, "noopf.epub", "the EPUB e-book 'noopf.epub' cannot be read: its package document OEBPS/content.opf, named in META-INF/container.xml, is missing"),
            (noContainer, "nocontainer.epub", "'nocontainer.epub' is a zip archive but not an EPUB e-book (it has no META-INF/container.xml)"),
            (noSlides, "noslides.pptx", "'noslides.pptx' is a zip archive but not a PowerPoint presentation (it has no slides, ppt/slides/slideN.xml)"),
            (Data(try Fixture.data("slides.pptx").prefix(20_000)), "truncated.pptx", "the PowerPoint presentation 'truncated.pptx' cannot be read"),
        ]
        try await withIngest { world in
            for (data, name, message) in cases {
                let error = try await world.expectJobFailure(data: data, name: name, code: .invalidArgument)
                #expect(error.message.contains(message), "\(error.message)")
            }
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("a DOC cut after its OLE2 header, an RTF of only its opening and a cut HEIC fail INVALID_ARGUMENT naming the file; the worker goes on")
    func legacyAndPhotoDamage() async throws {
        let doc = try Fixture.data("legacy.doc"), heic = try Fixture.data("scan.heic")
        // An OLE2 header whose directory is gone; a HEIC cut after its header boxes; an RTF of one brace.
        let cases: [(Data, String)] = [
            (Data(doc.prefix(600)), "cut.doc"), (Data(heic.prefix(400)), "cut.heic"), (Data("{\\rtf1".utf8), "brace.rtf"),
        ]
        try await withIngest { world in
            for (data, name) in cases {
                let error = try await world.expectJobFailure(data: data, name: name, code: .invalidArgument)
                #expect(error.message.contains("'\(name)'"), "\(error.message)")
            }
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("with the ratio allowed, the bytes a .docx unpacks stop at its allowance (INGEST_MAX_INFLATED_MB) within the memory budget")
    func inflatedTotal() async throws {
        let bomb = try Hostile.docx(.run(bytes: 64 * 1024 * 1024))
        let configuration = testIngestConfiguration {
            $0.maxCompressionRatio = 100_000
            $0.maxExpansionBytes = 8 * 1024 * 1024
        }
        // What the job reserves of the worker's memory with its file: the allowance, not 64 MiB.
        #expect(configuration.expansionAllowance(.docx, fileBytes: bomb.count) == 8 * 1024 * 1024)
        try await withIngest(configuration) { world in
            let error = try await world.expectJobFailure(data: bomb, name: "bomb.docx", code: .invalidArgument)
            #expect(error.message.contains("unpacks to more XML than a Word document of its size may (8192 KiB"))
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("Word XML with a DTD (billion laughs) is refused unparsed, XML beyond what the parser reads refused unpacked, XML nested 100,000 deep read")
    func hostileXML() async throws {
        let laughs = try Hostile.docx(.billionLaughs)
        let large = try Hostile.docx(.paragraphs(300_000))
        let deep = try Hostile.docx(.deep(levels: 100_000))
        // Markup compresses beyond the ratio: allowed here, so that the parser's limits are what is tried.
        try await withIngest(testIngestConfiguration { $0.maxCompressionRatio = 100_000 }) { world in
            let dtd = try await world.expectJobFailure(data: laughs, name: "laughs.docx", code: .invalidArgument)
            #expect(dtd.message.contains("its part word/document.xml declares a DTD, which Word documents never do"))
            let tooLarge = try await world.expectJobFailure(data: large, name: "large.docx", code: .invalidArgument)
            #expect(tooLarge.message.contains("its part word/document.xml has more than 10000000 bytes of XML, the most the XML parser reads"))
            let nested = try await world.submit(data: deep, IngestSubmit(fileName: "deep.docx", options: IngestOptions(generateFlashcards: false)))
            #expect(try await world.chunks(nested.materialId).map(\.text) == ["Deep words."])
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("damaged .docx files IngestFuzz found — a directory pointing past the end, a deflate stream that never ends — fail INVALID_ARGUMENT at once; the worker goes on")
    func zipsFoundByTheFuzzer() async throws {
        try await withIngest { world in
            for name in ["fuzz-seek-past-end.docx", "fuzz-deflate-never-ends.docx"] {
                let started = ContinuousClock.now
                _ = try await world.expectJobFailure(data: try Fixture.data(name), name: name, code: .invalidArgument)
                // The second looped forever inside ZIPFoundation, past the job's time limit.
                #expect(ContinuousClock.now - started < .seconds(30))
            }
            try await world.expectWorkerStillWorks()
        }
    }

    // MARK: Nesting

    @Test("MIME multiparts nested 16 deep are read; 17 deep, or more than 10,000 parts, fail INVALID_ARGUMENT saying so")
    func nestedMIME() async throws {
        try await withIngest { world in
            let readable = try await world.submit(
                data: Data(Hostile.nestedMessage(depth: MIMEParser.maximumDepth, body: "The innermost words.").utf8),
                IngestSubmit(fileName: "nested.eml", options: IngestOptions(generateFlashcards: false)))
            #expect(readable.material.status == .ready)
            #expect(try await world.chunks(readable.materialId).contains { $0.text.contains("The innermost words.") })

            let tooDeep = Data(Hostile.nestedMessage(depth: MIMEParser.maximumDepth + 1, body: "Too deep.").utf8)
            let deep = try await world.expectJobFailure(data: tooDeep, name: "deep.eml", code: .invalidArgument)
            #expect(deep.message == "the e-mail 'deep.eml' cannot be read: the message's MIME parts are nested more than 16 levels deep")

            let parts = (0...MIMEParser.maximumParts).map { _ in "--w\r\n\r\nx\r\n" }.joined()
            let wide = Data(("From: a@example.org\r\nContent-Type: multipart/mixed; boundary=w\r\n\r\n" + parts + "--w--\r\n").utf8)
            let many = try await world.expectJobFailure(data: wide, name: "wide.eml", code: .invalidArgument)
            #expect(many.message.contains("the message has more than 10000 MIME parts"))
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("the MIME parser is one pass: 16 levels of nesting around 1 MB examine under twice its bytes (rescanning examined 16 times)")
    func mimeWork() throws {
        let body = String(repeating: "A line of the message's text, not a delimiter.\r\n", count: 20_000)
        let message = Array(Hostile.nestedMessage(depth: MIMEParser.maximumDepth, body: body).utf8)
        var parser = MIMEParser(message[...], budget: .unlimited)
        var part = try parser.parse()
        for _ in 1..<MIMEParser.maximumDepth {
            #expect(part.parts.count == 1)
            part = try #require(part.parts.first)
        }
        #expect(part.parts.first?.contentType.type == "text/plain")
        #expect(part.parts.first?.body.count == body.utf8.count)
        #expect(parser.bytesExamined < 2 * message.count, "\(parser.bytesExamined) bytes examined for \(message.count)")
    }

    // MARK: Numbers in documents

    @Test("calendar numbers no calendar has — a DURATION of 10^20 weeks, year 99999, superscript digits, a zone past year 9999 — are clamped or left out; the calendar is stored")
    func calendarNumbers() async throws {
        let calendar = """
            BEGIN:VCALENDAR\r
            BEGIN:VEVENT\r
            UID:absurd-duration\r
            SUMMARY:Study marathon\r
            DTSTART:20261120T160000Z\r
            DURATION:P99999999999999999999W\r
            CATEGORIES:Study\r
            END:VEVENT\r
            BEGIN:VEVENT\r
            UID:last-hour\r
            SUMMARY:Study at the end of time\r
            DTSTART:99991231T230000Z\r
            DURATION:PT2H\r
            CATEGORIES:Study\r
            END:VEVENT\r
            BEGIN:VEVENT\r
            UID:bad-date\r
            SUMMARY:Exam with a broken date\r
            DTSTART:99999999T999999Z\r
            END:VEVENT\r
            BEGIN:VTODO\r
            UID:superscript\r
            SUMMARY:To-do due in superscript digits\r
            DUE:²⁰²⁶¹¹²⁰\r
            END:VTODO\r
            BEGIN:VEVENT\r
            UID:zone\r
            SUMMARY:Exam twelve hours behind\r
            DTSTART;TZID=Etc/GMT+12:99991231T235959\r
            END:VEVENT\r
            END:VCALENDAR\r

            """
        let last = try #require(ISO8601.parse("9999-12-31T23:59:59.999Z"))
        try await withIngest { world in
            let result = try await world.submit(data: Data(calendar.utf8), IngestSubmit(fileName: "absurd.ics", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.status == .ready)
            #expect(result.outcome?.sessionIds.count == 2)
            #expect(result.outcome?.taskIds.count == 3)
            var sessions: [StudySession] = []
            for id in result.outcome?.sessionIds ?? [] { sessions.append(try await world.store(Store.getSession, RecordID(id: id))) }
            #expect(Set(sessions.map(\.startedAt)) == [ISO8601.parse("2026-11-20T16:00:00Z")!, ISO8601.parse("9999-12-31T23:00:00Z")!])
            #expect(sessions.allSatisfy { $0.endedAt == last })
            let tasks = try await world.store(Store.listTasks, StudyTaskList()).items
            #expect(tasks.first { $0.title == "Exam with a broken date" }?.dueAt == nil)
            #expect(tasks.first { $0.title == "To-do due in superscript digits" }?.dueAt == nil)
            #expect(tasks.first { $0.title == "Exam twelve hours behind" }?.dueAt == last)
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("subtitle times of 10^11 hours, 1e308, inf or minute 99 make no cue; times stay within 1,000 hours")
    func subtitleNumbers() async throws {
        let srt = """
            1
            00:00:01,000 --> 00:00:04,000
            Welcome to the lecture.

            2
            99999999999:00:00,000 --> 99999999999:00:01,000
            Absurd hours.

            3
            1e308:00,000 --> inf:00,000
            Not numbers.

            4
            00:00:06,000 --> 00:99:00,000
            Minute ninety-nine.

            5
            00:00:05,000 --> 999:59:59,999
            A long last cue.

            """
        try await withIngest { world in
            let result = try await world.submit(data: Data(srt.utf8), IngestSubmit(fileName: "absurd.srt", options: IngestOptions(generateFlashcards: false)))
            let chunks = try await world.chunks(result.materialId)
            let text = chunks.map(\.text).joined(separator: "\n")
            #expect(text.contains("Welcome to the lecture.") && text.contains("A long last cue."))
            #expect(!text.contains("Absurd hours") && !text.contains("Not numbers") && !text.contains("ninety-nine"))
            #expect(chunks.allSatisfy { ($0.endSeconds ?? 0) <= DocumentValues.maximumMediaSeconds })
            let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(result.outcome?.sourceDocumentId)))
            #expect(document.durationSeconds == 3_599_999.999)

            let onlyAbsurd = Data("1\n1e308:00,000 --> 1e309:00,000\nNothing.\n".utf8)
            let error = try await world.expectJobFailure(data: onlyAbsurd, name: "absurd-only.vtt", code: .invalidArgument)
            #expect(error.message.contains("no subtitle cues found"))
            try await world.expectWorkerStillWorks()
        }
    }

    @Test("Anki header column numbers of Int.min are ignored, a header that reserves every column fails saying so, a row of 100,000 tags keeps 20")
    func tableNumbers() async throws {
        let tags = (1...100_000).map { "tag\($0)" }.joined(separator: " ")
        let deck = "#separator:tab\n#guid column:-9223372036854775808\n#tags column:-9223372036854775808\nCapital of Italy?\tRome\t\(tags)\n"
        let everyColumn = (1...64).map { "#deck column:\($0)\n" }.joined() + "a\tb\n"
        try await withIngest { world in
            let result = try await world.submit(data: Data(deck.utf8), IngestSubmit(fileName: "deck.txt"))
            let cards = try await world.flashcards(result.materialId)
            #expect(cards.map(\.front) == ["Capital of Italy?"])
            #expect(cards.first?.tags == (1...20).map { "tag\($0)" })
            let error = try await world.expectJobFailure(data: Data(everyColumn.utf8), name: "columns.txt", code: .invalidArgument)
            #expect(error.message == "the Anki header of 'columns.txt' leaves no columns for the front and back of the cards")
            try await world.expectWorkerStillWorks()
        }
    }

    // MARK: Inputs that made parsers super-linear

    @Test("inputs that made parsers quadratic (repeated CATEGORIES, a row of tags, '{' in a cue) or search far ('[' in Markdown, '=?' in a subject) are read in linear time")
    func linearParsers() async throws {
        let categories = (1...100_000).map { "CATEGORIES:Category \($0)\r\n" }.joined()
        let documents: [(String, String, String)] = [
            ("categories.ics", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nSUMMARY:Exam\r\nDTSTART:20261120T090000Z\r\n\(categories)END:VEVENT\r\nEND:VCALENDAR\r\n", "Exam"),
            ("tags.csv", "front,back,tags\nQuestion,Answer,\((1...150_000).map { "t\($0)" }.joined(separator: " "))\n", "Question"),
            ("braces.vtt", "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nSpoken \(String(repeating: "{", count: 1_000_000))\n", "Spoken"),
            ("brackets.md", "# Notes\n\nText " + String(repeating: "[", count: 2_000_000) + "\n", "Notes"),
            ("words.eml", "From: a@example.org\r\nSubject: Hello \(String(repeating: "=?", count: 500_000))\r\n\r\nThe body.\r\n", "The body."),
        ]
        try await withIngest { world in
            for (name, text, expected) in documents {
                let started = ContinuousClock.now
                let result = try await world.submit(
                    data: Data(text.utf8), IngestSubmit(fileName: name, options: IngestOptions(generateFlashcards: false)), timeout: .seconds(90))
                #expect(result.material.status == .ready, "\(name)")
                #expect(try await world.chunks(result.materialId).contains { $0.text.contains(expected) }, "\(name)")
                // Generous: a few seconds each here, with ai-gateway; quadratically, minutes to hours.
                #expect(ContinuousClock.now - started < .seconds(60), "\(name)")
            }
            try await world.expectWorkerStillWorks()
        }
    }

    // MARK: Cancellation

    @Test("the job's time limit stops a long parse: a 47 MB calendar fails DEADLINE_EXCEEDED long before it could be read")
    func parseCancelled() async throws {
        let attendees = String(repeating: "ATTENDEE;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;CN=\"Rossi, Anna\":mailto:anna@example.org\r\n", count: 500_000)
        let calendar = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nSUMMARY:Exam\r\nDTSTART:20261120T090000Z\r\n\(attendees)END:VEVENT\r\nEND:VCALENDAR\r\n"
        try await withIngest(testIngestConfiguration { $0.jobTimeout = .seconds(1) }) { world in
            let started = ContinuousClock.now
            let error = try await world.expectJobFailure(data: Data(calendar.utf8), name: "long.ics", code: .deadlineExceeded)
            #expect(error.message.contains("processing took longer than the limit"))
            // Without the time limit the job takes 19 s here; stopped at the parser's next line after 1 s.
            #expect(ContinuousClock.now - started < .seconds(8))
            #expect(world.ingest?.runner.activeCount == 0)
            try await world.expectWorkerStillWorks()
        }
    }

    // MARK: External tools

    @Test("a tool runs with its own environment (nothing of the worker's), in the job's scratch folder (removed after), within its resource limits")
    func toolEnvironment() async throws {
        setenv("STUDYBUS_TEST_SECRET", "hunter2", 1)
        let tool = try Hostile.tool("""
            echo "cwd $(pwd)"
            env
            cat /proc/self/limits
            """)
        defer { try? FileManager.default.removeItem(at: tool) }
        let limits = ToolLimits(memoryBytes: 300 * 1024 * 1024, cpuSeconds: 7, fileBytes: 3 * 1024 * 1024, openFiles: 40)
        try await withIngest(testIngestConfiguration {
            $0.tools.pdftotext = tool.path
            $0.tools.limits = limits
        }) { world in
            let result = try await world.submit("lecture.pdf", IngestSubmit(fileName: "lecture.pdf", options: IngestOptions(generateFlashcards: false)))
            let text = try await world.chunks(result.materialId).map(\.text).joined(separator: "\n")
            #expect(!text.contains("STUDYBUS_TEST_SECRET") && !text.contains("hunter2"))
            #expect(text.contains("PATH=/usr/local/bin:/usr/bin:/bin") && text.contains("OMP_THREAD_LIMIT=1"))
            let variables = text.split(separator: "\n").filter { $0.contains("=") && !$0.hasPrefix("cwd") }
            #expect(variables.allSatisfy { line in ["PATH=", "LANG=", "LC_ALL=", "HOME=", "TMPDIR=", "OMP_THREAD_LIMIT=", "TESSDATA_PREFIX=", "PWD="].contains { line.hasPrefix($0) } }, "\(variables)")
            #expect(text.range(of: #"Max address space\s+314572800\s+314572800\s+bytes"#, options: .regularExpression) != nil, "\(text)")
            #expect(text.range(of: #"Max cpu time\s+7\s+12\s+seconds"#, options: .regularExpression) != nil)
            #expect(text.range(of: #"Max file size\s+3145728\s+3145728\s+bytes"#, options: .regularExpression) != nil)
            #expect(text.range(of: #"Max open files\s+40\s+40\s+files"#, options: .regularExpression) != nil)
            #expect(text.range(of: #"Max core file size\s+0\s+0\s+bytes"#, options: .regularExpression) != nil)
            let scratch = try #require(text.split(separator: "\n").first { $0.hasPrefix("cwd ") }?.dropFirst(4))
            #expect(scratch.contains("studybus-ingest-"))
            #expect(!FileManager.default.fileExists(atPath: String(scratch)), "the job's scratch folder is removed")
        }
    }

    @Test("a tool over its memory, CPU time or file size limit is stopped and the job fails saying which; the worker goes on")
    func toolLimits() async throws {
        let memory = try Hostile.tool("exec python3 -c 'bytearray(512 * 1024 * 1024)'")
        let cpu = try Hostile.tool("while :; do :; done")
        let file = try Hostile.tool("exec head -c 4194304 /dev/zero > big.bin")
        defer { for tool in [memory, cpu, file] { try? FileManager.default.removeItem(at: tool) } }
        let limits = ToolLimits(memoryBytes: 128 * 1024 * 1024, cpuSeconds: 1, fileBytes: 1024 * 1024, openFiles: 64)
        for (tool, code, text) in [
            (memory, StatusCode.invalidArgument, "a tool may use 128 MiB of memory, INGEST_TOOL_MEMORY_MB): "),
            (cpu, .deadlineExceeded, "used more than 1 s of CPU time on 'lecture.pdf' and was stopped (INGEST_TOOL_CPU_SECONDS)"),
            (file, .invalidArgument, "would write a file larger than 1 MiB for 'lecture.pdf' and was stopped (INGEST_TOOL_MAX_FILE_MB)"),
        ] {
            try await withIngest(testIngestConfiguration {
                $0.tools.pdftotext = tool.path
                $0.tools.limits = limits
            }) { world in
                let error = try await world.expectJobFailure(data: try Fixture.data("lecture.pdf"), name: "lecture.pdf", code: code)
                #expect(error.message.contains(text), "\(error.message)")
                #expect(error.message.contains(tool.lastPathComponent), "names the tool")
                try await world.expectWorkerStillWorks()
            }
        }
    }

    @Test("a tool killed at its time limit takes what it started with it (its process group)")
    func toolProcessGroup() async throws {
        let pidFile = FileManager.default.temporaryDirectory.appending(path: "grandchild-\(UUID().uuidString).pid")
        let tool = try Hostile.tool("sleep 60 &\necho $! > \(pidFile.path)\nexec sleep 60")
        defer { for url in [tool, pidFile] { try? FileManager.default.removeItem(at: url) } }
        try await withIngest(testIngestConfiguration {
            $0.tools.tesseract = tool.path
            $0.tools.timeout = .seconds(1)
        }) { world in
            let error = try await world.expectJobFailure(data: try Fixture.data("scan.png"), name: "scan.png", code: .deadlineExceeded)
            #expect(error.message.contains("INGEST_TOOL_TIMEOUT_SECONDS"))
            let pid = try #require(Int32(String(decoding: try Data(contentsOf: pidFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
            try await eventually("the tool's own child is gone", timeout: .seconds(10)) { Hostile.isGone(pid) }
        }
    }

    // MARK: Budget

    @Test("what a job may expand to: ratio times the file, at least 1 MiB, at most INGEST_MAX_INFLATED_MB and the memory budget; nothing for text")
    func expansionAllowance() {
        var configuration = IngestConfiguration()
        #expect(configuration.expansionAllowance(.docx, fileBytes: 64 * 1024) == 100 * 64 * 1024)
        #expect(configuration.expansionAllowance(.pdf, fileBytes: 1000) == 1024 * 1024)
        #expect(configuration.expansionAllowance(.eml, fileBytes: 50 * 1024 * 1024) == 128 * 1024 * 1024)
        #expect(configuration.expansionAllowance(.png, fileBytes: 10 * 1024 * 1024) == 1024 * 1024)
        #expect(configuration.expansionAllowance(.csv, fileBytes: 50 * 1024 * 1024) == 0)
        configuration.memoryBudgetBytes = 16 * 1024 * 1024
        #expect(configuration.expansionAllowance(.docx, fileBytes: 50 * 1024 * 1024) == 16 * 1024 * 1024)
        let budget = ExtractionBudget(expansionAllowance: 10, compressionRatio: 100)
        #expect(budget.take(6) && !budget.take(5) && budget.take(4) && budget.remaining == 0)
        budget.cancel()
        #expect(throws: BusError.self) { try budget.checkpoint() }
    }
}

// MARK: - Hostile inputs, made at test time

enum Hostile {
    enum WordXML {
        /// One text run of `bytes` letters: deflate's best ratio, about 1000:1.
        case run(bytes: Int)
        /// As `run`, but the zip says the part is 1,000 bytes (both headers lie).
        case lyingRun(bytes: Int)
        /// Many short paragraphs: long to parse.
        case paragraphs(Int)
        /// `<w:p>` nested `levels` deep around a few words.
        case deep(levels: Int)
        /// The "billion laughs" entity expansion in a DTD.
        case billionLaughs

        var lies: Bool {
            if case .lyingRun = self { true } else { false }
        }
    }

    /// A .docx (a zip with `word/document.xml`) made by Python's zipfile.
    static func docx(_ xml: WordXML) throws -> Data {
        let body = switch xml {
        case .run(let bytes), .lyingRun(let bytes): "b'<w:p><w:r><w:t>' + b'a' * \(bytes) + b'</w:t></w:r></w:p>'"
        case .paragraphs(let count): "b'<w:p><w:r><w:t>Some words.</w:t></w:r></w:p>' * \(count)"
        case .deep(let levels): "b'<w:p>' * \(levels) + b'<w:r><w:t>Deep words.</w:t></w:r>' + b'</w:p>' * \(levels)"
        case .billionLaughs: "b'<w:p><w:r><w:t>&j;</w:t></w:r></w:p>'"
        }
        let prologue = switch xml {
        case .billionLaughs:
            #"b'<!DOCTYPE w:document [<!ENTITY a "aaaaaaaaaa">' + b''.join(b'<!ENTITY %c "%s">' % (bytes([98 + i]), (b'&%c;' % (97 + i)) * 10) for i in range(9)) + b']>'"#
        default: "b''"
        }
        let script = """
            import io, sys, zipfile
            ns = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
            xml = b'<?xml version="1.0" encoding="UTF-8"?>' + \(prologue) + b'<w:document ' + ns + b'><w:body>' + \(body) + b'</w:body></w:document>'
            out = io.BytesIO()
            with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as z:
                z.writestr('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
                z.writestr('word/document.xml', xml)
            data = bytearray(out.getvalue())
            if \(xml.lies ? "True" : "False"):
                import struct
                info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo('word/document.xml')
                struct.pack_into('<I', data, info.header_offset + 22, 1000)
                central = data.find(b'word/document.xml', data.find(b'PK\\x01\\x02')) - 46
                struct.pack_into('<I', data, central + 24, 1000)
            sys.stdout.buffer.write(bytes(data))
            """
        return try python(script)
    }

    /// A zip made by Python's zipfile: each entry's name and a Python expression of its bytes;
    /// `mimetype` stored, as ODT and EPUB have it, the rest deflated.
    static func zip(_ entries: [(String, String)]) throws -> Data {
        let writes = entries.map { name, bytes in
            "    z.writestr(zipfile.ZipInfo('\(name)'), \(bytes), \(name == "mimetype" ? "zipfile.ZIP_STORED" : "zipfile.ZIP_DEFLATED"), 9)"
        }.joined(separator: "\n")
        return try python("""
            import io, sys, zipfile
            out = io.BytesIO()
            with zipfile.ZipFile(out, 'w') as z:
            \(writes)
            sys.stdout.buffer.write(out.getvalue())
            """)
    }

    /// The standard output of a Python script.
    static func python(_ script: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PythonServer.python)
        process.arguments = ["-c", script]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ScriptFailed(status: process.terminationStatus) }
        return data
    }

    struct ScriptFailed: Error {
        let status: Int32
    }

    /// An e-mail whose body is `depth` multiparts, one inside the other, around a text part.
    static func nestedMessage(depth: Int, body: String) -> String {
        var part = "Content-Type: text/plain\r\n\r\n" + body + "\r\n"
        for level in (0..<depth).reversed() {
            let boundary = "level-\(level)"
            part = "Content-Type: multipart/mixed; boundary=\"\(boundary)\"\r\n\r\n--\(boundary)\r\n" + part + "--\(boundary)--\r\n"
        }
        return "From: a@example.org\r\nSubject: Nested\r\nMIME-Version: 1.0\r\n" + part
    }

    /// A shell script standing in for a tool: it ignores its arguments and runs `body`.
    static func tool(_ body: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appending(path: "hostile-tool-\(UUID().uuidString).sh")
        try "#!/bin/sh\n\(body)\n".write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }

    /// Whether process `pid` no longer runs (gone, or a zombie waiting for its reaper).
    static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }
}

extension IngestWorld {
    /// Submits `data` as `name`, expecting its job to fail with `code`: the material ends
    /// failed with the message as its reason, `ingest.failed` says so, and nothing else of it
    /// (document, chunks, cards) is stored.
    func expectJobFailure(
        data: Data, name: String, code: StatusCode, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> BusError {
        let failure: BusError
        do {
            _ = try await submit(data: data, IngestSubmit(fileName: name), timeout: .seconds(90))
            Issue.record("ingest.submit of \(name) succeeded; expected \(code.name)", sourceLocation: sourceLocation)
            throw UnexpectedSuccess()
        } catch let error as BusError {
            failure = error
        }
        #expect(failure.code == code, "\(failure)", sourceLocation: sourceLocation)
        let materialId = try #require(failure.details?["materialId"]?.stringValue, "the job failed after storing its file", sourceLocation: sourceLocation)
        let material = try await store(Store.getMaterial, RecordID(id: materialId))
        #expect(material.status == .failed && material.failureReason == failure.message, sourceLocation: sourceLocation)
        #expect(try await chunks(materialId).isEmpty, sourceLocation: sourceLocation)
        #expect(try await flashcards(materialId).isEmpty, sourceLocation: sourceLocation)
        #expect(try await store(Store.listSourceDocuments, SourceDocumentList(materialId: materialId)).items.isEmpty, sourceLocation: sourceLocation)
        #expect(try await storeEvents(Store.ingestFailed).contains { $0.materialId == materialId && $0.reason == failure.message }, sourceLocation: sourceLocation)
        return failure
    }

    /// The worker still processes a file after a hostile one, and holds no job.
    func expectWorkerStillWorks(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let next = try await submit(data: Data("# After\n\nA later job still works, \(UUID().uuidString).\n".utf8),
                                    IngestSubmit(fileName: "after.md", options: IngestOptions(generateFlashcards: false)))
        #expect(next.material.status == .ready, sourceLocation: sourceLocation)
        #expect(try await chunks(next.materialId).contains { $0.text.contains("A later job still works") }, sourceLocation: sourceLocation)
        #expect(ingest?.runner.activeCount == 0, sourceLocation: sourceLocation)
    }
}

struct UnexpectedSuccess: Error {}
