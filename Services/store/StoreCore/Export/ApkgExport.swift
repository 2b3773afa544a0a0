import Bus
import Contracts
import Crypto
import Foundation
import GRDB
import ServiceKit
import Wire
import ZIPFoundation

/// `export` with format `apkg`: the cards with their review state and log (the scheduler's
/// `review.history`) as an Anki package, so a user moving to Anki keeps their schedule.
enum ApkgExport {
    static func run(_ request: ExportRequest, _ store: StoreService, _ context: RequestContext) async throws -> (ExportResult, Data?) {
        guard request.content == .flashcards else {
            throw BusError.invalidArgument("field 'format': apkg exports flashcards only; study sessions export as json or csv")
        }
        let (cards, deck) = try await store.read(context) { db, user in
            let changes = Changes(db: db, user: user, now: Date())
            return (try ExportMethods.flashcards(request, changes), try ExportMethods.deckName(request, changes))
        }
        let maximum = store.apkgLimits.exportCards
        guard cards.count <= maximum else {
            throw BusError.resourceExhausted("an apkg export holds at most \(maximum) cards (STORE_APKG_EXPORT_MAX_CARDS); export one set at a time")
        }
        var histories: [String: CardHistory] = [:]
        var start = 0
        while start < cards.count {
            let batch = cards[start..<min(start + SchedulerLimits.cardsPerCall, cards.count)]
            let response = try await context.bus.call(
                Scheduler.reviewHistory, ReviewHistoryRequest(cardIds: batch.map(\.id)), options: context.downstreamOptions(timeout: .seconds(30)))
            for history in response.cards { histories[history.card.id] = history }
            start += batch.count
        }
        let data = try AnkiPackageWriter.package(cards: cards, histories: histories, deck: deck, now: store.clock.now())
        let result = ExportResult(format: .apkg, contentType: "application/zip", fileName: "flashcards.apkg", itemCount: cards.count,
                                  byteCount: data.count, content: nil, inAttachment: true)
        return (result, data)
    }
}

/// Writes Anki's legacy collection (schema 11, which current Anki still imports) and zips it
/// with an empty media map. One Basic note and one card per flashcard, in one deck.
enum AnkiPackageWriter {
    static let dayMs: Int64 = 86_400_000
    /// Anki's day starts at 4 am (its default rollover); the collection's days are counted in UTC.
    static let rolloverMs: Int64 = 4 * 3_600_000
    /// The note type's id (Anki matches an existing note type by id and fields on import).
    static let modelId: Int64 = 1_700_000_000_000

    static func package(cards: [Flashcard], histories: [String: CardHistory], deck: String, now: Date) throws -> Data {
        let folder = FileManager.default.temporaryDirectory.appending(path: "studybus-apkg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let collection = folder.appending(path: "collection.anki2")
        let queue = try DatabaseQueue(path: collection.path)
        try queue.write { db in try write(cards: cards, histories: histories, deck: deck, nowMs: now.unixMilliseconds, db) }
        try queue.close()
        let zip = folder.appending(path: "package.apkg")
        let archive = try Archive(url: zip, accessMode: .create)
        try archive.addEntry(with: "collection.anki2", fileURL: collection, compressionMethod: .deflate)
        let media = Data("{}".utf8)
        try archive.addEntry(with: "media", type: .file, uncompressedSize: Int64(media.count), compressionMethod: .none) { position, size in
            media.subdata(in: Int(position)..<(Int(position) + size))
        }
        return try Data(contentsOf: zip)
    }

    private static func write(cards: [Flashcard], histories: [String: CardHistory], deck: String, nowMs: Int64, _ db: Database) throws {
        try db.execute(sql: schema)
        // The collection was "created" at the start of today's Anki day: a review card's due day
        // is counted from it, and Anki moves it onto the importing collection's days.
        let crtMs = (nowMs - rolloverMs).floorDiv(dayMs) * dayMs + rolloverMs
        let deckId = nowMs
        try db.execute(sql: "INSERT INTO col VALUES (1, ?, ?, ?, 11, 0, 0, 0, ?, ?, ?, ?, '{}')", arguments: [
            crtMs / 1000, nowMs, nowMs, configuration(deckId: deckId, nextPosition: cards.count + 1), model(), decks(deckId: deckId, name: deck),
            deckOptions,
        ])
        var noteId = nowMs - Int64(cards.count) - 1
        var revlogIds = Set<Int64>()
        for (position, card) in cards.enumerated() {
            noteId += 1
            let front = html(card.front), back = html(card.back)
            let tags = card.tags.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: "_") }
            try db.execute(sql: "INSERT INTO notes VALUES (?, ?, ?, ?, -1, ?, ?, ?, ?, 0, '')", arguments: [
                noteId, card.id, modelId, card.updatedAt.unixMilliseconds / 1000, tags.isEmpty ? "" : " \(tags.joined(separator: " ")) ",
                front + "\u{1f}" + back, card.front, checksum(card.front),
            ])
            let state = AnkiCardState(histories[card.id]?.card, position: position + 1, crtMs: crtMs)
            try db.execute(sql: "INSERT INTO cards VALUES (?, ?, ?, 0, ?, -1, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, '')", arguments: [
                noteId, noteId, deckId, card.updatedAt.unixMilliseconds / 1000, state.type, state.queue, state.due, state.interval, state.factor,
                state.reps, state.lapses, state.left,
            ])
            for review in histories[card.id]?.reviews ?? [] {
                // revlog's id is the review's time in ms and must be unique across cards.
                var id = review.reviewedAt.unixMilliseconds
                while !revlogIds.insert(id).inserted { id += 1 }
                try db.execute(sql: "INSERT INTO revlog VALUES (?, ?, -1, ?, ?, ?, ?, ?, ?)", arguments: [
                    id, noteId, ease(review.rating), revlogInterval(review.intervalDays), revlogInterval(review.previousIntervalDays),
                    permille(review.easeFactor), Int64(clamping: (review.durationSeconds ?? 0) * 1000, to: 0...3_600_000),
                    review.phase == .learning ? 0 : review.phase == .review ? 1 : 2,
                ])
            }
        }
    }

    /// Anki's button: again 1, hard 2, good 3, easy 4.
    static func ease(_ rating: ReviewRating) -> Int {
        switch rating {
        case .again: 1
        case .hard: 2
        case .good: 3
        case .easy: 4
        }
    }

    /// revlog's interval: whole days when at least one, else negative seconds.
    static func revlogInterval(_ days: Double) -> Int64 {
        days >= 1 ? Int64(clamping: days.rounded(), to: 1...36_500) : -Int64(clamping: (days * 86_400).rounded(), to: 0...86_400)
    }

    /// An ease factor as Anki keeps it, in permille.
    static func permille(_ ease: Double) -> Int64 { Int64(clamping: (ease * 1000).rounded(), to: 1300...100_000) }

    /// A field as Anki stores it: HTML, a line break as `<br>`, no field separator.
    static func html(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\n", "\r\n": out += "<br>"
            // Anki separates a note's fields with U+001F.
            case "\u{1f}": out += " "
            default: out.append(character)
            }
        }
        return out
    }

    /// `notes.csum`: the first 8 hex digits of the sort field's SHA-1, as an integer.
    static func checksum(_ field: String) -> Int64 {
        Insecure.SHA1.hash(data: Data(field.utf8)).prefix(4).reduce(0) { $0 << 8 | Int64($1) }
    }

    private static func configuration(deckId: Int64, nextPosition: Int) -> String {
        """
        {"nextPos":\(nextPosition),"schedVer":2,"sched2021":true,"curDeck":\(deckId),"activeDecks":[\(deckId)],"curModel":\(modelId),\
        "newSpread":0,"collapseTime":1200,"timeLim":0,"estTimes":true,"dueCounts":true,"sortType":"noteFld","sortBackwards":false,"addToCur":true}
        """
    }

    private static func model() -> String {
        let css = ".card {\n font-family: arial;\n font-size: 20px;\n text-align: center;\n color: black;\n background-color: white;\n}\n"
        func field(_ name: String, _ ord: Int) -> JSONValue {
            .object(["name": .string(name), "ord": .int(Int64(ord)), "sticky": .bool(false), "rtl": .bool(false), "font": .string("Arial"),
                     "size": .int(20), "media": .array([])])
        }
        let template: JSONValue = .object([
            "name": .string("Card 1"), "ord": .int(0), "qfmt": .string("{{Front}}"), "afmt": .string("{{FrontSide}}\n\n<hr id=answer>\n\n{{Back}}"),
            "bqfmt": .string(""), "bafmt": .string(""), "did": .null,
        ])
        let model: JSONValue = .object([
            "id": .int(modelId), "name": .string("Basic (StudyBus)"), "type": .int(0), "mod": .int(0), "usn": .int(0),
            "sortf": .int(0), "did": .null, "tmpls": .array([template]), "flds": .array([field("Front", 0), field("Back", 1)]),
            "css": .string(css), "latexPre": .string("\\documentclass[12pt]{article}\n\\special{papersize=3in,5in}\n\\usepackage[utf8]{inputenc}\n\\usepackage{amssymb,amsmath}\n\\pagestyle{empty}\n\\setlength{\\parindent}{0in}\n\\begin{document}\n"),
            "latexPost": .string("\\end{document}"), "req": .array([.array([.int(0), .string("any"), .array([.int(0)])])]), "tags": .array([]),
            "vers": .array([]),
        ])
        return JSONValue.object(["\(modelId)": model]).jsonText
    }

    private static func decks(deckId: Int64, name: String) -> String {
        func deck(_ id: Int64, _ name: String) -> JSONValue {
            .object([
                "id": .int(id), "name": .string(name), "mod": .int(0), "usn": .int(0), "lrnToday": .array([.int(0), .int(0)]),
                "revToday": .array([.int(0), .int(0)]), "newToday": .array([.int(0), .int(0)]),
                "timeToday": .array([.int(0), .int(0)]), "collapsed": .bool(false), "browserCollapsed": .bool(false), "desc": .string(""),
                "dyn": .int(0), "conf": .int(1), "extendNew": .int(0), "extendRev": .int(0),
            ])
        }
        return JSONValue.object(["1": deck(1, "Default"), "\(deckId)": deck(deckId, name)]).jsonText
    }

    /// Anki's default deck options.
    private static let deckOptions = """
        {"1":{"id":1,"mod":0,"name":"Default","usn":0,"maxTaken":60,"autoplay":true,"timer":0,"replayq":true,"dyn":false,\
        "new":{"bury":false,"delays":[1.0,10.0],"initialFactor":2500,"ints":[1,4,0],"order":1,"perDay":20},\
        "rev":{"bury":false,"ease4":1.3,"ivlFct":1.0,"maxIvl":36500,"perDay":200,"hardFactor":1.2},\
        "lapse":{"delays":[10.0],"leechAction":1,"leechFails":8,"minInt":1,"mult":0.0}}}
        """

    private static let schema = """
        CREATE TABLE col (id integer PRIMARY KEY, crt integer NOT NULL, mod integer NOT NULL, scm integer NOT NULL, ver integer NOT NULL,
            dty integer NOT NULL, usn integer NOT NULL, ls integer NOT NULL, conf text NOT NULL, models text NOT NULL, decks text NOT NULL,
            dconf text NOT NULL, tags text NOT NULL);
        CREATE TABLE notes (id integer PRIMARY KEY, guid text NOT NULL, mid integer NOT NULL, mod integer NOT NULL, usn integer NOT NULL,
            tags text NOT NULL, flds text NOT NULL, sfld integer NOT NULL, csum integer NOT NULL, flags integer NOT NULL, data text NOT NULL);
        CREATE TABLE cards (id integer PRIMARY KEY, nid integer NOT NULL, did integer NOT NULL, ord integer NOT NULL, mod integer NOT NULL,
            usn integer NOT NULL, type integer NOT NULL, queue integer NOT NULL, due integer NOT NULL, ivl integer NOT NULL,
            factor integer NOT NULL, reps integer NOT NULL, lapses integer NOT NULL, left integer NOT NULL, odue integer NOT NULL,
            odid integer NOT NULL, flags integer NOT NULL, data text NOT NULL);
        CREATE TABLE revlog (id integer PRIMARY KEY, cid integer NOT NULL, usn integer NOT NULL, ease integer NOT NULL, ivl integer NOT NULL,
            lastIvl integer NOT NULL, factor integer NOT NULL, time integer NOT NULL, type integer NOT NULL);
        CREATE TABLE graves (usn integer NOT NULL, oid integer NOT NULL, type integer NOT NULL);
        CREATE INDEX ix_notes_usn ON notes (usn);
        CREATE INDEX ix_cards_usn ON cards (usn);
        CREATE INDEX ix_revlog_usn ON revlog (usn);
        CREATE INDEX ix_cards_nid ON cards (nid);
        CREATE INDEX ix_cards_sched ON cards (did, queue, due);
        CREATE INDEX ix_revlog_cid ON revlog (cid);
        CREATE INDEX ix_notes_csum ON notes (csum);
        """
}

/// A card's scheduling in Anki's fields, from our state under the card's active algorithm.
///
/// A card never reviewed is new (type 0, queue 0, due = its position). A card FSRS still has in
/// a learning or relearning step is learning (type 1) or relearning (type 3): queue 1 with due
/// in epoch seconds while the step is shorter than a day, else queue 3 with a day number.
/// Every other reviewed card is a review card (type 2, queue 2) due on the Anki day (counted
/// from the collection's `crt`) its due instant falls in, with its interval in days and its
/// SM-2 ease factor (kept for every card) in permille.
struct AnkiCardState {
    var type = 0, queue = 0
    var due: Int64
    var interval: Int64 = 0, factor: Int64 = 0
    var reps = 0, lapses = 0, left = 0

    init(_ state: CardState?, position: Int, crtMs: Int64) {
        due = Int64(position)
        guard let state, state.reviewCount > 0 else { return }
        reps = state.reviewCount
        lapses = state.lapses
        factor = AnkiPackageWriter.permille(state.sm2.easeFactor)
        let dueMs = state.dueAt.unixMilliseconds
        let dayNumber = (dueMs - crtMs).floorDiv(AnkiPackageWriter.dayMs)
        let lastMs = state.lastReviewedAt?.unixMilliseconds ?? dueMs
        if state.algorithm == .fsrs, state.fsrs.phase != .review {
            type = state.fsrs.phase == .learning ? 1 : 3
            interval = state.fsrs.phase == .relearning ? 1 : 0
            left = 1
            if dueMs - lastMs < AnkiPackageWriter.dayMs {
                queue = 1
                due = dueMs.floorDiv(1000)
            } else {
                queue = 3
                due = dayNumber
            }
            return
        }
        type = 2
        queue = 2
        due = dayNumber
        let days = state.algorithm == .sm2 ? Double(state.sm2.intervalDays) : Double(dueMs - lastMs) / Double(AnkiPackageWriter.dayMs)
        interval = Int64(clamping: days.rounded(), to: 1...36_500)
    }
}

extension Int64 {
    /// Division rounding towards minus infinity (a day number before `crt` is negative).
    func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    /// `value` within `range`; NaN becomes the range's lower bound. Swift traps on `Int64(x)`
    /// for a double out of range.
    init(clamping value: Double, to range: ClosedRange<Int64>) {
        guard value.isFinite else {
            self = value == .infinity ? range.upperBound : range.lowerBound
            return
        }
        self = value <= Double(range.lowerBound) ? range.lowerBound : value >= Double(range.upperBound) ? range.upperBound : Int64(value)
    }
}
