import Bus
import Contracts
import Foundation
import Logging
import Wire

/// The tutor's link to store, for a `chat` with `conversationId`, `materialId` or `setId`: it
/// loads the conversation's history and the study context before the answer and appends the turn
/// after it. Every call goes through the typed store contract and acts for the request being
/// served (its `user`, deadline and `traceparent`), so store's scoping applies: another user's
/// record is NOT_FOUND.
struct TutorStore {
    /// What store contributes to one answer.
    struct Loaded: Sendable {
        /// The study context from `materialId` / `setId`; nil when the request named none.
        var studyContext: StudyContext?
        /// The conversation's latest stored messages, oldest first; empty without a conversation.
        var history: [ChatMessage] = []
        /// Where the turn is appended after the answer; nil without `conversationId`.
        var turn: ConversationTurn?
    }

    let context: RequestContext

    /// True when `request` needs store: it names a conversation, a material or a set.
    static func isNeeded(for request: ChatRequest) -> Bool {
        request.conversationId != nil || request.materialId != nil || request.setId != nil
    }

    /// Loads what `request` refers to. Without `materialId`, `setId` or inline `context`, a
    /// conversation's own material and set are the study context.
    /// - Throws: NOT_FOUND naming the field for a record the caller does not have; store's own
    ///   status (UNAVAILABLE, DEADLINE_EXCEEDED, …) with a message naming store when it fails.
    func load(_ request: ChatRequest) async throws(BusError) -> Loaded {
        var loaded = Loaded()
        var materialId = request.materialId, setId = request.setId
        if let conversationId = request.conversationId {
            let conversation = try await fetch(Store.getConversation, RecordID(id: conversationId), field: "conversationId")
            if materialId == nil, setId == nil, request.context == nil {
                (materialId, setId) = (conversation.materialId, conversation.setId)
            }
            let turn = ConversationTurn(conversationId: conversation.id, idem: context.idempotencyKey, messages: request.messages)
            loaded.history = try await history(of: turn)
            loaded.turn = turn
        }
        if materialId != nil || setId != nil {
            loaded.studyContext = try await studyContext(materialId: materialId, setId: setId)
        }
        context.logger.debug("tutor context loaded from store", metadata: [
            "conversation": "\(request.conversationId ?? "-")", "material": "\(materialId ?? "-")", "set": "\(setId ?? "-")",
            "history": "\(loaded.history.count)", "chunks": "\(loaded.studyContext?.chunks?.count ?? 0)",
            "cards": "\(loaded.studyContext?.flashcards?.count ?? 0)",
        ])
        return loaded
    }

    /// Calls store for the request being served. A missing record is NOT_FOUND naming `field`
    /// (as store names its own reference fields); any other failure keeps store's status and
    /// says that store failed.
    func fetch<Request, Response>(_ method: Method<Request, Response>, _ request: Request, field: String) async throws(BusError) -> Response {
        do throws(BusError) {
            return try await context.call(method, request)
        } catch where error.code == .notFound {
            throw .notFound("field '\(field)': \(error.message)")
        } catch {
            throw BusError(error.code, "cannot load '\(field)' from store: \(method.name) failed: \(error.message)", details: error.details)
        }
    }

    /// Calls a store list method page by page (pages of the largest size store allows), handing
    /// each item to `take` until it returns false or the list ends.
    func forEachItem<Request, Item>(
        _ method: Method<Request, RecordPage<Item>>, field: String, request: (_ cursor: String?) -> Request, _ take: (Item) -> Bool
    ) async throws(BusError) {
        var cursor: String?
        repeat {
            let page = try await fetch(method, request(cursor), field: field)
            for item in page.items where !take(item) { return }
            cursor = page.nextCursor
        } while cursor != nil
    }
}
