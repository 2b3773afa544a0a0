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
        try Validate.id(request.materialId, field: "materialId")
        let material = try changes.require(Material.self, request.materialId, field: "materialId")
        return SourceDocument(
            id: try Validate.idOrNew(request.id), userId: changes.user, materialId: material.id, kind: request.kind ?? material.sourceKind,
            title: try Validate.optionalText(request.title, field: "title", maximum: StoreLimits.titleLength),
            pageCount: try Validate.integer(request.pageCount, field: "pageCount", in: 0...1_000_000),
            durationSeconds: try Validate.seconds(request.durationSeconds, field: "durationSeconds"),
            language: try Validate.optionalText(request.language, field: "language", maximum: 35),
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: SourceDocumentUpdate, to record: SourceDocument, _ changes: Changes) throws -> SourceDocument {
        var document = record
        if let title = request.title { document.title = try Validate.optionalText(title, field: "title", maximum: StoreLimits.titleLength) }
        if let pageCount = request.pageCount { document.pageCount = try Validate.integer(pageCount, field: "pageCount", in: 0...1_000_000) }
        if let duration = request.durationSeconds { document.durationSeconds = try Validate.seconds(duration, field: "durationSeconds") }
        if let language = request.language { document.language = try Validate.optionalText(language, field: "language", maximum: 35) }
        return document
    }

    /// Its chunks go with it (cascade); cards made from them stay, without the link.
    static func remove(_ document: SourceDocument, _ changes: Changes) throws {
        try ChunkRecords.unlinkCards(changes, chunksWhere: "source_document_id = ?", document.id)
        try changes.delete(document)
    }

    static func query(_ request: SourceDocumentList) throws -> ListQuery {
        var query = ListQuery(orderBy: "created_at")
        if let materialId = request.materialId { try Validate.id(materialId, field: "materialId") }
        query.filter("material_id", equals: request.materialId)
        return query
    }
}

/// Chunks: their document's `characterCount` follows them.
enum ChunkRecords: RecordKind {
    static func make(_ request: ChunkCreate, _ changes: Changes) throws -> NoteChunk {
        try Validate.id(request.sourceDocumentId, field: "sourceDocumentId")
        let document = try changes.require(SourceDocument.self, request.sourceDocumentId, field: "sourceDocumentId")
        let input = request.chunk
        let length = try validate(input, field: "chunk")
        let start = try Validate.integer(input.startOffset, field: "chunk.startOffset", in: 0...Int.max) ?? document.characterCount
        try adjustCharacterCount(document.id, by: length, changes)
        return NoteChunk(
            id: try Validate.idOrNew(request.id), userId: changes.user, materialId: document.materialId, sourceDocumentId: document.id,
            ordinal: input.ordinal, text: input.text, pageNumber: input.pageNumber, startSeconds: input.startSeconds,
            endSeconds: input.endSeconds, startOffset: start,
            endOffset: try Validate.integer(input.endOffset, field: "chunk.endOffset", in: start...Int.max) ?? start + length,
            section: input.section, createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: ChunkUpdate, to record: NoteChunk, _ changes: Changes) throws -> NoteChunk {
        var chunk = record
        if let text = request.text {
            try Validate.length(text, field: "text", maximum: StoreLimits.textLength)
            try adjustCharacterCount(chunk.sourceDocumentId, by: text.unicodeScalars.count - chunk.text.unicodeScalars.count, changes)
            chunk.text = text
        }
        if let page = request.pageNumber { chunk.pageNumber = try Validate.integer(page, field: "pageNumber", in: 1...1_000_000) }
        if let start = request.startSeconds { chunk.startSeconds = try Validate.seconds(start, field: "startSeconds") }
        if let end = request.endSeconds { chunk.endSeconds = try Validate.seconds(end, field: "endSeconds") }
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
        if let id = request.sourceDocumentId { try Validate.id(id, field: "sourceDocumentId") }
        if let id = request.materialId { try Validate.id(id, field: "materialId") }
        var query = ListQuery(orderBy: [.init(expression: "source_document_id", descending: false), .init(expression: "ordinal", descending: false)])
        query.filter("source_document_id", equals: request.sourceDocumentId)
        query.filter("material_id", equals: request.materialId)
        return query
    }

    /// Checks a chunk's fields; returns its length in characters (Unicode scalars).
    static func validate(_ input: ChunkInput, field: @autoclosure () -> String) throws(BusError) -> Int {
        _ = try Validate.integer(input.ordinal, field: "\(field()).ordinal", in: 0...Int(Int32.max))
        try Validate.length(input.text, field: "\(field()).text", maximum: StoreLimits.textLength)
        _ = try Validate.integer(input.pageNumber, field: "\(field()).pageNumber", in: 1...1_000_000)
        let start = try Validate.seconds(input.startSeconds, field: "\(field()).startSeconds")
        if let end = try Validate.seconds(input.endSeconds, field: "\(field()).endSeconds"), let start, end < start {
            throw .invalidArgument("field '\(field()).endSeconds' must not be before startSeconds")
        }
        if let section = input.section { try Validate.length(section, field: "\(field()).section", maximum: StoreLimits.titleLength) }
        return input.text.unicodeScalars.count
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
