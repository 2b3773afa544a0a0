import Bus
import Contracts
import Foundation
import ServiceKit
import Wire

/// `chat`, the tutor, and `chat.cancel`, which stops an answer in progress.
struct ChatMethods: Sendable {
    let dispatcher: Dispatcher
    /// Where streamed answers are published.
    let bus: Bus
    let chats = ChatRegistry()

    static func register(_ handlers: Handlers<AIGatewayService>) {
        handlers.handle(AIGateway.chat) { service, request, context in try await service.chat.chat(request, context) }
        handlers.handle(AIGateway.cancelChat) { service, request, context in
            let user = try context.requireUser()
            guard service.chat.chats.cancel(request.requestId, user: user) else {
                throw BusError.notFound("no chat answer \(request.requestId) is in progress")
            }
            return ChatCancelResponse(requestId: request.requestId, cancelled: true)
        }
    }

    /// The tutor. With `conversationId`, `materialId` or `setId` the history and study context
    /// come from store first, and the turn is appended there before the final event (a failure to
    /// store fails the call and ends the stream with an error event).
    func chat(_ request: ChatRequest, _ context: RequestContext) async throws -> ChatResponse {
        let scope = try CallScope(context)
        try Self.check(request)
        let chain = try dispatcher.chain(for: .chat, pinned: request.provider)
        let requestId = request.requestId ?? "chat-" + UUID().uuidString.lowercased()
        let sink = ChatSink(requestId: requestId, publish: request.stream == true, bus: bus, user: scope.user)
        let run = try chats.begin(requestId, user: scope.user)
        defer { chats.end(requestId) }
        do {
            let tutor = TutorStore(context: context)
            let stored = TutorStore.isNeeded(for: request) ? try await tutor.load(request) : TutorStore.Loaded()
            let messages = stored.history + request.messages
            let studyContext = stored.studyContext ?? request.context
            let recent = Array(messages.suffix(AIGatewayLimits.chatContextMessages))
            let prompt = Prompts.chat(messages, context: studyContext, maxTokens: request.maxTokens, temperature: request.temperature)
            let cacheInput = CacheInput.of(.chat, prompt)
            let work = Task { () async throws(BusError) -> ChatResponse in
                let (outcome, generation) = try await dispatcher.converse(
                    chain: chain, scope: scope, cacheInput: cacheInput, prompt: prompt,
                    local: { ExtractiveTutor.answer(messages: recent, context: studyContext) }, sink: sink, run: run)
                return ChatResponse(requestId: requestId, text: outcome.text, finishReason: outcome.finishReason, generation: generation)
            }
            run.attach { work.cancel() }
            var response = try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
            if let turn = stored.turn {
                (response.messageIds, response.answerMessageId) = try await tutor.append(turn, answer: response.text)
            }
            sink.final(response)
            return response
        } catch {
            let failure = (error as? BusError) ?? .internal("chat failed: \(error)")
            sink.error(failure)
            throw failure
        }
    }

    /// The characters of a `requestId`, which becomes part of a topic name.
    private static let requestIdCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".utf8)

    /// Checks a chat request: its messages, context and sampling settings, its `requestId`, and
    /// the store references.
    static func check(_ request: ChatRequest) throws(BusError) {
        try Field.count(request.messages, "messages", in: 1...AIGatewayLimits.chatMessages)
        for (index, message) in request.messages.enumerated() {
            try Field.bytes(message.content, "messages[\(index)].content", maximum: AIGatewayLimits.chatBytes)
        }
        guard request.messages.contains(where: { $0.role == .user }) else { throw Field.invalid("messages", "must include a user message") }
        if let context = request.context {
            let size = (context.chunks ?? []).reduce(0) { $0 + $1.text.utf8.count } + (context.flashcards ?? []).reduce(0) { $0 + $1.front.utf8.count + $1.back.utf8.count }
            guard size <= AIGatewayLimits.chatBytes else {
                throw Field.invalid("context", "must hold at most \(AIGatewayLimits.chatBytes) bytes of text in all, got \(size)")
            }
        }
        if let maxTokens = request.maxTokens { try Field.int(maxTokens, "maxTokens", in: 1...8192) }
        if let temperature = request.temperature { try Field.number(temperature, "temperature", in: 0...2) }
        if let id = request.requestId {
            guard (1...AIGatewayLimits.requestIdLength).contains(id.utf8.count), id.utf8.allSatisfy(requestIdCharacters.contains) else {
                throw Field.invalid("requestId", "must be 1 to \(AIGatewayLimits.requestIdLength) characters of A-Z a-z 0-9 _ -, got '\(id.prefix(80))'")
            }
        } else if request.stream == true {
            throw Field.invalid("requestId", "is required with stream: true (the answer is published on ai.stream.<requestId>)")
        }
        try storeReferences(request)
    }

    /// `conversationId`, `materialId` and `setId`: store ids; an inline context only without
    /// the latter two; with a conversation, messages store accepts (checked before answering, so
    /// a question store would refuse does not cost an answer that cannot be saved).
    private static func storeReferences(_ request: ChatRequest) throws(BusError) {
        _ = try Field.optionalID(request.conversationId, "conversationId", maximum: StoreLimits.idLength)
        _ = try Field.optionalID(request.materialId, "materialId", maximum: StoreLimits.idLength)
        _ = try Field.optionalID(request.setId, "setId", maximum: StoreLimits.idLength)
        if request.context != nil, request.materialId != nil || request.setId != nil {
            throw Field.invalid("context", "cannot be given with materialId or setId: give the study material inline or by id, not both")
        }
        guard request.conversationId != nil else { return }
        for (index, message) in request.messages.enumerated() where message.role != .system {
            guard message.content.contains(where: { !$0.isWhitespace }) else {
                throw Field.invalid("messages[\(index)].content", "must not be empty: it is stored in the conversation")
            }
            try Field.length(message.content, "messages[\(index)].content", maximum: StoreLimits.textLength)
        }
    }
}
