import Bus
import Contracts
import Foundation
import GRDB
import Logging
import PangoPDF
import ServiceKit
import Wire

/// `export` with format `pdf`: printable flashcards, or the study report. The rows are read in
/// one snapshot, the scheduler is asked for the report's numbers, and the pages are drawn on
/// ``PDFRendering``'s queue; the file always travels in the reply's attachment frame.
enum PDFExport {
    /// Cards per page: 2 columns × 4 rows.
    static let columns = 2
    static let rows = 4
    static let cardsPerPage = columns * rows
    /// A card side longer than this is cut (and ends in "…") before layout: a card shows a few
    /// hundred characters, and pango's work grows with the text it is given.
    static let cardSideCharacters = 2_000
    /// Report lines fetched per allowed page, a bound above what a page holds (about 50).
    static let reportLinesPerPage = 60
    /// How long the report waits for the scheduler's streak, and for all of its sets' statistics.
    static let streakTimeout: Duration = .seconds(2)
    static let setStatisticsBudget: Duration = .seconds(5)

    static func run(_ request: ExportRequest, _ store: StoreService, _ context: RequestContext) async throws -> (ExportResult, Data?) {
        let paper: PaperSize = request.paper == .letter ? .letter : .a4
        let maximumPages = store.pdfMaximumPages
        let (data, count): (Data, Int)
        switch request.content {
        case .flashcards:
            let cards = try await store.read(context) { db, user in
                try flashcards(request, Changes(db: db, user: user, now: Date()), maximumPages: maximumPages)
            }
            data = try await render { () throws(BusError) in try drawCards(cards, paper: paper, maximumPages: maximumPages) }
            count = cards.count
        case .report:
            let rows = try await store.read(context) { db, user in try reportRows(request, db, user: user, maximumPages: maximumPages) }
            let numbers = await schedulerNumbers(sets: rows.sets, context)
            let now = store.clock.now()
            data = try await render { () throws(BusError) in
                try drawReport(rows, numbers, now: now, paper: paper, maximumPages: maximumPages)
            }
            count = rows.sessions.count
        case .studySessions:
            throw BusError.invalidArgument("field 'format': study sessions export as json or csv; their PDF is content 'report'")
        }
        let result = ExportResult(
            format: .pdf, contentType: "application/pdf", fileName: "\(request.content.rawValue).pdf", itemCount: count, byteCount: data.count,
            content: nil, inAttachment: true)
        return (result, data)
    }

    /// Pages a flashcard PDF of `cards` cards has: a page of fronts and one of backs per 8
    /// cards, one page saying there are none for none.
    static func pageCount(cards: Int) -> Int {
        cards == 0 ? 1 : 2 * ((cards + cardsPerPage - 1) / cardsPerPage)
    }

    private static func render(_ draw: @escaping @Sendable () throws(BusError) -> Data) async throws(BusError) -> Data {
        try await PDFRendering.run(draw)
    }

    private static func converting<T>(_ body: () throws(PDFCanvasError) -> T) throws(BusError) -> T {
        do {
            return try body()
        } catch .tooManyPages(let limit) {
            throw BusError.resourceExhausted("the PDF would have more than \(limit) pages (STORE_PDF_MAX_PAGES); export less, e.g. one subject")
        } catch {
            throw BusError.internal("cannot draw the PDF: \(error)")
        }
    }

    // MARK: Flashcards

    /// The cards the request selects, counted before they are read.
    /// - Throws: `RESOURCE_EXHAUSTED` when they would take more than `maximumPages` pages.
    private static func flashcards(_ request: ExportRequest, _ changes: Changes, maximumPages: Int) throws -> [Flashcard] {
        let (condition, arguments) = try ExportMethods.flashcardFilter(request)
        let count = try Int.fetchOne(
            changes.db, sql: "SELECT count(*) FROM \(Flashcard.table) WHERE user_id = ? AND (\(condition))",
            arguments: StatementArguments([changes.user] + arguments)) ?? 0
        let maximumCards = maximumPages / 2 * cardsPerPage
        guard pageCount(cards: count) <= maximumPages else {
            throw BusError.resourceExhausted(
                "\(count) flashcards would take \(pageCount(cards: count)) pages; a PDF holds at most \(maximumCards) cards (STORE_PDF_MAX_PAGES \(maximumPages)); export one set at a time")
        }
        return try changes.all(Flashcard.self, where: condition, arguments)
    }

    /// Fronts on one page, backs on the next with the columns swapped, so that a sheet printed
    /// on both sides (flipped on its long edge) has each card's back behind its front; dashed
    /// lines to cut along.
    static func drawCards(_ cards: [Flashcard], paper: PaperSize, maximumPages: Int) throws(BusError) -> Data {
        try converting { () throws(PDFCanvasError) in
            let canvas = try PDFCanvas(paper: paper, maximumPages: maximumPages, title: "Flashcards")
            let margin = 28.0
            let width = (paper.width - 2 * margin) / Double(columns)
            let height = (paper.height - 2 * margin) / Double(rows)
            let padding = 12.0
            let numberStyle = TextStyle(size: 7, grey: 0.5)
            let sideStyle = TextStyle(size: 11, centred: true)

            func cutLines() {
                for column in 0...columns {
                    let x = margin + Double(column) * width
                    canvas.dashedLine(fromX: x, y: 0, toX: x, y: paper.height)
                }
                for row in 0...rows {
                    let y = margin + Double(row) * height
                    canvas.dashedLine(fromX: 0, y: y, toX: paper.width, y: y)
                }
            }
            func side(_ text: String, number: Int, column: Int, row: Int) {
                let cell = Box(x: margin + Double(column) * width, y: margin + Double(row) * height, width: width, height: height)
                canvas.text(String(number), in: Box(x: cell.x + 6, y: cell.y + 4, width: cell.width - 12, height: 14), style: numberStyle)
                let shown = text.count > cardSideCharacters ? String(text.prefix(cardSideCharacters)) + "…" : text
                canvas.text(
                    shown, in: Box(x: cell.x + padding, y: cell.y + padding + 6, width: cell.width - 2 * padding, height: cell.height - 2 * padding - 6),
                    style: sideStyle, verticallyCentred: true)
            }

            if cards.isEmpty {
                canvas.text("No flashcards to print.", in: Box(x: margin, y: margin, width: paper.width - 2 * margin, height: 40), style: TextStyle(size: 14))
                return try canvas.finish()
            }
            for first in stride(from: 0, to: cards.count, by: cardsPerPage) {
                let page = cards[first..<min(first + cardsPerPage, cards.count)]
                if first > 0 { try canvas.showPage() }
                cutLines()
                for (index, card) in zip(page.indices, page) {
                    let slot = index - first
                    side(card.front, number: index + 1, column: slot % columns, row: slot / columns)
                }
                try canvas.showPage()
                cutLines()
                for (index, card) in zip(page.indices, page) {
                    let slot = index - first
                    side(card.back, number: index + 1, column: columns - 1 - slot % columns, row: slot / columns)
                }
            }
            return try canvas.finish()
        }
    }

    // MARK: Report

    /// What the report shows from the store's own rows.
    struct ReportRows: Sendable {
        struct Session: Sendable {
            var startedAt: Date
            var minutes: Double?
            var cardsReviewed: Int
            var label: String?
        }
        var sessions: [Session]
        var totalMinutes: Double
        var totalCardsReviewed: Int
        /// The user's sets, (id, name), in the order they were made.
        var sets: [(id: String, name: String)]
    }

    /// What the report shows from the scheduler; nil where it did not answer in time.
    struct SchedulerNumbers: Sendable {
        var streak: StudyStreak?
        var sets: [String: SetStatistics]
    }

    /// The user's sessions (of `subjectId`, if given) oldest first and sets.
    /// - Throws: `RESOURCE_EXHAUSTED` when there are more than fit in `maximumPages` pages.
    private static func reportRows(_ request: ExportRequest, _ db: Database, user: String, maximumPages: Int) throws -> ReportRows {
        let (condition, arguments) = try ExportMethods.subjectFilter(request, user: user)
        let lineLimit = maximumPages * reportLinesPerPage
        let sessions = try StudySession.fetchAll(
            db, sql: "SELECT * FROM \(StudySession.table) WHERE \(condition) ORDER BY started_at, id LIMIT ?",
            arguments: StatementArguments(arguments + [lineLimit + 1]))
        let sets = try FlashcardSet.fetchAll(
            db, sql: "SELECT * FROM \(FlashcardSet.table) WHERE \(condition) ORDER BY rowid LIMIT ?", arguments: StatementArguments(arguments + [lineLimit + 1]))
        guard sessions.count + sets.count <= lineLimit else {
            throw BusError.resourceExhausted(
                "the report would list more than \(lineLimit) sessions and sets, more than \(maximumPages) pages (STORE_PDF_MAX_PAGES); ask for one subject's")
        }
        let setNames = Dictionary(sets.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        let subjectNames = Dictionary(
            try Row.fetchAll(db, sql: "SELECT id, name FROM \(Subject.table) WHERE user_id = ?", arguments: [user]).map { (row: Row) in
                (row["id"] as String, row["name"] as String)
            }, uniquingKeysWith: { first, _ in first })
        var totalMinutes = 0.0
        var totalCards = 0
        let lines = sessions.map { session in
            let minutes = session.endedAt.map { max(0, $0.timeIntervalSince(session.startedAt) / 60) }
            totalMinutes += minutes ?? 0
            totalCards += session.cardsReviewed
            return ReportRows.Session(
                startedAt: session.startedAt, minutes: minutes, cardsReviewed: session.cardsReviewed,
                label: session.setId.flatMap { setNames[$0] } ?? session.subjectId.flatMap { subjectNames[$0] })
        }
        return ReportRows(sessions: lines, totalMinutes: totalMinutes, totalCardsReviewed: totalCards, sets: sets.map { ($0.id, $0.name) })
    }

    /// The streak and each set's statistics, as `progress.today` asks for its review count:
    /// within a timeout, and without them (logged) when the scheduler does not answer, so the
    /// report shows the store's part rather than nothing.
    private static func schedulerNumbers(sets: [(id: String, name: String)], _ context: RequestContext) async -> SchedulerNumbers {
        var numbers = SchedulerNumbers(streak: nil, sets: [:])
        do throws(BusError) {
            numbers.streak = try await context.bus.call(Scheduler.studyStreak, Empty(), options: context.downstreamOptions(timeout: streakTimeout))
        } catch {
            context.logger.warning("study report without the scheduler's streak", metadata: ["error": "\(error)"])
            return numbers
        }
        let deadline = ContinuousClock.now + setStatisticsBudget
        for set in sets {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                context.logger.warning("study report without some sets' statistics: the scheduler took longer than \(setStatisticsBudget)")
                break
            }
            do throws(BusError) {
                numbers.sets[set.id] = try await context.bus.call(
                    Scheduler.setStatistics, ReviewSetID(setId: set.id), options: context.downstreamOptions(timeout: left))
            } catch {
                context.logger.warning("study report without a set's statistics", metadata: ["set": "\(set.id)", "error": "\(error)"])
            }
        }
        return numbers
    }

    /// The report's lines, one after another, a new page when the next does not fit.
    static func drawReport(_ rows: ReportRows, _ numbers: SchedulerNumbers, now: Date, paper: PaperSize, maximumPages: Int) throws(BusError) -> Data {
        try converting { () throws(PDFCanvasError) in
            let canvas = try PDFCanvas(paper: paper, maximumPages: maximumPages, title: "Study report")
            let margin = 48.0
            let width = paper.width - 2 * margin
            var y = margin
            func line(_ text: String, _ style: TextStyle, spaceBefore: Double = 0) throws(PDFCanvasError) {
                let height = min(canvas.textHeight(text, width: width, style: style), paper.height - 2 * margin)
                if y > margin { y += spaceBefore }
                if y + height > paper.height - margin {
                    try canvas.showPage()
                    y = margin
                }
                canvas.text(text, in: Box(x: margin, y: y, width: width, height: height), style: style)
                y += height
            }
            // English lines, left to right, with names in any script inside them.
            let title = TextStyle(size: 20, bold: true, paragraphsFollowTheirScript: false)
            let heading = TextStyle(size: 13, bold: true, paragraphsFollowTheirScript: false)
            let body = TextStyle(size: 10, paragraphsFollowTheirScript: false)
            let zoneName = numbers.streak.map(\.timeZone).flatMap { TimeZone(identifier: $0) == nil ? nil : $0 } ?? "UTC"
            let timeZone = TimeZone(identifier: zoneName) ?? .gmt
            let dates = DateFormatter()
            dates.locale = Locale(identifier: "en_US_POSIX")
            dates.timeZone = timeZone
            dates.dateFormat = "yyyy-MM-dd HH:mm"
            func counted(_ count: Int, _ noun: String) -> String { count == 1 ? "1 \(noun)" : "\(count) \(noun)s" }
            func whole(_ value: Double) -> String { String(Int(value.rounded())) }
            // A user's name for something, isolated (FSI … PDI) so that a right-to-left name does
            // not carry the number after it into its run.
            func isolated(_ name: String) -> String { "\u{2068}\(name)\u{2069}" }

            try line("Study report", title)
            try line("Made \(dates.string(from: now)) (\(zoneName))", TextStyle(size: 9, grey: 0.4, paragraphsFollowTheirScript: false), spaceBefore: 4)

            try line("Streak", heading, spaceBefore: 18)
            if let streak = numbers.streak {
                try line("Current streak: \(counted(streak.currentDays, "day")), best \(counted(streak.bestDays, "day"))", body, spaceBefore: 4)
                try line("Last studied: \(streak.lastStudyDate ?? "never")", body)
            } else {
                try line("Streak: scheduler unavailable", body, spaceBefore: 4)
            }

            try line("Mastery per set", heading, spaceBefore: 18)
            if rows.sets.isEmpty { try line("No sets.", body, spaceBefore: 4) }
            for (index, set) in rows.sets.enumerated() {
                let figures: String
                if let stats = numbers.sets[set.id] {
                    let accuracy = stats.accuracy.map { "accuracy \(whole($0 * 100))%" } ?? "no reviews yet"
                    let mastery = stats.mastery
                    figures = "\(counted(stats.cards, "card")), \(counted(stats.reviews, "review")), \(accuracy); learning \(mastery.learning), developing \(mastery.developing), proficient \(mastery.proficient), mastered \(mastery.mastered)"
                } else {
                    figures = "scheduler unavailable"
                }
                try line("\(isolated(set.name)): \(figures)", body, spaceBefore: index == 0 ? 4 : 2)
            }

            try line("Sessions", heading, spaceBefore: 18)
            try line(
                "\(counted(rows.sessions.count, "session")), \(whole(rows.totalMinutes)) minutes, \(counted(rows.totalCardsReviewed, "card")) reviewed", body, spaceBefore: 4)
            for session in rows.sessions {
                let minutes = session.minutes.map { "\(whole($0)) min" } ?? "going on"
                try line("\(dates.string(from: session.startedAt)) · \(session.label.map(isolated) ?? "no set") · \(minutes) · \(counted(session.cardsReviewed, "card"))", body, spaceBefore: 2)
            }
            return try canvas.finish()
        }
    }
}
