import Bus
import Contracts
import Foundation
import ServiceKit
import StoreCore
import TestSupport
import Testing
import Wire

/// Hostile Anki packages (apkg_hostile.py writes them byte by byte) sent to the real store
/// through the real broker: each is refused with INVALID_ARGUMENT naming why, nothing is
/// written, and the store keeps serving. No scheduler runs: every refusal comes before the store
/// would call it (the import with review history is in SchedulerTests' ApkgTests).
@Suite("flashcards.importApkg refuses hostile packages")
struct ApkgImportTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "apkg_hostile.py").path

    static func package(_ kind: String) async throws -> Data { try await runPython([script, kind]) }

    /// Sends `package`, expects INVALID_ARGUMENT with `words` in its message, and checks that no
    /// flashcard or set was written and the store still answers.
    static func refused(_ world: StoreWorld, _ package: Data?, saying words: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let error = await world.failure(Store.importApkg, ApkgImportRequest(fileName: "deck.apkg"), attachment: package, sourceLocation: sourceLocation)
        #expect(error?.code == .invalidArgument, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")", sourceLocation: sourceLocation)
        #expect(try await world.call(Store.listFlashcards, FlashcardList()).items.isEmpty, sourceLocation: sourceLocation)
        #expect(try await world.call(Store.listSets, FlashcardSetList()).items.isEmpty, sourceLocation: sourceLocation)
    }

    @Test("zip bombs (honest and lying sizes), too many entries, too large a package: refused before anything is written")
    func zipLimits() async throws {
        try await withWorld(StoreWorld.start(apkgLimits: ApkgLimits(packageBytes: 200_000, entries: 1000, inflatedBytes: 16 << 20))) { world in
            try await Self.refused(world, nil, saying: "attachment frame")
            try await Self.refused(world, Data("not a zip at all".utf8), saying: "not a zip archive")
            // 300 MiB of zeros in 300 KB: over the package size here, over the inflated limit below.
            try await Self.refused(world, try await Self.package("bomb"), saying: "STORE_APKG_MAX_MB")
            try await withWorld(StoreWorld.start(apkgLimits: ApkgLimits(entries: 1000, inflatedBytes: 16 << 20))) { large in
                try await Self.refused(large, try await Self.package("bomb"), saying: "STORE_APKG_MAX_INFLATED_MB")
                // Headers that say 1000 bytes: inflating stops at the limit.
                try await Self.refused(large, try await Self.package("liar"), saying: "STORE_APKG_MAX_INFLATED_MB")
                try await Self.refused(large, try await Self.package("entries"), saying: "STORE_APKG_MAX_ENTRIES")
                try await Self.refused(large, try await Self.package("nocol"), saying: "not an Anki package")
                try await Self.refused(large, try await Self.package("notsqlite"), saying: "not a SQLite database")
                #expect(try await large.call(Reserved.health("store"), Empty()).status == .serving)
            }
        }
    }

    @Test("a view for a table, a REAL in an integer column, an ease out of range, a deep deck list: refused whole, nothing written, no trap")
    func hostileCollections() async throws {
        // The packages' reviews are dated by the real clock.
        try await withWorld(StoreWorld.start(clock: ManualWallClock(Date()))) { world in
            try await Self.refused(world, try await Self.package("view"), saying: "is not a table")
            try await Self.refused(world, try await Self.package("types"), saying: "not integers")
            try await Self.refused(world, try await Self.package("ease"), saying: "ease 9")
            try await Self.refused(world, try await Self.package("deepdecks"), saying: "deck list is not a JSON object")
            #expect(try await world.call(Reserved.health("store"), Empty()).status == .serving)
        }
    }
}
