import Bus
import Contracts
import Foundation
import GRDB
import Wire

extension SourceDocumentCreate: CreateRequest {}
extension SourceDocumentUpdate: UpdateRequest {}
extension ChunkCreate: CreateRequest {}
extension ChunkUpdate: UpdateRequest {}

/// Source documents: normally written by `materials.put`; these methods serve clients that
/// chunk text themselves.
enum SourceDocumentRecords: RecordKind {
    static func make(_ request: SourceDocumentCreate, _ changes: Changes) throws -> SourceDocument {
        try Field.id(request.materialId, "materialId")
        let material = try changes.require(Material.self, request.materialId, field: "materialId")
        return SourceDocument(
            id: try StoreID.givenOrNew(request.id), userId: changes.user, materialId: material.id, kind: request.kind ?? material.sourceKind,
            title: try Field.optionalText(request.title, "title", maximum: StoreLimits.titleLength),
            pageCount: try request.pageCount.map { count in try Field.int(count, "pageCount", in: 0...1_000_000) },
            durationSeconds: try request.durationSeconds.map { seconds in
                try Field.seconds(seconds, "durationSeconds", maximum: StoreLimits.maximumMediaSeconds)
            },
            language: try Field.optionalText(request.language, "language", maximum: 35),
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: SourceDocumentUpdate, to record: SourceDocument, _ changes: Changes) throws -> SourceDocument {
        var document = record
        if let title = request.title { document.title = try Field.optionalText(title, "title", maximum: StoreLimits.titleLength) }
        if let pageCount = request.pageCount { document.pageCount = try Field.int(pageCount, "pageCount", in: 0...1_000_000) }
        if let duration = request.durationSeconds {
            document.durationSeconds = try Field.seconds(duration, "durationSeconds", maximum: StoreLimits.maximumMediaSeconds)
        }
        if let language = request.language { document.language = try Field.optionalText(language, "language", maximum: 35) }
        return document
    }

    /// Its chunks go with it (cascade); cards made from them stay, without the link.
    static func remove(_ document: SourceDocument, _ changes: Changes) throws {
        try ChunkRecords.unlinkCards(changes, chunksWhere: "source_document_id = ?", document.id)
        try changes.delete(document)
    }

    static func query(_ request: SourceDocumentList) throws -> ListQuery {
        var query = ListQuery(orderBy: "created_at")
        if let materialId = request.materialId { try Field.id(materialId, "materialId") }
        query.filter("material_id", equals: request.materialId)
        return query
    }
}

/// Chunks: their document's `characterCount` follows them.
enum ChunkRecords: RecordKind {
    static func make(_ request: ChunkCreate, _ changes: Changes) throws -> NoteChunk {
        try Field.id(request.sourceDocumentId, "sourceDocumentId")
        let document = try changes.require(SourceDocument.self, request.sourceDocumentId, field: "sourceDocumentId")
        let input = request.chunk
        let length = try validate(input, field: "chunk")
        let (start, end) = try offsets(input, field: "chunk", following: document.characterCount, length: length)
        try adjustCharacterCount(document.id, by: length, changes)
        return NoteChunk(
            id: try StoreID.givenOrNew(request.id), userId: changes.user, materialId: document.materialId, sourceDocumentId: document.id,
            ordinal: input.ordinal, text: input.text, pageNumber: input.pageNumber, startSeconds: input.startSeconds,
            endSeconds: input.endSeconds, startOffset: start, endOffset: end,
            section: input.section, createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: ChunkUpdate, to record: NoteChunk, _ changes: Changes) throws -> NoteChunk {
        var chunk = record
        if let text = request.text {
            try Field.length(text, "text", maximum: StoreLimits.textLength)
            try adjustCharacterCount(chunk.sourceDocumentId, by: text.unicodeScalars.count - chunk.text.unicodeScalars.count, changes)
            chunk.text = text
        }
        if let page = request.pageNumber { chunk.pageNumber = try Field.int(page, "pageNumber", in: 1...1_000_000) }
        let maximumSeconds = StoreLimits.maximumMediaSeconds
        if let start = request.startSeconds { chunk.startSeconds = try Field.seconds(start, "startSeconds", maximum: maximumSeconds) }
        if let end = request.endSeconds { chunk.endSeconds = try Field.seconds(end, "endSeconds", maximum: maximumSeconds) }
        return chunk
    }

    static func remove(_ chunk: NoteChunk, _ changes: Changes) throws {
        try unlinkCards(changes, chunksWhere: "id = ?", chunk.id)
        try adjustCharacterCount(chunk.sourceDocumentId, by: -chunk.text.unicodeScalars.count, changes)
        try changes.delete(chunk)
    }

    static func query(_ request: ChunkList) throws -> ListQuery {
        guard request.sourceDocumentId != nil || request.materialId != nil else {
            throw BusError.invalidArgument("chunks.list needs field 'sourceDocumentId' or 'materialId'")
        }
        if let id = request.sourceDocumentId { try Field.id(id, "sourceDocumentId") }
        if let id = request.materialId { try Field.id(id, "materialId") }
        var query = ListQuery(orderBy: [.init(expression: "source_document_id", descending: false), .init(expression: "ordinal", descending: false)])
        query.filter("source_document_id", equals: request.sourceDocumentId)
        query.filter("material_id", equals: request.materialId)
        return query
    }

    /// Checks a chunk's fields; returns its length in characters (Unicode scalars).
    static func validate(_ input: ChunkInput, field: @autoclosure () -> String) throws(BusError) -> Int {
        try Field.int(input.ordinal, "\(field()).ordinal", in: 0...Int(Int32.max))
        try Field.length(input.text, "\(field()).text", maximum: StoreLimits.textLength)
        if let page = input.pageNumber { try Field.int(page, "\(field()).pageNumber", in: 1...1_000_000) }
        if let start = input.startSeconds { try Field.seconds(start, "\(field()).startSeconds", maximum: StoreLimits.maximumMediaSeconds) }
        if let end = input.endSeconds {
            try Field.seconds(end, "\(field()).endSeconds", maximum: StoreLimits.maximumMediaSeconds)
            if let start = input.startSeconds, end < start { throw Field.invalid("\(field()).endSeconds", "must not be before startSeconds") }
        }
        if let start = input.startOffset { try Field.int(start, "\(field()).startOffset", in: 0...StoreLimits.maximumOffset) }
        if let end = input.endOffset { try Field.int(end, "\(field()).endOffset", in: 0...StoreLimits.maximumOffset) }
        if let section = input.section { try Field.length(section, "\(field()).section", maximum: StoreLimits.titleLength) }
        return input.text.unicodeScalars.count
    }

    /// A checked chunk's offsets: as given, the start defaulting to `following` (where the
    /// previous chunk ended) and the end to the start plus the text's `length`.
    /// - Throws: `INVALID_ARGUMENT` when the end is before the start.
    static func offsets(_ input: ChunkInput, field: @autoclosure () -> String, following: Int, length: Int) throws(BusError) -> (start: Int, end: Int) {
        // Both at most maximumOffset + textLength: far from overflowing.
        let start = input.startOffset ?? following
        let end = input.endOffset ?? start + length
        guard end >= start else { throw Field.invalid("\(field()).endOffset", "must not be before the chunk's start offset \(start)") }
        return (start, end)
    }

    /// Cards made from the chunks matching `condition` lose the link (the chunks are going).
    static func unlinkCards(_ changes: Changes, chunksWhere condition: String, _ value: String) throws {
        let cards = try changes.all(Flashcard.self, where: "chunk_id IN (SELECT id FROM chunk WHERE user_id = ? AND \(condition))", [changes.user, value])
        for var card in cards {
            card.chunkId = nil
            card.updatedAt = changes.nextUpdate(after: card.updatedAt)
            try changes.update(card)
        }
    }

    private static func adjustCharacterCount(_ documentID: String, by delta: Int, _ changes: Changes) throws {
        try changes.db.execute(
            sql: "UPDATE source_document SET character_count = max(0, character_count + ?) WHERE user_id = ? AND id = ?",
            arguments: [delta, changes.user, documentID])
    }
}
