import Foundation
import Wire

// Payloads of the store's durable events (written to its outbox in the transaction of the
// change; replayable with `_events.replay`). `created`/`updated` events carry the record itself.

/// `<kind>.deleted` for every kind except flashcards.
public struct RecordDeleted: Codable, Sendable, Equatable {
    public var kind: SyncKind
    public var id: String
    public var userId: String
    public var deletedAt: Date
    public init(kind: SyncKind, id: String, userId: String, deletedAt: Date) {
        self.kind = kind
        self.id = id
        self.userId = userId
        self.deletedAt = deletedAt
    }
}

/// Why a flashcard was removed.
public enum FlashcardDeletionCause: String, WireEnum {
    /// `flashcards.delete`.
    case deleted
    /// Its set was deleted.
    case setDeleted
    /// Its material was deleted.
    case materialDeleted
    /// `materials.put` with `replace` re-generated the material's cards.
    case replaced
    /// A device's delete arrived through `sync.push`.
    case synced
}

/// `flashcard.deleted`: one event per removed card, also when a set or material delete removed
/// it, carrying what a consumer (the scheduler) keyed the card's state by.
public struct FlashcardDeleted: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var setId: String?
    public var materialId: String?
    public var subjectId: String?
    public var cause: FlashcardDeletionCause
    public var deletedAt: Date
    public init(id: String, userId: String, setId: String?, materialId: String?, subjectId: String?, cause: FlashcardDeletionCause, deletedAt: Date) {
        self.id = id
        self.userId = userId
        self.setId = setId
        self.materialId = materialId
        self.subjectId = subjectId
        self.cause = cause
        self.deletedAt = deletedAt
    }
}

/// `material.ingested`: `materials.put` stored a material's processing result and marked it ready.
public struct MaterialIngested: Codable, Sendable, Equatable {
    public var material: Material
    public var sourceDocumentId: String
    public var chunkCount: Int
    public var flashcardIds: [String]
    public var setId: String?
    public init(material: Material, sourceDocumentId: String, chunkCount: Int, flashcardIds: [String], setId: String?) {
        self.material = material
        self.sourceDocumentId = sourceDocumentId
        self.chunkCount = chunkCount
        self.flashcardIds = flashcardIds
        self.setId = setId
    }
}

/// `ingest.failed`: `materials.fail` marked a material failed (published by the store for the
/// stateless ingest workers, so the outcome is durable and replayable).
public struct IngestFailed: Codable, Sendable, Equatable {
    public var materialId: String
    public var userId: String
    public var title: String
    /// Why: a worker's message, or ``cancelledReason``.
    public var reason: String
    public var failedAt: Date
    /// The reason of a material whose user cancelled its job (`ingest.cancel`): no failure to
    /// tell the user of.
    public static let cancelledReason = "cancelled"
    public init(materialId: String, userId: String, title: String, reason: String, failedAt: Date) {
        self.materialId = materialId
        self.userId = userId
        self.title = title
        self.reason = reason
        self.failedAt = failedAt
    }
}
