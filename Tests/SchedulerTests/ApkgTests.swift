import Bus
import Contracts
import Foundation
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

/// Anki packages both ways, checked by Anki's own backend (anki_apkg.py, the `anki` package):
/// the store and the scheduler run for real on a real broker; reviews are dated by the real
/// clock, as Anki dates the reviews it makes.
@Suite("Anki packages (.apkg) with review state")
struct ApkgTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "anki_apkg.py").path

    /// The notes Anki reads from `package`.
    static func ankiReads(_ package: Data) async throws -> [[String: JSONValue]] {
        let file = try temporaryDirectory().appending(path: "deck.apkg")
        try package.write(to: file)
        let output = try JSONValue.parse(try await runPython([script, "read", file.path]))
        let notes = try #require(output.objectValue?["notes"]?.arrayValue)
        return notes.compactMap(\.objectValue)
    }

    static func utcDay(_ date: Date) -> String { String(ISO8601.format(date).prefix(10)) }

    static func day(_ text: String, plus days: Int) -> String {
        utcDay(instant(text + "T12:00:00Z").addingTimeInterval(Double(days) * 86_400))
    }

    @Test("an export as apkg imported by Anki: the same cards, tags and deck; each card's due day ours (±1), reps, lapses and reviews equal")
    func ankiImportsTheExport() async throws {
        let now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        try await withWorld(SchedulerWorld.start(at: now.addingTimeInterval(-20 * 86_400))) { world in
            try await withWorld(RunningStore.start(world)) { store in
                let set = try await RunningStore.call(world, Store.createSet, FlashcardSetCreate(name: "Biology"))
                let contents: [(String, String, [String])] = [
                    ("Mitochondria", "the cell's <power> & \"plant\"\nsecond line", ["cells", "two words"]), ("Never reviewed", "new", []),
                    ("Forgotten once", "lapse", ["hard"]), ("Learnt well", "easy", []),
                ]
                var cards: [Flashcard] = []
                for (front, back, tags) in contents {
                    cards.append(try await RunningStore.call(world, Store.createFlashcard, FlashcardCreate(front: front, back: back, tags: tags, setId: set.id)))
                }
                for card in cards { try await eventually("review state of \(card.front)") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id))) != nil } }
                // Reviews over the 20 days before now, on the world's clock.
                let plans: [[ReviewRating]] = [[.good, .good, .good], [], [.good, .good, .again, .good], [.easy, .easy]]
                for (card, ratings) in zip(cards, plans) {
                    for (index, rating) in ratings.enumerated() {
                        world.clock.set(now.addingTimeInterval(Double(-20 + 5 * index) * 86_400))
                        _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: card.id, rating: rating, durationSeconds: 4.5))
                    }
                }
                world.clock.set(now)
                let states = try await cards.asyncMap { try await world.call(Scheduler.cardState, ReviewCardID(cardId: $0.id)) }

                let (result, attachment) = try await world.client.callWithAttachment(
                    Store.export, ExportRequest(content: .flashcards, format: .apkg, setId: set.id), options: CallOptions(user: "u1"))
                #expect(result.contentType == "application/zip" && result.inAttachment && result.itemCount == 4 && result.fileName == "flashcards.apkg")
                let package = try #require(attachment)
                #expect(package.count == result.byteCount)

                let notes = try await Self.ankiReads(package)
                try #require(notes.count == cards.count)
                for ((note, card), (state, ratings)) in zip(zip(notes, cards), zip(states, plans)) {
                    #expect(note["fields"] == .array([.string(card.front), .string(card.back)]))
                    #expect(note["tags"] == .array(card.tags.map { .string($0.replacingOccurrences(of: " ", with: "_")) }.sorted { $0.stringValue! < $1.stringValue! }))
                    #expect(note["deck"] == .string("Biology"))
                    #expect(note["reps"] == .int(Int64(state.reviewCount)) && note["lapses"] == .int(Int64(state.lapses)))
                    #expect(note["revlog"] == .int(Int64(ratings.count)))
                    if ratings.isEmpty {
                        #expect(note["queue"] == .int(0) && note["type"] == .int(0))
                        continue
                    }
                    #expect(note["queue"] == .int(2) && note["type"] == .int(2))
                    // Anki keeps a review card's due as a day, starting at its 4 am rollover: our due
                    // instant before 4 am UTC falls in Anki's day before the calendar day, so the day
                    // Anki shows may be one before ours.
                    let ours = Self.utcDay(state.dueAt)
                    let anki = try #require(note["due"]?.stringValue)
                    #expect(anki == ours || anki == Self.day(ours, plus: -1), "\(card.front): Anki \(anki), ours \(ours)")
                }
                // Forgotten once: reviewed four times, one lapse.
                #expect(states[2].lapses == 1 && states[2].reviewCount == 4)
                #expect(await world.failure(Store.export, ExportRequest(content: .studySessions, format: .apkg))?.code == .invalidArgument)
            }
        }
    }

    @Test("FSRS cards in an apkg: one in a learning step is Anki's learning card due that minute, one in review a review card due on our day (±1)")
    func fsrsExport() async throws {
        let now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        try await withWorld(SchedulerWorld.start(at: now)) { world in
            try await world.settings(SettingsUpdate(algorithm: .fsrs, fuzzing: false))
            try await withWorld(RunningStore.start(world)) { store in
                let learning = try await RunningStore.call(world, Store.createFlashcard, FlashcardCreate(front: "Step", back: "10 minutes"))
                let review = try await RunningStore.call(world, Store.createFlashcard, FlashcardCreate(front: "Easy", back: "days"))
                for card in [learning, review] {
                    try await eventually("review state of \(card.front)") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id))) != nil }
                }
                _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: learning.id, rating: .good))
                _ = try await world.call(Scheduler.recordReview, ReviewRecordRequest(cardId: review.id, rating: .easy))
                let states = [try await world.call(Scheduler.cardState, ReviewCardID(cardId: learning.id)),
                              try await world.call(Scheduler.cardState, ReviewCardID(cardId: review.id))]
                try #require(states[0].fsrs.phase == .learning && states[1].fsrs.phase == .review)

                let (_, attachment) = try await world.client.callWithAttachment(
                    Store.export, ExportRequest(content: .flashcards, format: .apkg), options: CallOptions(user: "u1"))
                let notes = try await Self.ankiReads(try #require(attachment))
                try #require(notes.count == 2)
                #expect(notes[0]["type"] == .int(1) && notes[0]["queue"] == .int(1) && notes[0]["due"] == .string(Self.utcDay(states[0].dueAt)))
                #expect(notes[1]["type"] == .int(2) && notes[1]["queue"] == .int(2) && notes[1]["reps"] == .int(1) && notes[1]["revlog"] == .int(1))
                let ours = Self.utcDay(states[1].dueAt), anki = try #require(notes[1]["due"]?.stringValue)
                #expect(anki == ours || anki == Self.day(ours, plus: -1), "Anki \(anki), ours \(ours)")
            }
        }
    }

    @Test("a deck Anki made and reviewed, imported: the same cards; reviews replayed, nothing due now that Anki would not show; a retry writes nothing twice")
    func importsAnkisPackage() async throws {
        let file = try temporaryDirectory().appending(path: "anki.apkg")
        _ = try await runPython([Self.script, "make", file.path])
        let package = try Data(contentsOf: file)
        let anki = try await Self.ankiReads(package)
        try await withWorld(SchedulerWorld.start(at: Date())) { world in
            try await withWorld(RunningStore.start(world)) { store in

                let result = try await world.client.call(
                    Store.importApkg, ApkgImportRequest(fileName: "anki.apkg"), options: CallOptions(user: "u1", attachment: package))
                #expect(result.notes == 5 && result.created == 5 && result.alreadyImported == 0 && result.skipped == 0 && result.reviews == 4)
                let setId = try #require(result.setIds.first)
                #expect(try await RunningStore.call(world, Store.getSet, RecordID(id: setId)).name == "Anki deck")
                let cards = try await RunningStore.call(world, Store.listFlashcards, FlashcardList(setId: setId)).items
                #expect(cards.map { [$0.front, $0.back] } == [
                    ["Good once", "bold & more"], ["Easy once", "line\nbreak"], ["Good twice", "two\ndivs"], ["New one", "never seen"], ["New two <3", "heard"],
                ])
                #expect(cards.map(\.tags) == [["reviewed"], ["easy", "reviewed"], [], ["new"], []])

                // Every card has review state (the reviewed ones from review.import, the others from
                // flashcard.created); reviews as many as Anki's.
                for (card, note) in zip(cards, anki) {
                    try await eventually("review state of \(card.front)") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id))) != nil }
                    #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id)).reviewCount == Int(note["reps"]?.intValue ?? -1))
                }
                let shownByAnki = Set(zip(cards, anki).filter { $0.1["shownNow"] == .bool(true) }.map(\.0.id))
                let dueNow = try await world.call(Scheduler.dueCards, DueRequest(limit: 100)).cards.map(\.cardId)
                #expect(!dueNow.isEmpty && Set(dueNow).isSubset(of: shownByAnki), "due now \(dueNow), Anki shows \(shownByAnki)")

                // Again: nothing new, nothing replayed twice.
                let again = try await world.client.call(
                    Store.importApkg, ApkgImportRequest(fileName: "anki.apkg"), options: CallOptions(user: "u1", attachment: package))
                #expect(again.created == 0 && again.alreadyImported == 5 && again.setIds == [setId])
                #expect(try await RunningStore.call(world, Store.listFlashcards, FlashcardList(setId: setId)).items.count == 5)
                for (card, note) in zip(cards, anki) {
                    #expect(try await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id)).reviewCount == Int(note["reps"]?.intValue ?? -1))
                }
            }
        }
    }

    @Test("the scheduler down during an import: the call fails, the flashcards are kept; sending the package again finishes it")
    func retryAfterSchedulerFailure() async throws {
        let file = try temporaryDirectory().appending(path: "anki.apkg")
        _ = try await runPython([Self.script, "make", file.path])
        let package = try Data(contentsOf: file)
        try await withWorld(SchedulerWorld.start(at: Date())) { world in
            try await withWorld(RunningStore.start(world)) { store in
                await world.stopScheduler()
                let options = CallOptions(user: "u1", timeout: .seconds(3), attachment: package)
                do throws(BusError) {
                    _ = try await world.client.call(Store.importApkg, ApkgImportRequest(), options: options)
                    Issue.record("the import succeeded without the scheduler")
                } catch {
                    #expect(error.code == .deadlineExceeded || error.code == .unavailable, "\(error)")
                }
                try await eventually("the store's part committed") {
                    (try? await RunningStore.call(world, Store.listFlashcards, FlashcardList()))?.items.count == 5
                }
                try await world.startScheduler()
                let retry = try await world.client.call(Store.importApkg, ApkgImportRequest(), options: CallOptions(user: "u1", attachment: package))
                #expect(retry.created == 0 && retry.alreadyImported == 5 && retry.reviews == 4)
                let cards = try await RunningStore.call(world, Store.listFlashcards, FlashcardList()).items
                #expect(cards.count == 5)
                var reviews: [Int] = []
                for card in cards {
                    try await eventually("review state of \(card.front)") { (try? await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id))) != nil }
                    reviews.append(try await world.call(Scheduler.cardState, ReviewCardID(cardId: card.id)).reviewCount)
                }
                #expect(reviews == [1, 1, 2, 0, 0])
            }
        }
    }

    @Test("a package in current Anki's format (zstd) is refused with how to export it instead")
    func currentFormatRefused() async throws {
        let file = try temporaryDirectory().appending(path: "current.apkg")
        _ = try await runPython([Self.script, "make", file.path, "current"])
        try await withWorld(SchedulerWorld.start(at: Date())) { world in
            try await withWorld(RunningStore.start(world)) { store in
                var error: BusError?
                do {
                    _ = try await world.client.call(Store.importApkg, ApkgImportRequest(fileName: "current.apkg"),
                                                    options: CallOptions(user: "u1", attachment: try Data(contentsOf: file)))
                } catch let failure as BusError {
                    error = failure
                }
                #expect(error?.code == .invalidArgument && error?.message.contains("Support older Anki versions") == true, "\(String(describing: error))")
                #expect(try await RunningStore.call(world, Store.listFlashcards, FlashcardList()).items.isEmpty)
            }
        }
    }

    @Test("review.import and review.history: services only; a review in the future, out of order or too many refused whole; a replay is deterministic and not repeated")
    func reviewImportChecks() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            let now = world.clock.now()
            var asUser = CallOptions(user: "u1")
            asUser.claimedCaller = try BusIdentity(role: .user, name: "u1")
            let history = ReviewHistoryRequest(cardIds: ["c1"])
            await #expect(throws: BusError.self) { try await world.client.call(Scheduler.reviewHistory, history, options: asUser) }
            do throws(BusError) {
                _ = try await world.client.call(Scheduler.importReviews, ReviewImportRequest(cards: [ReviewImportCard(cardId: "c1", reviews: [])]), options: asUser)
                Issue.record("a user's caller imported reviews")
            } catch {
                #expect(error.code == .permissionDenied)
            }

            let good = ReviewImportEntry(rating: .good, reviewedAt: now.addingTimeInterval(-10 * 86_400), durationSeconds: 3)
            let future = ReviewImportEntry(rating: .good, reviewedAt: now.addingTimeInterval(3600))
            let earlier = ReviewImportEntry(rating: .good, reviewedAt: now.addingTimeInterval(-20 * 86_400))
            for reviews in [[good, future], [good, earlier]] {
                let request = ReviewImportRequest(cards: [ReviewImportCard(cardId: "c0", reviews: []), ReviewImportCard(cardId: "c1", reviews: reviews)])
                #expect(await world.failure(Scheduler.importReviews, request)?.code == .invalidArgument)
            }
            let tooMany = ReviewImportRequest(cards: [ReviewImportCard(cardId: "c1", reviews: Array(repeating: good, count: SchedulerLimits.reviewsPerCall + 1))])
            #expect(await world.failure(Scheduler.importReviews, tooMany)?.code == .invalidArgument)
            // Nothing of the refused requests was written, not even the card without reviews.
            #expect(await world.failure(Scheduler.cardState, ReviewCardID(cardId: "c0"))?.code == .notFound)

            let reviews = [good, ReviewImportEntry(rating: .good, reviewedAt: now.addingTimeInterval(-9 * 86_400))]
            let request = ReviewImportRequest(cards: [ReviewImportCard(cardId: "c1", reviews: reviews)])
            #expect(try await world.call(Scheduler.importReviews, request) == ReviewImportResponse(replayed: 1, alreadyReviewed: 0))
            #expect(try await world.call(Scheduler.importReviews, request) == ReviewImportResponse(replayed: 0, alreadyReviewed: 1))
            let state = try await world.call(Scheduler.cardState, ReviewCardID(cardId: "c1"))
            // SM-2: good, good → 1 day, then 6 days from the second review.
            #expect(state.reviewCount == 2 && state.dueAt == reviews[1].reviewedAt.addingTimeInterval(6 * 86_400))
            let log = try #require(try await world.call(Scheduler.reviewHistory, ReviewHistoryRequest(cardIds: ["c1", "unknown"])).cards.first)
            #expect(log.reviews.map(\.rating) == [.good, .good] && log.reviews.map(\.reviewedAt) == reviews.map(\.reviewedAt))
            #expect(log.reviews.map(\.intervalDays) == [1, 6] && log.reviews.map(\.previousIntervalDays) == [0, 1])
            #expect(log.reviews.map(\.phase) == [.learning, .review] && log.reviews.first?.durationSeconds == 3)
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
