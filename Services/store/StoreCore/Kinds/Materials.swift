import Bus
import Contracts
import Foundation
import GRDB
import Wire

extension MaterialCreate: CreateRequest {}
extension MaterialUpdate: UpdateRequest {}

/// Materials' user-editable side; uploads and processing are in `Ingest/`.
enum MaterialRecords: RecordKind {
    static func make(_ request: MaterialCreate, _ changes: Changes) throws -> Material {
        let status = request.status ?? .pending
        guard status != .failed else {
            throw Field.invalid("status", "cannot be failed at creation: materials.fail marks a material failed with its reason")
        }
        return Material(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            title: try Field.text(request.title, "title", maximum: StoreLimits.titleLength),
            subjectId: try changes.requireReference(Subject.self, request.subjectId, field: "subjectId"),
            sourceKind: request.sourceKind,
            fileName: try Field.optionalText(request.fileName, "fileName", maximum: StoreLimits.fileNameLength),
            mimeType: try Field.optionalText(request.mimeType, "mimeType", maximum: StoreLimits.mimeTypeLength),
            status: status, processingStartedAt: status == .processing ? changes.now : nil,
            summary: try Field.optionalText(request.summary, "summary", maximum: StoreLimits.summaryLength),
            keywords: try Field.labels(request.keywords, "keywords", maximum: StoreLimits.keywordsPerMaterial),
            isArchived: request.isArchived ?? false, isPriority: request.isPriority ?? false,
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: MaterialUpdate, to record: Material, _ changes: Changes) throws -> Material {
        var material = record
        if let title = request.title { material.title = try Field.text(title, "title", maximum: StoreLimits.titleLength) }
        if request.subjectId != nil { material.subjectId = try changes.requireReference(Subject.self, request.subjectId, field: "subjectId") }
        if let summary = request.summary { material.summary = try Field.optionalText(summary, "summary", maximum: StoreLimits.summaryLength) }
        if request.keywords != nil { material.keywords = try Field.labels(request.keywords, "keywords", maximum: StoreLimits.keywordsPerMaterial) }
        if let isArchived = request.isArchived { material.isArchived = isArchived }
        if let isPriority = request.isPriority { material.isPriority = isPriority }
        return material
    }

    /// A material goes with its original (when no other material has the same bytes), source
    /// documents and chunks (cascade), and its flashcards, each with `flashcard.deleted`.
    static func remove(_ material: Material, _ changes: Changes) throws {
        try removeDerived(of: material, changes, cause: .materialDeleted)
        try changes.unlink(FlashcardSet.self, \.materialId, column: "material_id", from: material.id)
        try changes.unlink(Conversation.self, \.materialId, column: "material_id", from: material.id)
        try changes.unlink(StudyTask.self, \.materialId, column: "material_id", from: material.id)
        try changes.delete(material)
        if let sha256 = material.sha256 {
            try changes.db.execute(
                sql: "DELETE FROM material_original WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM material WHERE sha256 = ?)",
                arguments: [sha256, sha256])
        }
    }

    /// Removes the material's flashcards, source documents and chunks (what processing made).
    static func removeDerived(of material: Material, _ changes: Changes, cause: FlashcardDeletionCause) throws {
        for card in try changes.all(Flashcard.self, where: "material_id = ?", [material.id]) {
            try changes.deleteFlashcard(card, cause: cause)
        }
        try ChunkRecords.unlinkCards(changes, chunksWhere: "material_id = ?", material.id)
        try changes.db.execute(sql: "DELETE FROM source_document WHERE user_id = ? AND material_id = ?", arguments: [changes.user, material.id])
    }

    static func query(_ request: MaterialList) throws -> ListQuery {
        var query = ListQuery(orderBy: "created_at", descending: true)
        if let subjectId = request.subjectId { try Field.id(subjectId, "subjectId") }
        query.filter("subject_id", equals: request.subjectId)
        query.filter("status", equals: request.status)
        query.filter("is_archived", equals: request.isArchived)
        return query
    }
}
