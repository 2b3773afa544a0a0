import Bus
import Contracts
import Foundation
import GRDB
import Storage
import Wire

extension IngestMethods {
    /// `materials.put`: the whole processing result in the caller's transaction — the material
    /// (created or marked ready), its source document, chunks, cards, maybe a set, and the
    /// events, ending with `material.ingested`. Everything is checked before anything is written.
    static func put(_ request: MaterialPut, _ changes: Changes) throws -> MaterialPutResult {
        let calendarEntries = (request.tasks?.count ?? 0) + (request.sessions?.count ?? 0)
        guard calendarEntries <= StoreLimits.calendarEntriesPerPut else {
            throw BusError.invalidArgument(
                "fields 'tasks' and 'sessions' have \(calendarEntries) entries; materials.put takes at most \(StoreLimits.calendarEntriesPerPut)")
        }
        let chunkLengths = try checkChunks(request.chunks)
        try checkCards(request.flashcards, ordinals: Set(request.chunks.map(\.ordinal)))
        let materialID = try Field.optionalID(request.materialId, "materialId")
        var material: Material
        let existing = try materialID.flatMap { try changes.find(Material.self, $0) }
        if request.onlyIfProcessing == true, existing?.status != .processing {
            // Checked in the transaction that would write: a job cancelled (or failed) meanwhile
            // cannot bring its result in afterwards.
            throw BusError.failedPrecondition(
                "material '\(materialID ?? "")' is \(existing?.status.rawValue ?? "missing"), not processing; this result is not stored")
        }
        if request.onlyIfProcessing == true, let attempt = request.attemptStartedAt,
           existing?.processingStartedAt?.unixMilliseconds != attempt.unixMilliseconds {
            throw BusError.failedPrecondition(
                "material '\(materialID ?? "")' is processed by a later attempt than the one started \(ISO8601.format(attempt)); this result is not stored")
        }
        if let existing {
            guard existing.status != .ready || request.replace == true else {
                throw BusError.failedPrecondition("material '\(existing.id)' is already ready; set 'replace' to re-generate its content")
            }
            try MaterialRecords.removeDerived(of: existing, changes, cause: .replaced)
            material = try updated(existing, with: request, changes)
            try changes.update(material)
        } else {
            material = try created(request, id: materialID, changes)
            try changes.insert(material)
        }

        let order = request.chunks.indices.sorted { request.chunks[$0].ordinal < request.chunks[$1].ordinal }
        let input = request.sourceDocument
        let document = SourceDocument(
            id: StoreID.new(), userId: changes.user, materialId: material.id, kind: input.kind ?? material.sourceKind,
            title: try Field.optionalText(input.title, "sourceDocument.title", maximum: StoreLimits.titleLength),
            characterCount: chunkLengths.reduce(0, +),
            pageCount: try input.pageCount.map { count in try Field.int(count, "sourceDocument.pageCount", in: 0...1_000_000) },
            durationSeconds: try input.durationSeconds.map { seconds in
                try Field.seconds(seconds, "sourceDocument.durationSeconds", maximum: StoreLimits.maximumMediaSeconds)
            },
            language: try Field.optionalText(input.language, "sourceDocument.language", maximum: 35),
            createdAt: changes.now, updatedAt: changes.now)
        try changes.insert(document)

        let insertChunk = try changes.db.cachedStatement(sql: """
            INSERT INTO chunk (id, user_id, material_id, source_document_id, ordinal, text, page_number, start_seconds,
                               end_seconds, start_offset, end_offset, section, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let now = changes.now.unixMilliseconds
        var chunkIDs: [String] = []
        chunkIDs.reserveCapacity(order.count)
        var chunkIDByOrdinal: [Int: String] = [:]
        var offset = 0
        for index in order {
            let chunk = request.chunks[index]
            let (start, end) = try ChunkRecords.offsets(chunk, field: "chunks[\(index)]", following: offset, length: chunkLengths[index])
            offset = end
            // Chunks are most of the rows: inserted directly, without the record encoder.
            let id = StoreID.new()
            try insertChunk.execute(arguments: [
                id, changes.user, material.id, document.id, chunk.ordinal, chunk.text, chunk.pageNumber, chunk.startSeconds,
                chunk.endSeconds, start, end, chunk.section, now, now,
            ])
            chunkIDs.append(id)
            chunkIDByOrdinal[chunk.ordinal] = id
        }

        let set = try cardSet(for: request, material: material, changes)
        var cardIDs: [String] = []
        for card in request.flashcards {
            let stored = Flashcard(
                id: StoreID.new(), userId: changes.user, front: card.front, back: card.back, kind: card.kind ?? .qa,
                tags: try Field.labels(card.tags, "flashcards.tags", maximum: StoreLimits.tagsPerCard),
                setId: set?.id, materialId: material.id, chunkId: card.chunkOrdinal.flatMap { chunkIDByOrdinal[$0] },
                subjectId: material.subjectId ?? set?.subjectId, createdAt: changes.now, updatedAt: changes.now)
            try changes.insertNew(stored)
            cardIDs.append(stored.id)
        }

        let (taskIDs, sessionIDs) = try calendar(request, material: material, changes)

        try Outbox.append(changes.db, Store.materialIngested, MaterialIngested(
            material: material, sourceDocumentId: document.id, chunkCount: chunkIDs.count, flashcardIds: cardIDs, setId: set?.id),
            user: changes.user)
        return MaterialPutResult(
            material: material, sourceDocument: document, chunkIds: chunkIDs, flashcardIds: cardIDs, setId: set?.id,
            taskIds: request.tasks == nil ? nil : taskIDs, sessionIds: request.sessions == nil ? nil : sessionIDs)
    }

    /// The material's tasks and sessions; one the user already has (an earlier put of the same
    /// file) stays as it is.
    private static func calendar(_ request: MaterialPut, material: Material, _ changes: Changes) throws -> (tasks: [String], sessions: [String]) {
        let tasks = try (request.tasks ?? []).map { task in
            var task = task
            task.materialId = task.materialId ?? material.id
            task.subjectId = task.subjectId ?? material.subjectId
            return try insertUnlessPresent(StudyTaskRecords.self, task, changes)
        }
        let sessions = try (request.sessions ?? []).map { session in
            var session = session
            session.subjectId = session.subjectId ?? material.subjectId
            return try insertUnlessPresent(StudySessionRecords.self, session, changes)
        }
        return (tasks, sessions)
    }

    /// Inserts the record `request` makes unless the user has one with the request's id; returns the id.
    private static func insertUnlessPresent<Kind: RecordKind>(_ kind: Kind.Type, _ request: Kind.Create, _ changes: Changes) throws -> String {
        if let id = request.id, try changes.find(Kind.Record.self, id) != nil { return id }
        let record = try Kind.make(request, changes)
        try changes.insert(record)
        return record.id
    }

    /// Checks the chunks; returns each one's length in characters.
    private static func checkChunks(_ chunks: [ChunkInput]) throws(BusError) -> [Int] {
        try Field.count(chunks, "chunks", in: 0...StoreLimits.chunksPerPut)
        var ordinals = Set<Int>()
        var lengths: [Int] = []
        lengths.reserveCapacity(chunks.count)
        for (index, chunk) in chunks.enumerated() {
            lengths.append(try ChunkRecords.validate(chunk, field: "chunks[\(index)]"))
            guard ordinals.insert(chunk.ordinal).inserted else {
                throw .invalidArgument("field 'chunks[\(index)].ordinal': ordinal \(chunk.ordinal) appears twice")
            }
        }
        return lengths
    }

    private static func checkCards(_ cards: [GeneratedFlashcard], ordinals: Set<Int>) throws(BusError) {
        try Field.count(cards, "flashcards", in: 0...StoreLimits.flashcardsPerPut)
        for (index, card) in cards.enumerated() {
            try Field.text(card.front, "flashcards[\(index)].front", maximum: StoreLimits.cardSideLength)
            try Field.text(card.back, "flashcards[\(index)].back", maximum: StoreLimits.cardSideLength)
            _ = try Field.labels(card.tags, "flashcards[\(index)].tags", maximum: StoreLimits.tagsPerCard)
            if let ordinal = card.chunkOrdinal, !ordinals.contains(ordinal) {
                throw .invalidArgument("field 'flashcards[\(index)].chunkOrdinal': no chunk has ordinal \(ordinal)")
            }
        }
    }

    private static func created(_ request: MaterialPut, id: String?, _ changes: Changes) throws -> Material {
        guard let title = request.title else {
            throw Field.invalid("title", "is required when materials.put creates the material")
        }
        guard let sourceKind = request.sourceKind else {
            throw Field.invalid("sourceKind", "is required when materials.put creates the material")
        }
        return try MaterialRecords.make(MaterialCreate(
            id: id, title: title, subjectId: request.subjectId, sourceKind: sourceKind, fileName: request.fileName, mimeType: request.mimeType,
            status: .ready, summary: request.summary, keywords: request.keywords), changes)
    }

    private static func updated(_ existing: Material, with request: MaterialPut, _ changes: Changes) throws -> Material {
        var material = try MaterialRecords.apply(MaterialUpdate(
            id: existing.id, title: request.title, subjectId: request.subjectId, summary: request.summary, keywords: request.keywords), to: existing, changes)
        if let name = request.fileName { material.fileName = try Field.optionalText(name, "fileName", maximum: StoreLimits.fileNameLength) }
        if let type = request.mimeType { material.mimeType = try Field.optionalText(type, "mimeType", maximum: StoreLimits.mimeTypeLength) }
        material.status = .ready
        material.failureReason = nil
        material.processingStartedAt = nil
        material.updatedAt = changes.nextUpdate(after: existing.updatedAt)
        return material
    }

    /// The set the cards go to: an existing one, or one named `newSetName` for this material
    /// (reused when a re-put names it again).
    private static func cardSet(for request: MaterialPut, material: Material, _ changes: Changes) throws -> FlashcardSet? {
        if let setID = try StoreID.reference(request.setId, "setId") {
            return try changes.require(FlashcardSet.self, setID, field: "setId")
        }
        guard let name = request.newSetName, !name.isEmpty else { return nil }
        try Field.text(name, "newSetName", maximum: StoreLimits.titleLength)
        if let existing = try changes.all(FlashcardSet.self, where: "material_id = ? AND name = ?", [material.id, name]).first {
            return existing
        }
        let set = FlashcardSet(
            id: StoreID.new(), userId: changes.user, name: name, topic: material.title, subjectId: material.subjectId,
            materialId: material.id, createdAt: changes.now, updatedAt: changes.now)
        try changes.insert(set)
        return set
    }
}
