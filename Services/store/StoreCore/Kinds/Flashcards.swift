import Bus
import Contracts
import Foundation
import GRDB
import Wire

extension FlashcardCreate: CreateRequest {}
extension FlashcardUpdate: UpdateRequest {}
extension FlashcardSetCreate: CreateRequest {}
extension FlashcardSetUpdate: UpdateRequest {}

/// Flashcards. Every create and delete is a `flashcard.created` / `flashcard.deleted` event the
/// scheduler keys review state on.
enum FlashcardRecords: RecordKind {
    static func make(_ request: FlashcardCreate, _ changes: Changes) throws -> Flashcard {
        let set = try StoreID.reference(request.setId, "setId").map { id in try changes.require(FlashcardSet.self, id, field: "setId") }
        let chunk = try StoreID.reference(request.chunkId, "chunkId").map { id in try changes.require(NoteChunk.self, id, field: "chunkId") }
        var materialID = try changes.requireReference(Material.self, request.materialId, field: "materialId")
        if let chunk {
            if let materialID, materialID != chunk.materialId {
                throw BusError.invalidArgument("field 'chunkId': chunk '\(chunk.id)' is not from material '\(materialID)'")
            }
            materialID = chunk.materialId
        }
        var subjectID = try changes.requireReference(Subject.self, request.subjectId, field: "subjectId")
        if subjectID == nil { subjectID = set?.subjectId }
        if subjectID == nil, let materialID { subjectID = try changes.find(Material.self, materialID)?.subjectId }
        return Flashcard(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            front: try Field.text(request.front, "front", maximum: StoreLimits.cardSideLength),
            back: try Field.text(request.back, "back", maximum: StoreLimits.cardSideLength),
            kind: request.kind ?? .qa, tags: try Field.labels(request.tags, "tags", maximum: StoreLimits.tagsPerCard),
            setId: set?.id, materialId: materialID, chunkId: chunk?.id, subjectId: subjectID,
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: FlashcardUpdate, to record: Flashcard, _ changes: Changes) throws -> Flashcard {
        var card = record
        if let front = request.front { card.front = try Field.text(front, "front", maximum: StoreLimits.cardSideLength) }
        if let back = request.back { card.back = try Field.text(back, "back", maximum: StoreLimits.cardSideLength) }
        if let kind = request.kind { card.kind = kind }
        if request.tags != nil { card.tags = try Field.labels(request.tags, "tags", maximum: StoreLimits.tagsPerCard) }
        if request.setId != nil { card.setId = try changes.requireReference(FlashcardSet.self, request.setId, field: "setId") }
        if request.subjectId != nil { card.subjectId = try changes.requireReference(Subject.self, request.subjectId, field: "subjectId") }
        return card
    }

    static func remove(_ card: Flashcard, _ changes: Changes) throws {
        try changes.deleteFlashcard(card, cause: .deleted)
    }

    static func query(_ request: FlashcardList) throws -> ListQuery {
        // `pk` is the insertion order: cards written in one transaction keep their order.
        var query = ListQuery(orderBy: "pk")
        for (field, value) in [("setId", request.setId), ("materialId", request.materialId), ("subjectId", request.subjectId)] {
            if let value { try Field.id(value, field) }
        }
        query.filter("set_id", equals: request.setId)
        query.filter("material_id", equals: request.materialId)
        query.filter("subject_id", equals: request.subjectId)
        if let tag = request.tag { query.filter("EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)", tag) }
        return query
    }
}

/// Flashcard sets (decks). Deleting one deletes its cards.
enum FlashcardSetRecords: RecordKind {
    static func make(_ request: FlashcardSetCreate, _ changes: Changes) throws -> FlashcardSet {
        FlashcardSet(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            name: try Field.text(request.name, "name", maximum: StoreLimits.titleLength),
            topic: try Field.optionalText(request.topic, "topic", maximum: StoreLimits.titleLength),
            subjectId: try changes.requireReference(Subject.self, request.subjectId, field: "subjectId"),
            materialId: try changes.requireReference(Material.self, request.materialId, field: "materialId"),
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: FlashcardSetUpdate, to record: FlashcardSet, _ changes: Changes) throws -> FlashcardSet {
        var set = record
        if let name = request.name { set.name = try Field.text(name, "name", maximum: StoreLimits.titleLength) }
        if let topic = request.topic { set.topic = try Field.optionalText(topic, "topic", maximum: StoreLimits.titleLength) }
        if request.subjectId != nil { set.subjectId = try changes.requireReference(Subject.self, request.subjectId, field: "subjectId") }
        return set
    }

    /// A sync edit keeps the card count, which the store maintains.
    static func replace(_ existing: FlashcardSet, with request: FlashcardSetCreate, _ changes: Changes) throws -> FlashcardSet {
        var request = request
        request.id = existing.id
        var set = try make(request, changes).keepingCreation(of: existing)
        set.cardCount = existing.cardCount
        return set
    }

    static func remove(_ set: FlashcardSet, _ changes: Changes) throws {
        try removeCards(of: set, changes, cause: .setDeleted)
        try changes.unlink(Conversation.self, \.setId, column: "set_id", from: set.id)
        try changes.unlink(StudySession.self, \.setId, column: "set_id", from: set.id)
        try changes.delete(set)
    }

    static func removeCards(of set: FlashcardSet, _ changes: Changes, cause: FlashcardDeletionCause) throws {
        for card in try changes.all(Flashcard.self, where: "set_id = ?", [set.id]) {
            try changes.deleteFlashcard(card, cause: cause)
        }
    }

    static func query(_ request: FlashcardSetList) throws -> ListQuery {
        var query = ListQuery(orderBy: "created_at", descending: true)
        if let value = request.subjectId { try Field.id(value, "subjectId") }
        if let value = request.materialId { try Field.id(value, "materialId") }
        query.filter("subject_id", equals: request.subjectId)
        query.filter("material_id", equals: request.materialId)
        return query
    }
}
