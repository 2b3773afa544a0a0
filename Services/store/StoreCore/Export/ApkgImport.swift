import Bus
import Contracts
import Crypto
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire
import ZIPFoundation
import ZipEntries

/// `flashcards.importApkg`: an Anki package's notes become flashcards (first field the front,
/// second the back, HTML stripped to text, tags kept), its decks sets, and each note's first
/// card's review history is replayed by the scheduler (`review.import`) through our algorithms.
///
/// The store's part is one transaction; the scheduler's one more per batch of cards. Ids are
/// derived from the user and Anki's note guid (a set's from its deck name), so importing the
/// same package again writes no second copy, and the scheduler leaves a card that has reviews
/// already alone: when the scheduler call fails after the store committed, sending the package
/// again finishes the import and changes nothing else.
enum ApkgImport {
    static func run(_ request: ApkgImportRequest, _ store: StoreService, _ context: RequestContext) async throws -> ApkgImportResult {
        let user = try context.requireUser()
        let fileName = try Field.optionalText(request.fileName, "fileName", maximum: StoreLimits.fileNameLength) ?? "the package"
        guard let data = context.attachment, !data.isEmpty else {
            throw BusError.invalidArgument("send the .apkg file in the request's attachment frame")
        }
        let package = try AnkiPackageReader(limits: store.apkgLimits, fileName: fileName, now: store.clock.now()).read(data)

        let now = store.clock.now()
        let (result, schedule) = try await store.database.pool.write { db in
            try write(package, Changes(db: db, user: user, now: now))
        }
        store.outbox.notifyCommitted()
        store.indexer.wake()

        // Batches within the scheduler's bounds per call (one card's reviews fit one call); the
        // trailing nil sends the last batch.
        var batch: [ReviewImportCard] = [], reviews = 0
        for card in schedule + [nil] {
            if let card, batch.count < SchedulerLimits.cardsPerCall, reviews + card.reviews.count <= SchedulerLimits.reviewsPerCall {
                batch.append(card)
                reviews += card.reviews.count
                continue
            }
            if !batch.isEmpty {
                do {
                    _ = try await context.bus.call(Scheduler.importReviews, ReviewImportRequest(cards: batch),
                                                   options: context.downstreamOptions(timeout: .seconds(30)))
                } catch {
                    throw BusError(error.code, """
                        the flashcards of \(fileName) were imported but the scheduler did not take their review history \
                        (\(error.message)); send the same package again to finish: nothing is imported twice
                        """)
                }
            }
            batch = card.map { [$0] } ?? []
            reviews = card?.reviews.count ?? 0
        }
        return result
    }

    /// Writes the sets and flashcards not written before; returns the result and the cards with
    /// reviews for the scheduler, each in its set as stored.
    private static func write(_ package: AnkiPackage, _ changes: Changes) throws -> (ApkgImportResult, [ReviewImportCard]) {
        var setIds: [Int64: String] = [:]
        var orderedSetIds: [String] = [], seenSetIds = Set<String>()
        var created = 0, already = 0, skipped = 0, reviews = 0
        var schedule: [ReviewImportCard] = []
        for note in package.notes {
            guard !note.front.isEmpty else {
                skipped += 1
                continue
            }
            let setId: String
            if let known = setIds[note.deckId] {
                setId = known
            } else {
                let name = package.deckNames[note.deckId] ?? "Anki"
                setId = derivedID(changes.user, "anki-deck", name)
                if try changes.find(FlashcardSet.self, setId) == nil {
                    try changes.insert(FlashcardSet(id: setId, userId: changes.user, name: name, createdAt: changes.now, updatedAt: changes.now))
                }
                setIds[note.deckId] = setId
                // Two decks of one name are one set.
                if seenSetIds.insert(setId).inserted { orderedSetIds.append(setId) }
            }
            let cardId = derivedID(changes.user, "anki-note", note.guid)
            let card: Flashcard
            if let existing = try changes.find(Flashcard.self, cardId) {
                card = existing
                already += 1
            } else {
                card = Flashcard(id: cardId, userId: changes.user, front: note.front, back: note.back, tags: note.tags, setId: setId,
                                 createdAt: changes.now, updatedAt: changes.now)
                try changes.insert(card)
                created += 1
            }
            if !note.reviews.isEmpty {
                schedule.append(ReviewImportCard(cardId: card.id, setId: card.setId, subjectId: card.subjectId, reviews: note.reviews))
                reviews += note.reviews.count
            }
        }
        let result = ApkgImportResult(setIds: orderedSetIds, notes: package.notes.count, created: created, alreadyImported: already,
                                      skipped: skipped, reviews: reviews)
        return (result, schedule)
    }

    /// A store id made from `key`: the same for the same user and key, a UUID in form (version 8).
    static func derivedID(_ user: String, _ kind: String, _ key: String) -> String {
        var bytes = Array(SHA256.hash(data: Data("\(user)\u{0}\(kind)\u{0}\(key)".utf8)).prefix(16))
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }
}

/// A package's content, checked.
struct AnkiPackage {
    struct Note {
        var guid: String
        var front: String
        var back: String
        var tags: [String]
        var deckId: Int64
        /// The note's first card's reviews, oldest first.
        var reviews: [ReviewImportEntry]
    }

    var notes: [Note]
    var deckNames: [Int64: String]
}

/// Reads an `.apkg` as hostile input: the zip's entry count and declared sizes are bounded, only
/// the collection entry is inflated (its name is looked up; no path from the zip is ever used on
/// disk), into a private temporary file, within the inflated limit whatever the zip declares;
/// the SQLite file is opened read-only with its schema checked (tables, not views) and every
/// value read is type- and range-checked.
struct AnkiPackageReader {
    let limits: ApkgLimits
    let fileName: String
    let now: Date

    /// Entries Anki writes: the collection as current Anki (zstd) and older Anki write it.
    static let zstdCollection = "collection.anki21b"
    static let collections = ["collection.anki21", "collection.anki2"]
    /// Longest raw field list of a note (HTML, before stripping) and deck list JSON.
    static let maximumNoteBytes = 1 << 20
    static let maximumDecksBytes = 8 << 20
    /// Reviews before this are refused as nonsense (Anki's first release was in 2006).
    static let earliestReviewMs: Int64 = 1_136_073_600_000

    func invalid(_ why: String) -> BusError { .invalidArgument("\(fileName) cannot be imported: \(why)") }

    func read(_ data: Data) throws -> AnkiPackage {
        guard data.count <= limits.packageBytes else {
            throw invalid("it has \(data.count) bytes, more than \(limits.packageBytes) (STORE_APKG_MAX_MB)")
        }
        let folder = FileManager.default.temporaryDirectory.appending(path: "studybus-apkg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let zipFile = folder.appending(path: "package.zip"), collection = folder.appending(path: "collection.sqlite")
        guard FileManager.default.createFile(atPath: zipFile.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw BusError.internal("cannot write a temporary file")
        }
        try inflateCollection(data, zipFile: zipFile, to: collection)
        return try readCollection(collection)
    }

    // MARK: The zip

    private enum Refusal: Error {
        case tooLarge
    }

    private func inflateCollection(_ data: Data, zipFile: URL, to destination: URL) throws {
        let archive: Archive
        do {
            archive = try Archive(url: zipFile, accessMode: .read)
        } catch {
            throw invalid("it is not a zip archive (an .apkg is one), or it is damaged")
        }
        var entries: [String: Entry] = [:]
        var count = 0, declared: Int64 = 0
        for entry in archive {
            count += 1
            guard count <= limits.entries else { throw invalid("its zip has more than \(limits.entries) entries (STORE_APKG_MAX_ENTRIES)") }
            declared = declared &+ Int64(clamping: entry.uncompressedSize)
            guard declared >= 0, declared <= Int64(limits.inflatedBytes) else {
                throw invalid("its entries unpack to more than \(limits.inflatedBytes >> 20) MiB (STORE_APKG_MAX_INFLATED_MB), as zip bombs do")
            }
            if entry.path == Self.zstdCollection || Self.collections.contains(entry.path) { entries[entry.path] = entry }
        }
        if entries[Self.zstdCollection] != nil {
            throw invalid("""
                it is in the format of current Anki (zstd-compressed), which StudyBus does not read; export it again in Anki \
                with "Support older Anki versions" checked
                """)
        }
        guard let name = Self.collections.first(where: { entries[$0] != nil }), let entry = entries[name] else {
            throw invalid("it holds no collection.anki2 or collection.anki21: it is not an Anki package")
        }
        guard FileManager.default.createFile(atPath: destination.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let output = try? FileHandle(forWritingTo: destination) else {
            throw BusError.internal("cannot write a temporary file")
        }
        defer { try? output.close() }
        var written = 0
        let maximum = limits.inflatedBytes
        do {
            try ZipEntryBytes.inflate(entry, path: name, in: [UInt8](data)) { chunk in
                written += chunk.count
                guard written <= maximum else { throw Refusal.tooLarge }
                try output.write(contentsOf: chunk)
            }
        } catch Refusal.tooLarge {
            throw invalid("its collection unpacks to more than \(maximum >> 20) MiB (STORE_APKG_MAX_INFLATED_MB), as zip bombs do")
        } catch {
            throw invalid("its \(name) is damaged or truncated")
        }
    }

    // MARK: The collection

    private func readCollection(_ file: URL) throws -> AnkiPackage {
        // A WAL-mode file would need a writable -shm beside it; the header says legacy instead.
        guard let handle = try? FileHandle(forUpdating: file), let header = try? handle.read(upToCount: 100), header.count == 100,
              header.prefix(16).elementsEqual(Array("SQLite format 3\u{0}".utf8)) else {
            throw invalid("its collection is not a SQLite database")
        }
        if header[18] == 2 || header[19] == 2 {
            try handle.seek(toOffset: 18)
            try handle.write(contentsOf: [1, 1])
        }
        try handle.close()
        var configuration = Configuration()
        configuration.readonly = true
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA trusted_schema = OFF") }
        do {
            let queue = try DatabaseQueue(path: file.path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in try read(db) }
        } catch let error as BusError {
            throw error
        } catch {
            throw invalid("its collection cannot be read (\(error is DatabaseError ? "the SQLite file is damaged" : "\(type(of: error))"))")
        }
    }

    private func read(_ db: Database) throws -> AnkiPackage {
        let objects = try Row.fetchAll(db, sql: "SELECT type, name FROM sqlite_master WHERE name IN ('col', 'notes', 'cards', 'revlog', 'decks')")
        var tables = Set<String>()
        for row in objects {
            // A view could make every read below run a query of the package's choosing.
            guard Self.text(row[0]) == "table", let name = Self.text(row[1]) else { throw invalid("its \(Self.text(row[1]) ?? "?") is not a table") }
            tables.insert(name)
        }
        for table in ["col", "notes", "cards", "revlog"] where !tables.contains(table) {
            throw invalid("its collection has no \(table) table: it is not an Anki collection")
        }
        let notes = try count(db, "notes"), cards = try count(db, "cards"), reviews = try count(db, "revlog")
        guard notes <= limits.notes else { throw invalid("it has \(notes) notes, more than \(limits.notes) (STORE_APKG_MAX_NOTES)") }
        guard cards <= 10 * limits.notes else { throw invalid("it has \(cards) cards, more than 10 per STORE_APKG_MAX_NOTES") }
        guard reviews <= limits.reviews else { throw invalid("it has \(reviews) reviews, more than \(limits.reviews) (STORE_APKG_MAX_REVIEWS)") }

        let deckNames = try decks(db, hasTable: tables.contains("decks"))
        // Each note's first card (lowest ord) decides its deck and its history.
        var firstCard: [Int64: (card: Int64, deck: Int64)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT nid, id, did FROM cards ORDER BY nid, ord, id") {
            guard let note = Self.int(row[0]), let card = Self.int(row[1]), let deck = Self.int(row[2]) else { throw invalid("a card's ids are not integers") }
            if firstCard[note] == nil { firstCard[note] = (card, deck) }
        }
        var history: [Int64: [ReviewImportEntry]] = [:]
        let latest = now.unixMilliseconds + 5 * 60_000
        let wanted = Set(firstCard.values.map(\.card))
        for row in try Row.fetchAll(db, sql: "SELECT id, cid, ease, time, type FROM revlog ORDER BY cid, id") {
            guard let id = Self.int(row[0]), let card = Self.int(row[1]), let ease = Self.int(row[2]), let time = Self.int(row[3]),
                  let type = Self.int(row[4]) else { throw invalid("a review's fields are not integers") }
            guard wanted.contains(card) else { continue }
            guard (0...5).contains(type) else { throw invalid("review \(id) has type \(type), not 0…5") }
            // Manual rescheduling (type 4, 5; ease 0) is not a review.
            if type >= 4 || ease == 0 { continue }
            guard (1...4).contains(ease) else { throw invalid("review \(id) has ease \(ease), not 1…4") }
            guard (Self.earliestReviewMs...latest).contains(id) else { throw invalid("review \(id) is dated outside 2006…now") }
            guard time >= 0 else { throw invalid("review \(id) took a negative time") }
            let rating: ReviewRating = [.again, .hard, .good, .easy][Int(ease) - 1]
            // One card's history must fit one scheduler call.
            guard history[card, default: []].count < SchedulerLimits.reviewsPerCall else {
                throw invalid("card \(card) has more than \(SchedulerLimits.reviewsPerCall) reviews")
            }
            history[card, default: []].append(ReviewImportEntry(
                rating: rating, reviewedAt: Date(unixMilliseconds: id), durationSeconds: Double(min(time, 3_600_000)) / 1000))
        }

        var result: [AnkiPackage.Note] = []
        result.reserveCapacity(notes)
        let rows = try Row.fetchCursor(db, sql: """
            SELECT id, guid, tags, flds, length(CAST(flds AS BLOB)), length(CAST(guid AS BLOB)), length(CAST(tags AS BLOB)) FROM notes ORDER BY id
            """)
        while let row = try rows.next() {
            guard let id = Self.int(row[0]) else { throw invalid("a note's id is not an integer") }
            guard let fieldBytes = Self.int(row[4]), fieldBytes <= Self.maximumNoteBytes, let guidBytes = Self.int(row[5]), (1...100).contains(guidBytes),
                  let tagBytes = Self.int(row[6]), tagBytes <= 10_000 else {
                throw invalid("note \(id) has fields over \(Self.maximumNoteBytes) bytes, a guid not of 1…100 bytes or tags over 10000 bytes")
            }
            guard let guid = Self.text(row[1]), let tagText = Self.text(row[2]), let fieldText = Self.text(row[3]) else {
                throw invalid("note \(id) has a guid, tags or fields that are not text")
            }
            let fields = fieldText.split(separator: "\u{1f}", omittingEmptySubsequences: false)
            let front = AnkiHTML.text(String(fields[0])), back = fields.count > 1 ? AnkiHTML.text(String(fields[1])) : ""
            for (side, value) in [("front", front), ("back", back)] where value.count > StoreLimits.cardSideLength {
                throw invalid("note \(id)'s \(side) has more than \(StoreLimits.cardSideLength) characters as text")
            }
            let tags: [String]
            do {
                tags = try Field.labels(tagText.split(whereSeparator: \.isWhitespace).map(String.init), "tags", maximum: StoreLimits.tagsPerCard)
            } catch {
                throw invalid("note \(id)'s tags: \(error.message)")
            }
            let card = firstCard[id]
            result.append(AnkiPackage.Note(guid: guid, front: front, back: back, tags: tags, deckId: card?.deck ?? 1,
                                           reviews: card.flatMap { history[$0.card] } ?? []))
        }
        return AnkiPackage(notes: result, deckNames: deckNames)
    }

    private func count(_ db: Database, _ table: String) throws -> Int {
        Int(try Int64.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0)
    }

    /// Deck names by id: schema 11 keeps them as JSON in `col.decks`, later schemas in a table
    /// with `\u{1f}` between the levels. A name is cut at the store's title length.
    private func decks(_ db: Database, hasTable: Bool) throws -> [Int64: String] {
        var names: [Int64: String] = [:]
        func add(_ id: Int64, _ name: String) {
            let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !name.isEmpty else { return }
            names[id] = String(name.unicodeScalars.prefix(StoreLimits.titleLength).map(Character.init))
        }
        if hasTable {
            for row in try Row.fetchAll(db, sql: "SELECT id, name FROM decks WHERE length(CAST(name AS BLOB)) <= 10000 LIMIT 100000") {
                if let id = Self.int(row[0]), let name = Self.text(row[1]) { add(id, name.replacingOccurrences(of: "\u{1f}", with: "::")) }
            }
            return names
        }
        guard let row = try Row.fetchOne(db, sql: "SELECT decks, length(CAST(decks AS BLOB)) FROM col LIMIT 1"),
              let size = Self.int(row[1]), size <= Self.maximumDecksBytes, let text = Self.text(row[0]) else {
            throw invalid("its collection's deck list is missing or over \(Self.maximumDecksBytes) bytes")
        }
        // Wire's parser bounds nesting (a deep document must not exhaust the stack).
        guard let decks = (try? JSONValue.parse(text))?.objectValue else { throw invalid("its collection's deck list is not a JSON object") }
        for (key, value) in decks {
            if let id = Int64(key), let name = value.objectValue?["name"]?.stringValue { add(id, name) }
        }
        return names
    }

    /// An integer column's value; nil for any other storage (GRDB traps on a failed conversion).
    static func int(_ value: DatabaseValue) -> Int64? {
        if case .int64(let number) = value.storage { return number }
        return nil
    }

    static func text(_ value: DatabaseValue) -> String? {
        if case .string(let text) = value.storage { return text }
        return nil
    }
}

/// Anki fields are HTML: the text a user sees, in one linear pass. Tags are dropped (`<br>`,
/// `<div>` and `<p>` become line breaks), `[sound:…]` references too, entities decoded.
enum AnkiHTML {
    static func text(_ html: String) -> String {
        var out = ""
        // A search for a closing character happens only before its last occurrence, so it always
        // finds one and the pass skips what it searched: linear, however many `<` lack a `>`.
        let lastClose = html.lastIndex(of: ">"), lastBracket = html.lastIndex(of: "]")
        var index = html.startIndex
        while index < html.endIndex {
            let character = html[index]
            if character == "<", let lastClose, index < lastClose, let close = html[index...].firstIndex(of: ">") {
                let tag = html[html.index(after: index)..<close].lowercased()
                let name = tag.drop(while: { $0 == "/" }).prefix(while: { $0.isLetter || $0.isNumber })
                if name == "br" || (tag.hasPrefix("/") && (name == "div" || name == "p" || name == "li")) { out.append("\n") }
                index = html.index(after: close)
            } else if character == "&", let semicolon = html[index...].prefix(12).firstIndex(of: ";"),
                      let decoded = entity(html[html.index(after: index)..<semicolon]) {
                out.append(decoded)
                index = html.index(after: semicolon)
            } else if character == "[", let lastBracket, index < lastBracket, html[index...].hasPrefix("[sound:"),
                      let close = html[index...].firstIndex(of: "]") {
                index = html.index(after: close)
            } else {
                out.append(character)
                index = html.index(after: index)
            }
        }
        return out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func entity(_ name: Substring) -> Character? {
        switch name {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos", "#39": return "'"
        case "nbsp": return " "
        default:
            let number: UInt32?
            if name.hasPrefix("#x") || name.hasPrefix("#X") {
                number = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                number = UInt32(name.dropFirst())
            } else {
                number = nil
            }
            return number.flatMap(Unicode.Scalar.init).map(Character.init)
        }
    }
}
