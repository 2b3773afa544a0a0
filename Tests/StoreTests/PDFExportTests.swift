import BrokerCore
import Bus
import Contracts
import Foundation
import Glibc
import StoreCore
import TestSupport
import Testing
import Wire

/// One word poppler found on a page, with its box in points (origin top left).
struct PDFWord: Equatable {
    var text: String
    var xMin, yMin, xMax, yMax: Double
}

/// A page as `pdftotext -bbox` reads it.
struct PDFPage {
    var width, height: Double
    var words: [PDFWord]

    /// The words whose centre lies in `box`, in poppler's reading order.
    func words(in box: (x: Double, y: Double, width: Double, height: Double)) -> [PDFWord] {
        words.filter { word in
            let (x, y) = ((word.xMin + word.xMax) / 2, (word.yMin + word.yMax) / 2)
            return x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height
        }
    }
}

/// Runs poppler's `pdftotext` (Debian poppler-utils) on `pdf` with `arguments` and returns what it wrote.
func pdftotext(_ pdf: Data, _ arguments: [String]) async throws -> String {
    try await onOwnThread {
        let scratch = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let input = scratch.appending(path: "in.pdf"), output = scratch.appending(path: "out.txt")
        try pdf.write(to: input)
        let process = try ChildProcess(
            executable: "/usr/bin/pdftotext", arguments: arguments + [input.path, output.path], logFile: scratch.appending(path: "stderr").path)
        var status: Int32 = 0
        waitpid(process.pid, &status, 0)
        guard status == 0 else { throw PDFToTextFailed(status: status) }
        return try String(contentsOf: output, encoding: .utf8)
    }
}

struct PDFToTextFailed: Error {
    var status: Int32
}

/// The pages and words of `pdf`, read back by `pdftotext -bbox`.
func pdfPages(_ pdf: Data) async throws -> [PDFPage] {
    let xhtml = try await pdftotext(pdf, ["-bbox"])
    var pages: [PDFPage] = []
    let page = try Regex(#"<page width="([0-9.]+)" height="([0-9.]+)">"#)
    let word = try Regex(#"<word xMin="([0-9.]+)" yMin="([0-9.]+)" xMax="([0-9.]+)" yMax="([0-9.]+)">([^<]*)</word>"#)
    for line in xhtml.split(separator: "\n") {
        if let match = try page.firstMatch(in: line) {
            pages.append(PDFPage(width: Double(match.output[1].substring!)!, height: Double(match.output[2].substring!)!, words: []))
        } else if let match = try word.firstMatch(in: line) {
            let number = { (index: Int) in Double(match.output[index].substring!)! }
            let text = String(match.output[5].substring!)
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
            pages[pages.count - 1].words.append(PDFWord(text: text, xMin: number(1), yMin: number(2), xMax: number(3), yMax: number(4)))
        }
    }
    return pages
}

/// The card grid PDFExport draws: 2 columns × 4 rows inside a 28 pt margin.
func cardCell(_ slot: Int, page: PDFPage, back: Bool) -> (x: Double, y: Double, width: Double, height: Double) {
    let margin = 28.0, width = (page.width - 2 * margin) / 2, height = (page.height - 2 * margin) / 4
    let column = back ? 1 - slot % 2 : slot % 2
    return (margin + Double(column) * width, margin + Double(slot / 2) * height, width, height)
}

/// Text without its spaces, line breaks and bidi marks: poppler splits and joins words its own
/// way, and marks right-to-left runs with embedding controls.
func squeezed(_ text: String) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.filter {
        !CharacterSet.whitespacesAndNewlines.contains($0) && $0.properties.generalCategory != .format
    }))
}

/// Lines of text with their breaks and runs of spaces as one space, as `pdftotext -layout`
/// lines up a wrapped line.
func spaced(_ text: String) -> String {
    text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
}

/// The text of one card on page `page` (1-based) in reading order: poppler's plain mode, which
/// puts right-to-left words back in logical order, cropped to the card.
func cardText(_ pdf: Data, page: Int, _ cell: (x: Double, y: Double, width: Double, height: Double)) async throws -> String {
    try await pdftotext(pdf, [
        "-f", String(page), "-l", String(page), "-x", String(Int(cell.x.rounded())), "-y", String(Int(cell.y.rounded())),
        "-W", String(Int(cell.width.rounded(.down))), "-H", String(Int(cell.height.rounded(.down))),
    ])
}

/// The `scheduler` executable as a child process on the test's broker.
struct SchedulerProcess {
    let process: ChildProcess

    init(endpoints: Broker.Endpoints, dataDirectory: URL) throws {
        var environment = serviceEnvironment(endpoints)
        environment["DATA_DIR"] = dataDirectory.path
        environment["LOG_LEVEL"] = "warning"
        process = try ChildProcess(executable: builtProductsDirectory.appending(path: "scheduler").path, environment: environment,
                                   logFile: dataDirectory.appending(path: "scheduler.log").path)
    }
}

@Suite("PDF export")
struct PDFExportTests {
    /// Exports as alice and returns the result with its attachment, checked to be a PDF.
    static func exportPDF(_ world: StoreWorld, _ request: ExportRequest) async throws -> (ExportResult, Data) {
        let (result, attachment) = try await world.client.callWithAttachment(Store.export, request, options: CallOptions(user: "alice"))
        let pdf = try #require(attachment)
        #expect(result.contentType == "application/pdf" && result.fileName == "\(request.content.rawValue).pdf")
        #expect(result.inAttachment && result.content == nil && result.byteCount == pdf.count && pdf.starts(with: Data("%PDF-".utf8)))
        return (result, pdf)
    }

    @Test("cards print fronts, then backs mirrored for duplex, every card in order; 2 pages per 8 cards; A4 and Letter")
    func cardsInOrder() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let set = try await world.call(Store.createSet, FlashcardSetCreate(name: "Order"))
            let count = 11
            for index in 1...count {
                _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Front\(index) question", back: "Back\(index) answer", setId: set.id))
            }
            let (result, pdf) = try await Self.exportPDF(world, ExportRequest(content: .flashcards, format: .pdf, setId: set.id))
            #expect(result.itemCount == count)
            let pages = try await pdfPages(pdf)
            #expect(pages.count == 4)
            #expect(pages.allSatisfy { abs($0.width - 595.276) < 0.5 && abs($0.height - 841.89) < 0.5 })
            for index in 1...count {
                let sheet = (index - 1) / 8, slot = (index - 1) % 8
                let front = pages[2 * sheet].words(in: cardCell(slot, page: pages[2 * sheet], back: false)).map(\.text)
                let back = pages[2 * sheet + 1].words(in: cardCell(slot, page: pages[2 * sheet + 1], back: true)).map(\.text)
                #expect(front == [String(index), "Front\(index)", "question"], "card \(index)'s front")
                #expect(back == [String(index), "Back\(index)", "answer"], "card \(index)'s back")
            }
            // The last sheet's empty slots stay empty, on both sides.
            #expect(pages[2].words(in: cardCell(3, page: pages[2], back: false)).isEmpty)
            #expect(pages[3].words(in: cardCell(3, page: pages[3], back: true)).isEmpty)

            let (_, letter) = try await Self.exportPDF(world, ExportRequest(content: .flashcards, format: .pdf, setId: set.id, paper: .letter))
            let letterPages = try await pdfPages(letter)
            #expect(letterPages.count == 4 && letterPages.allSatisfy { $0.width == 612 && $0.height == 792 })
            #expect(letterPages[1].words(in: cardCell(0, page: letterPages[1], back: true)).map(\.text) == ["1", "Back1", "answer"])

            let (_, none) = try await Self.exportPDF(world, ExportRequest(content: .flashcards, format: .pdf, setId: set.id, subjectId: "none"))
            #expect(try await pdfPages(none).count == 1)
        }
    }

    @Test("Arabic, Hebrew, Chinese, Japanese and Korean cards come back out of the PDF as they went in")
    func scripts() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let sides = [
                ("مرحبا بالعالم", "שלום עולם"), ("光合作用将光能转化为化学能", "日本語の勉強をしています"), ("한국어 공부", "Ünïcode Grüße — ok"),
            ]
            for (front, back) in sides { _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: front, back: back)) }
            let (_, pdf) = try await Self.exportPDF(world, ExportRequest(content: .flashcards, format: .pdf))
            let pages = try await pdfPages(pdf)
            #expect(pages.count == 2)
            for (slot, (front, back)) in sides.enumerated() {
                let frontText = try await cardText(pdf, page: 1, cardCell(slot, page: pages[0], back: false))
                let backText = try await cardText(pdf, page: 2, cardCell(slot, page: pages[1], back: true))
                #expect(squeezed(frontText) == "\(slot + 1)" + squeezed(front))
                #expect(squeezed(backText) == "\(slot + 1)" + squeezed(back))
            }
        }
    }

    @Test("a card too long for its box is cut with … inside it: nothing reaches the next card")
    func longCardsStayInTheirCard() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let words = (1...1_000).map { "spill\($0)" }
            let longFronts = [
                words.joined(separator: " "),               // one paragraph, cut to 2,000 characters before layout
                words.prefix(150).joined(separator: "\n"),  // 150 short paragraphs, under 2,000 characters
                String(repeating: "X", count: 9_000),       // one word wider than the card
            ]
            for front in longFronts { _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: front, back: "short")) }
            for index in 4...8 { _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "Card\(index)", back: "B\(index)")) }
            let (_, pdf) = try await Self.exportPDF(world, ExportRequest(content: .flashcards, format: .pdf))
            let pages = try await pdfPages(pdf)
            #expect(pages.count == 2)
            let fronts = pages[0]
            for slot in 0..<8 {
                let cell = cardCell(slot, page: fronts, back: false)
                let inside = fronts.words(in: cell)
                for word in inside {
                    #expect(word.xMin >= cell.x - 0.5 && word.xMax <= cell.x + cell.width + 0.5, "\(word) in card \(slot + 1)")
                    #expect(word.yMin >= cell.y - 0.5 && word.yMax <= cell.y + cell.height + 0.5, "\(word) in card \(slot + 1)")
                }
                if slot < 3 {
                    #expect(inside.count > 5, "card \(slot + 1) shows the start of its text")
                    #expect(inside.last?.text.hasSuffix("…") == true, "card \(slot + 1) ends in an ellipsis: \(inside.suffix(3).map(\.text))")
                } else {
                    #expect(inside.map(\.text) == [String(slot + 1), "Card\(slot + 1)"])
                }
            }
            // Every word on the page is in one card's box.
            let placed = (0..<8).reduce(0) { $0 + fronts.words(in: cardCell($1, page: fronts, back: false)).count }
            #expect(placed == fronts.words.count)
        }
    }

    @Test("past STORE_PDF_MAX_PAGES: RESOURCE_EXHAUSTED before drawing; wrong content and format pairs: INVALID_ARGUMENT; the store stays up")
    func limits() async throws {
        try await withWorld(StoreWorld.start(pdfMaximumPages: 4)) { world in
            let put = try await world.call(Store.putMaterial, samplePut(cards: 16, setName: "Sixteen"))
            let setId = try #require(put.setId)
            let (full, pdf) = try await Self.exportPDF(world, ExportRequest(content: .flashcards, format: .pdf, setId: setId))
            let fullPages = try await pdfPages(pdf)
            #expect(full.itemCount == 16 && fullPages.count == 4)

            _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "seventeenth", back: "card", setId: setId))
            let error = await world.failure(Store.export, ExportRequest(content: .flashcards, format: .pdf, setId: setId))
            #expect(error?.code == .resourceExhausted && error?.message.contains("at most 16 cards") == true)
            #expect(await world.failure(Store.export, ExportRequest(content: .studySessions, format: .pdf))?.code == .invalidArgument)
            #expect(await world.failure(Store.export, ExportRequest(content: .report, format: .csv))?.code == .invalidArgument)
            #expect(await world.failure(Store.export, ExportRequest(content: .report, format: .pdf, subjectId: "bad id!"))?.code == .invalidArgument)
            for payload in [#"{"content":"flashcards","format":"pdf","paper":"a0"}"#, #"{"content":"report","format":"pdf","paper":7}"#] {
                do {
                    _ = try await world.client.callRaw(service: "store", method: Store.export.name, payload: Data(payload.utf8), options: CallOptions(user: "alice"))
                    Issue.record("\(payload) was accepted")
                } catch {
                    #expect((error as? BusError)?.code == .invalidArgument, "\(payload)")
                }
            }

            // 4 pages hold about 240 report lines: more sessions than that are refused.
            for index in 0..<241 {
                let start = StoreWorld.start.addingTimeInterval(Double(index) * 3_600)
                _ = try await world.call(Store.createSession, StudySessionCreate(startedAt: start, endedAt: start.addingTimeInterval(600), cardsReviewed: 1))
            }
            #expect(await world.failure(Store.export, ExportRequest(content: .report, format: .pdf))?.code == .resourceExhausted)

            #expect(try await world.call(Store.export, ExportRequest(content: .flashcards, format: .csv, setId: setId)).itemCount == 17)
            _ = try await world.client.call(Reserved.health("store"), Empty())
        }
    }

    @Test("the study report shows the streak and each set's mastery the real scheduler computed, and the sessions")
    func reportWithScheduler() async throws {
        let world = try await StoreWorld.start()
        let schedulerDirectory = try temporaryDirectory()
        let scheduler = try SchedulerProcess(endpoints: world.endpoints, dataDirectory: schedulerDirectory)
        try await running(world, stop: { world in
            await scheduler.process.terminate()
            await world.stop()
        }) { world in
            let biology = try await world.call(Store.createSet, FlashcardSetCreate(name: "Biology"))
            let hebrew = try await world.call(Store.createSet, FlashcardSetCreate(name: "עברית"))
            var cards: [Flashcard] = []
            for index in 0..<3 {
                cards.append(try await world.call(Store.createFlashcard, FlashcardCreate(front: "Cell \(index)", back: "Answer", setId: biology.id)))
            }
            _ = try await world.call(Store.createFlashcard, FlashcardCreate(front: "שלום", back: "hello", setId: hebrew.id))
            let alice = CallOptions(user: "alice", timeout: .seconds(2))
            try await eventually("the scheduler has the store's cards", timeout: .seconds(60)) {
                (try? await world.client.call(Scheduler.setStatistics, ReviewSetID(setId: biology.id), options: alice))?.cards == 3
            }
            for (card, rating) in zip(cards, [ReviewRating.good, .again, .easy]) {
                _ = try await world.client.call(Scheduler.recordReview, ReviewRecordRequest(cardId: card.id, rating: rating), options: alice)
            }
            for index in 0..<2 {
                let start = StoreWorld.start.addingTimeInterval(Double(index) * 86_400)
                _ = try await world.call(
                    Store.createSession, StudySessionCreate(setId: biology.id, startedAt: start, endedAt: start.addingTimeInterval(1_500), cardsReviewed: 3 + index))
            }
            let streak = try await world.client.call(Scheduler.studyStreak, Empty(), options: alice)
            let stats = try await world.client.call(Scheduler.setStatistics, ReviewSetID(setId: biology.id), options: alice)
            #expect(streak.currentDays == 1 && stats.reviews == 3 && stats.cards == 3)

            let (result, pdf) = try await Self.exportPDF(world, ExportRequest(content: .report, format: .pdf))
            #expect(result.itemCount == 2)
            let text = spaced(try await pdftotext(pdf, ["-layout"]))
            let accuracy = Int((try #require(stats.accuracy) * 100).rounded())
            let mastery = stats.mastery
            #expect(text.contains("Current streak: 1 day, best \(streak.bestDays) day"))
            #expect(text.contains("Last studied: \(try #require(streak.lastStudyDate))"))
            #expect(text.contains(
                "Biology: 3 cards, 3 reviews, accuracy \(accuracy)%; learning \(mastery.learning), developing \(mastery.developing), proficient \(mastery.proficient), mastered \(mastery.mastered)"))
            let hebrewMastery = try await world.client.call(Scheduler.setStatistics, ReviewSetID(setId: hebrew.id), options: alice).mastery
            #expect(text.contains(
                "card, 0 reviews, no reviews yet; learning \(hebrewMastery.learning), developing \(hebrewMastery.developing), proficient \(hebrewMastery.proficient), mastered \(hebrewMastery.mastered)"),
                "the Hebrew set's line")
            #expect(text.contains("2 sessions, 50 minutes, 7 cards reviewed"))
            #expect(text.contains("2026-09-21 14:13 · Biology · 25 min · 3 cards") && text.contains("2026-09-22 14:13 · Biology · 25 min · 4 cards"))
            #expect(!text.contains("unavailable"))
        }
    }

    @Test("without the scheduler the report still comes, saying the scheduler's numbers are unavailable")
    func reportWithoutScheduler() async throws {
        try await withWorld(StoreWorld.start()) { world in
            _ = try await world.call(Store.createSet, FlashcardSetCreate(name: "Chemistry"))
            let start = StoreWorld.start
            _ = try await world.call(Store.createSession, StudySessionCreate(startedAt: start, endedAt: start.addingTimeInterval(600), cardsReviewed: 5))
            let began = ContinuousClock.now
            let (_, pdf) = try await Self.exportPDF(world, ExportRequest(content: .report, format: .pdf, paper: .letter))
            #expect(ContinuousClock.now - began < .seconds(10), "one 2 s wait for the streak, none per set")
            let text = spaced(try await pdftotext(pdf, ["-layout"]))
            #expect(text.contains("Streak: scheduler unavailable"))
            #expect(text.contains("Chemistry: scheduler unavailable"))
            #expect(text.contains("1 session, 10 minutes, 5 cards reviewed"))
            #expect(text.contains("Made 2026-09-21 14:13 (UTC)"))
        }
    }
}
