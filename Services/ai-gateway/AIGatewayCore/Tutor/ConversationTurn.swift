import Bus
import Contracts
import Foundation
import Logging
import Storage
import Wire

/// One `chat` call's turn in a stored conversation: the request's new messages and the answer,
/// and the ids they are stored under.
///
/// Ids are `tutor-<32 hex digits>-<nnn>`, numbered in storing order: store lists a conversation
/// by creation time, then id, so messages stored within one millisecond still list in order.
/// With the request's `idem` key the hex digits are a hash of conversation and key, and each
/// message's id doubles as its own `idem` key for `messages.create`: a retried call stores under
/// the same keys, store replays its first replies, and nothing is stored twice. Without `idem`
/// they are random (a retry stores the turn again).
struct ConversationTurn: Sendable {
    let conversationId: String
    /// The request's messages that are stored: `system` messages only instruct this answer.
    let messages: [ChatMessage]
    /// Whether the ids derive from the request's `idem` key.
    let idempotent: Bool
    private let base: String

    init(conversationId: String, idem: String?, messages: [ChatMessage]) {
        self.conversationId = conversationId
        self.messages = messages.filter { $0.role != .system }
        idempotent = idem != nil
        if let idem {
            base = "tutor-" + StableHash.hex128(Array((conversationId + "\u{0}" + idem).utf8))
        } else {
            base = "tutor-" + UUID().uuidString.lowercased().filter { $0 != "-" }
        }
    }

    /// The id of the `index`th message stored for this call (the answer comes after the request's
    /// messages).
    func messageId(_ index: Int) -> String {
        let digits = String(index)
        return base + "-" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }

    /// True for the messages this call stores (a retry finds its first attempt's among them).
    func isOwn(_ id: String) -> Bool { id.hasPrefix(base + "-") }
}

extension TutorStore {
    /// The conversation's latest messages, oldest first: enough for the prompt's window
    /// (``AIGatewayLimits/chatContextMessages``). Messages a first attempt of this same call
    /// stored are left out, so a retry sees the history — and gets the prompt — the first attempt had.
    func history(of turn: ConversationTurn) async throws(BusError) -> [ChatMessage] {
        let window = AIGatewayLimits.chatContextMessages
        let limit = window + (turn.idempotent ? turn.messages.count + 1 : 0)
        let page = try await fetch(Store.listMessages, MessageList(limit: limit, conversationId: turn.conversationId, newestFirst: true),
                                   field: "conversationId")
        return page.items.filter { !turn.isOwn($0.id) }.prefix(window).reversed().map { message in
            ChatMessage(role: ChatRole(message.role), content: message.text)
        }
    }

    /// Appends the turn: the request's messages in order, then the answer unless it is empty
    /// (an answer cancelled before its first word).
    /// - Returns: the stored ids of the request's messages and of the answer.
    /// - Throws: store's status, with a message saying the answer was not saved.
    func append(_ turn: ConversationTurn, answer: String) async throws(BusError) -> (messageIds: [String], answerId: String?) {
        var messageIds: [String] = []
        for (index, message) in turn.messages.enumerated() {
            messageIds.append(try await store(ConversationRole(message.role), message.content, index: index, of: turn))
        }
        guard answer.contains(where: { !$0.isWhitespace }) else { return (messageIds, nil) }
        let answerId = try await store(.assistant, answer, index: turn.messages.count, of: turn)
        context.logger.debug("tutor turn stored", metadata: ["conversation": "\(turn.conversationId)", "messages": "\(messageIds.count + 1)"])
        return (messageIds, answerId)
    }

    private func store(_ role: ConversationRole, _ text: String, index: Int, of turn: ConversationTurn) async throws(BusError) -> String {
        let id = turn.messageId(index)
        let request = MessageCreate(id: id, conversationId: turn.conversationId, role: role, text: text)
        let options = context.downstreamOptions(idempotencyKey: turn.idempotent ? id : nil)
        do throws(BusError) {
            return try await context.bus.call(Store.createMessage, request, options: options).id
        } catch where turn.idempotent && error.code == .failedPrecondition && error.details?["reason"]?.stringValue == Idempotency.keyReusedReason {
            // A retry whose model worded the answer differently: the first attempt's is stored
            // under this id, and the conversation keeps it.
            return id
        } catch {
            let retry = turn.idempotent ? "; retry with the same idem to save it without duplicates" : ""
            throw BusError(error.code, "the answer was not saved in conversation '\(turn.conversationId)' (it was generated, and streamed if asked): "
                               + "store \(Store.createMessage.name) failed: \(error.message)\(retry)", details: error.details)
        }
    }
}

extension ChatRole {
    /// The chat role of a stored message's role.
    init(_ role: ConversationRole) {
        switch role {
        case .user: self = .user
        case .assistant: self = .assistant
        case .system: self = .system
        }
    }
}

extension ConversationRole {
    /// The stored role of a chat message's role.
    init(_ role: ChatRole) {
        switch role {
        case .user: self = .user
        case .assistant: self = .assistant
        case .system: self = .system
        }
    }
}
