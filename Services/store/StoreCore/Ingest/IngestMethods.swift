import Bus
import Contracts
import Crypto
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// The methods ingest builds on: uploads stored content-addressed, the status of processing
/// (pending -> processing -> ready | failed), the result written in one transaction, and the
/// sweep for materials whose worker was lost. docs/services/store.md has the whole flow.
enum IngestMethods {
    static func register(_ handlers: Handlers<StoreService>) {
        handlers.handle(Store.uploadMaterial) { store, request, context in
            guard let file = context.attachment, !file.isEmpty else {
                throw BusError.invalidArgument("materials.upload needs the file's bytes in the request's attachment frame")
            }
            try checkSize(file.count, kind: request.sourceKind)
            let sha256 = SHA256.hash(data: file).map { String(format: "%02x", $0) }.joined()
            return try await store.write(context, UploadRequest(fields: request, sha256: sha256)) { changes in
                try upload(request, file: file, sha256: sha256, changes)
            }
        }
        handlers.handle(Store.startProcessing) { store, request, context in
            try Field.id(request.id, "id")
            return try await store.write(context, request) { changes in try startProcessing(request.id, changes) }
        }
        handlers.handle(Store.putMaterial) { store, request, context in
            try await store.write(context, request) { changes in try put(request, changes) }
        }
        handlers.handle(Store.failMaterial) { store, request, context in
            try Field.id(request.id, "id")
            return try await store.write(context, request) { changes in try fail(request, changes) }
        }
        handlers.handle(Store.materialOriginal, withAttachment: { store, request, context in
            try Field.id(request.id, "id")
            return try await store.read(context) { db, user in try original(request.id, db, user: user) }
        })
        handlers.handle(Store.materialText) { store, request, context in
            try Field.id(request.id, "id")
            return try await store.read(context) { db, user in try text(request.id, db, user: user) }
        }
        handlers.handle(Store.renewMaterial) { store, request, context in
            try Field.id(request.id, "id")
            let user = try context.requireUser()
            let now = store.clock.now().unixMilliseconds
            // Not a change of the record (no event, no sync, no idempotency key): only the sweep reads it.
            let renewed = try await store.database.pool.write { db in
                try db.execute(
                    sql: "UPDATE material SET processing_renewed_at = ? WHERE user_id = ? AND id = ? AND status = 'processing' AND processing_started_at = ?",
                    arguments: [now, user, request.id, request.attemptStartedAt.unixMilliseconds])
                return db.changesCount == 1
            }
            guard renewed else {
                throw BusError.failedPrecondition(
                    "material '\(request.id)' is not processing in the attempt that started at \(request.attemptStartedAt) (it failed, was cancelled or deleted, or another attempt took it); stop the job")
            }
            return Empty()
        }
        handlers.handle(Store.stuckMaterials) { store, request, context in
            let age = try Field.number(request.olderThanSeconds ?? 600, "olderThanSeconds", in: 1...StoreLimits.maximumStuckAgeSeconds)
            let limit = try Field.int(request.limit, "limit", in: 1...1000, default: 100)
            let cutoff = store.clock.now().addingTimeInterval(-age).unixMilliseconds
            let user = context.user.flatMap { $0.isEmpty ? nil : $0 }
            return try await store.database.pool.read { db in try stuck(before: cutoff, user: user, limit: limit, db) }
        }
    }

    /// What an upload's idempotency key is bound to: its fields and its file.
    struct UploadRequest: Encodable {
        var fields: MaterialUpload
        var sha256: String
    }

    /// Refuses files over the material limits: 50 MB, images 10 MB, recordings 50 MB.
    static func checkSize(_ bytes: Int, kind: MaterialSourceKind) throws(BusError) {
        let (limit, what) = switch kind {
        case .image: (StoreLimits.imageBytes, "an image")
        case .audio: (StoreLimits.audioBytes, "a recording")
        default: (StoreLimits.materialBytes, "a material")
        }
        guard bytes <= limit else {
            throw .invalidArgument("the attachment has \(bytes) bytes; \(what) may have at most \(limit / 1024 / 1024) MB")
        }
    }

    static func upload(_ request: MaterialUpload, file: Data, sha256: String, _ changes: Changes) throws -> MaterialUploadResult {
        if let existing = try changes.all(Material.self, where: "sha256 = ?", [sha256]).first {
            return MaterialUploadResult(material: existing, duplicate: true)
        }
        let status = request.status ?? .processing
        guard status == .processing || status == .pending else {
            throw Field.invalid("status", "of an upload must be processing or pending")
        }
        var material = try MaterialRecords.make(MaterialCreate(
            id: request.id, title: request.title, subjectId: request.subjectId, sourceKind: request.sourceKind, fileName: request.fileName,
            mimeType: request.mimeType, status: status, isPriority: request.isPriority), changes)
        material.sizeBytes = file.count
        material.sha256 = sha256
        try changes.db.execute(sql: "INSERT OR IGNORE INTO material_original (sha256, size_bytes, content) VALUES (?, ?, ?)",
                               arguments: [sha256, file.count, file])
        try changes.insert(material)
        return MaterialUploadResult(material: material, duplicate: false)
    }

    static func startProcessing(_ id: String, _ changes: Changes) throws -> Material {
        var material = try changes.require(Material.self, id)
        guard material.status != .ready else {
            throw BusError.failedPrecondition("material '\(id)' is ready; materials.put with replace re-processes it")
        }
        material.status = .processing
        material.processingStartedAt = changes.now
        material.failureReason = nil
        material.updatedAt = changes.nextUpdate(after: material.updatedAt)
        try changes.update(material)
        return material
    }

    static func fail(_ request: MaterialFail, _ changes: Changes) throws -> Material {
        var material = try changes.require(Material.self, request.id)
        guard material.status == .pending || material.status == .processing else {
            throw BusError.failedPrecondition("material '\(material.id)' is \(material.status.rawValue); only a pending or processing material can fail")
        }
        let reason = request.reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty else { throw Field.invalid("reason", "must not be empty") }
        material.status = .failed
        material.failureReason = String(reason.prefix(StoreLimits.failureReasonLength))
        material.processingStartedAt = nil
        material.updatedAt = changes.nextUpdate(after: material.updatedAt)
        try changes.update(material)
        try Outbox.append(changes.db, Store.ingestFailed, IngestFailed(
            materialId: material.id, userId: material.userId, title: material.title, reason: material.failureReason ?? reason,
            failedAt: material.updatedAt), user: changes.user)
        return material
    }

    static func original(_ id: String, _ db: Database, user: String) throws -> (MaterialOriginal, Data?) {
        let material = try Changes(db: db, user: user, now: Date()).require(Material.self, id)
        guard let sha256 = material.sha256,
              let content = try Data.fetchOne(db, sql: "SELECT content FROM material_original WHERE sha256 = ?", arguments: [sha256])
        else { throw BusError.notFound("material '\(id)' has no original file (it was not uploaded)") }
        let info = MaterialOriginal(
            id: material.id, sha256: sha256, sizeBytes: content.count, fileName: material.fileName, mimeType: material.mimeType,
            sourceKind: material.sourceKind)
        return (info, content)
    }

    /// The material's text from its chunks: document after document, each chunk without the
    /// scalars it repeats of the text before it (ingest's chunks overlap; their offsets say by
    /// how much).
    static func text(_ id: String, _ db: Database, user: String) throws -> MaterialText {
        let material = try Changes(db: db, user: user, now: Date()).require(Material.self, id)
        let rows = try Row.fetchCursor(db, sql: """
            SELECT c.source_document_id AS document, c.text, c.start_offset, c.end_offset
            FROM chunk c JOIN source_document d ON d.user_id = c.user_id AND d.id = c.source_document_id
            WHERE c.user_id = ? AND c.material_id = ?
            ORDER BY d.created_at, d.id, c.ordinal, c.pk
            """, arguments: [user, material.id])
        var documents: [String] = []
        var document: String?
        var covered = 0  // the document's scalars written so far, by offset
        while let row = try rows.next() {
            let documentId: String = row["document"]
            if documentId != document {
                documents.append("")
                document = documentId
                covered = 0
            }
            let chunk: String = row["text"]
            let start: Int = row["start_offset"]
            let end: Int = row["end_offset"]
            let repeated = min(max(0, covered - start), chunk.unicodeScalars.count)
            documents[documents.count - 1].unicodeScalars.append(contentsOf: chunk.unicodeScalars.dropFirst(repeated))
            covered = max(covered, end)
        }
        let text = documents.joined(separator: "\n\n")
        return MaterialText(id: material.id, text: text, characterCount: text.unicodeScalars.count, documentCount: documents.count)
    }

    static func stuck(before cutoff: Int64, user: String?, limit: Int, _ db: Database) throws -> StuckMaterials {
        // An attempt renewed since it started is as old as its last renewal.
        var sql = """
            SELECT id, user_id, processing_started_at, sha256 FROM material
            WHERE status = 'processing' AND processing_started_at < ?1 AND coalesce(processing_renewed_at, 0) < ?1
            """
        var arguments: [any DatabaseValueConvertible] = [cutoff]
        if let user {
            sql += " AND user_id = ?2"
            arguments.append(user)
        }
        sql += " ORDER BY processing_started_at, user_id, id LIMIT \(limit)"
        let materials = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { row in
            StuckMaterial(id: row["id"], userId: row["user_id"], processingStartedAt: Date(unixMilliseconds: row["processing_started_at"]), sha256: row["sha256"])
        }
        return StuckMaterials(materials: materials)
    }
}
