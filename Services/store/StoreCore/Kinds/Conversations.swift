import Bus
import Contracts
import Foundation
import Wire

extension ConversationCreate: CreateRequest {}
extension ConversationUpdate: UpdateRequest {}
extension MessageCreate: CreateRequest {}
extension MessageUpdate: UpdateRequest {}

/// Tutor conversations. Deleting one deletes its messages.
enum ConversationRecords: RecordKind {
    static func make(_ request: ConversationCreate, _ changes: Changes) throws -> Conversation {
        Conversation(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            title: try Field.text(request.title, "title", maximum: StoreLimits.titleLength),
            materialId: try changes.requireReference(Material.self, request.materialId, field: "materialId"),
            setId: try changes.requireReference(FlashcardSet.self, request.setId, field: "setId"),
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: ConversationUpdate, to record: Conversation, _ changes: Changes) throws -> Conversation {
        var conversation = record
        if let title = request.title { conversation.title = try Field.text(title, "title", maximum: StoreLimits.titleLength) }
        return conversation
    }

    static func remove(_ conversation: Conversation, _ changes: Changes) throws {
        for message in try changes.all(ConversationMessage.self, where: "conversation_id = ?", [conversation.id]) {
            try changes.delete(message)
        }
        try changes.delete(conversation)
    }

    static func query(_ request: ConversationList) throws -> ListQuery {
        var query = ListQuery(orderBy: "updated_at", descending: true)
        if let id = request.materialId { try Field.id(id, "materialId") }
        query.filter("material_id", equals: request.materialId)
        return query
    }
}

/// Messages of a conversation; a new one makes the conversation the most recently active.
enum MessageRecords: RecordKind {
    static func make(_ request: MessageCreate, _ changes: Changes) throws -> ConversationMessage {
        try Field.id(request.conversationId, "conversationId")
        var conversation = try changes.require(Conversation.self, request.conversationId, field: "conversationId")
        let message = ConversationMessage(
            id: try StoreID.givenOrNew(request.id), userId: changes.user, conversationId: conversation.id, role: request.role,
            text: try Field.text(request.text, "text", maximum: StoreLimits.textLength),
            createdAt: changes.now, updatedAt: changes.now)
        conversation.updatedAt = changes.nextUpdate(after: conversation.updatedAt)
        try changes.update(conversation, event: false)
        return message
    }

    static func apply(_ request: MessageUpdate, to record: ConversationMessage, _ changes: Changes) throws -> ConversationMessage {
        var message = record
        if let text = request.text { message.text = try Field.text(text, "text", maximum: StoreLimits.textLength) }
        return message
    }

    static func query(_ request: MessageList) throws -> ListQuery {
        try Field.id(request.conversationId, "conversationId")
        var query = ListQuery(orderBy: "created_at", descending: request.newestFirst ?? false)
        query.filter("conversation_id", equals: request.conversationId)
        return query
    }
}
