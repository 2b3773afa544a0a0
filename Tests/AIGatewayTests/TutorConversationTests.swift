import AIGatewayCore
import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

@Suite("Stored tutor conversations through a remote provider: history in the prompt, cancellation, failures to store", .serialized)
struct TutorConversationTests {
    @Test("later turns send the stored conversation to the model: its latest messages oldest first, then the new question, 5 in all")
    func historyInPrompt() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await withStore(world) { store in
                try await mock.script("openai", [["text": .string("Answer one.")], ["text": .string("Answer two.")],
                                                 ["text": .string("Answer three.")], ["text": .string("Answer four.")]])
                let conversation = try await store.conversation()
                for turn in ["one", "two", "three", "four"] {
                    _ = try await world.chat(ChatRequest(messages: question("Question \(turn)?"), conversationId: conversation.id))
                }
                let prompts = try await mock.requests().map { request in
                    (request["json"]?["messages"]?.arrayValue ?? []).dropFirst().map { $0["content"]?.stringValue ?? "" }
                }
                #expect(prompts.count == 4)
                #expect(prompts.first == ["Question one?"])
                #expect(prompts.dropFirst().first == ["Question one?", "Answer one.", "Question two?"])
                #expect(prompts.last == ["Question two?", "Answer two.", "Question three?", "Answer three.", "Question four?"])
                let stored = try await store.messages(conversation.id)
                #expect(stored.map(\.text) == ["one", "two", "three", "four"].flatMap { ["Question \($0)?", "Answer \($0)."] })
            }
        }
    }

    @Test("a retried call with the same idem stores the turn once, with the same ids, and gets the first attempt's prompt (so the cached answer)")
    func retryStoresOnce() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await withStore(world) { store in
                try await mock.script("openai", [["text": .string("Chlorophyll is a green pigment.")], ["text": .string("A later answer.")]])
                let conversation = try await store.conversation()
                let request = ChatRequest(messages: question("What is chlorophyll?"), conversationId: conversation.id)
                let first = try await world.chat(request, idem: "turn-1")
                let retry = try await world.chat(request, idem: "turn-1")
                #expect(retry.messageIds == first.messageIds && retry.answerMessageId == first.answerMessageId)
                #expect(retry.text == first.text && retry.generation.cached)
                #expect(try await mock.requests().count == 1, "the retry's prompt leaves out what the first attempt stored")
                #expect(try await store.messages(conversation.id).map(\.text) == ["What is chlorophyll?", "Chlorophyll is a green pigment."])
                let next = try await world.chat(request, idem: "turn-2")
                #expect(next.answerMessageId != first.answerMessageId && next.text == "A later answer.")
                #expect(try await store.messages(conversation.id).count == 4)
            }
        }
    }

    @Test("a cancelled answer is stored as far as it was said, after the question; the reply names both messages")
    func cancelledAnswerStored() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await withStore(world) { store in
                let long = (1...40).map { "word\($0)" }.joined(separator: " ")
                try await mock.script("openai", [["text": .string(long), "chunkDelayMs": .int(100)]])
                let conversation = try await store.conversation()
                let (call, _) = try await answerUnderWay(world, requestId: "cancel-1", question: "Tell me everything.", conversationId: conversation.id)
                _ = try await world.call(AIGateway.cancelChat, ChatCancelRequest(requestId: "cancel-1"))
                let response = try await call.value
                #expect(response.finishReason == .cancelled && !response.text.isEmpty && long.hasPrefix(response.text) && response.text != long)
                let stored = try await store.messages(conversation.id)
                #expect(stored.map(\.text) == ["Tell me everything.", response.text])
                #expect(stored.map(\.id) == (response.messageIds ?? []) + [response.answerMessageId].compactMap { $0 })
            }
        }
    }

    @Test("an answer that cannot be stored fails the call with store's status, saying it was not saved; the stream ends with an error")
    func storeFailureFailsTheCall() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await withStore(world) { store in
                try await mock.script("openai", [["text": .string("one two three four five six seven eight"), "chunkDelayMs": .int(150)]])
                let conversation = try await store.conversation()
                let (call, events) = try await answerUnderWay(world, requestId: "lost-1", question: "Count for me.", conversationId: conversation.id)
                _ = try await store.call(Store.deleteConversation, RecordID(id: conversation.id))
                let failure: BusError? = await {
                    do {
                        _ = try await call.value
                        return nil
                    } catch {
                        return error as? BusError
                    }
                }()
                #expect(failure?.code == .notFound)
                #expect(failure?.message.hasPrefix("the answer was not saved in conversation '\(conversation.id)'") == true)
                try await eventually("error event") { GatewayWorld.chatEvents(events).last?.kind == .error }
                #expect(GatewayWorld.chatEvents(events).last?.error == failure?.description)
            }
        }
    }

    /// Starts a streamed `chat` in the conversation and waits until its (slowly scripted) answer
    /// is under way: two events published.
    private func answerUnderWay(
        _ world: GatewayWorld, requestId: String, question text: String, conversationId: String
    ) async throws -> (Task<ChatResponse, any Error>, EventCollector) {
        let events = try await world.subscribe(requestId: requestId)
        let call = Task {
            try await world.chat(ChatRequest(requestId: requestId, messages: question(text), stream: true, conversationId: conversationId))
        }
        try await eventually("first tokens") { GatewayWorld.chatEvents(events).count >= 2 }
        return (call, events)
    }
}
