import AIGatewayCore
import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

@Suite("The tutor streaming through remote providers: SSE, resets, fallbacks, caching and cancellation", .serialized)
struct ChatStreamTests {
    static let conversation: [ChatMessage] = (1...9).map { index in
        ChatMessage(role: index % 2 == 1 ? .user : .assistant, content: "message \(index)")
    }

    func chat(_ id: String, stream: Bool = true, provider: String? = nil, messages: [ChatMessage] = conversation) -> ChatRequest {
        ChatRequest(requestId: id, messages: messages, context: StudyContext(title: "Photosynthesis", chunks: [TextChunk(id: "c", text: "Chlorophyll is green.")]),
                    stream: stream, provider: provider)
    }

    @Test("OpenAI SSE: tokens published in order, then a final event with the full text and usage; only the last 5 messages are sent")
    func openAIStream() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await mock.script("openai", [["text": .string("Chlorophyll absorbs red and blue light.")]])
            let events = try await world.subscribe(requestId: "S1")  // topics are lower case: S1 and s1 are one stream
            let response = try await world.call(AIGateway.chat, chat("s1"))
            #expect(response.text == "Chlorophyll absorbs red and blue light.")
            #expect(response.generation.usage == TokenUsage(promptTokens: 11, completionTokens: 7))
            try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
            let received = GatewayWorld.chatEvents(events)
            #expect(received.map(\.index) == Array(0..<received.count))
            #expect(received.filter { $0.kind == .token }.count == 6)
            #expect(received.compactMap(\.delta).joined() == response.text)
            #expect(received.last?.finishReason == .stop && received.last?.generation?.usage.totalTokens == 18)

            let body = try #require(try await mock.requests().first?["json"])
            #expect(body["stream"] == .bool(true) && body["stream_options"]?["include_usage"] == .bool(true))
            let sent = body["messages"]?.arrayValue ?? []
            #expect(sent.first?["role"] == .string("system"))
            #expect(sent.first?["content"]?.stringValue?.contains("Chlorophyll is green.") == true, "the study context is in the system prompt")
            #expect(sent.dropFirst().map { $0["content"]?.stringValue } == ["message 5", "message 6", "message 7", "message 8", "message 9"])
        }
    }

    @Test("Gemini streamGenerateContent?alt=sse with CRLF events: roles user/model, the answer assembled from the events")
    func geminiStream() async throws {
        try await withMockGateway(routes: [.chat: ["gemini"]]) { world, mock in
            try await mock.script("gemini", [["text": .string("Light energy splits water.")]])
            let events = try await world.subscribe(requestId: "g1")
            let response = try await world.call(AIGateway.chat, chat("g1"))
            #expect(response.text == "Light energy splits water.")
            #expect(response.generation == GenerationInfo(provider: "gemini", model: "gemini-mock", usage: TokenUsage(promptTokens: 13, completionTokens: 5)))
            try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
            #expect(GatewayWorld.chatEvents(events).compactMap(\.delta).joined() == response.text)
            let request = try #require(try await mock.requests().first)
            #expect(request["path"] == .string("/v1beta/models/gemini-mock:streamGenerateContent?alt=sse"))
            #expect(request["json"]?["contents"]?.arrayValue?.map { $0["role"]?.stringValue } == ["user", "model", "user", "model", "user"])
        }
    }

    @Test("a stream that breaks mid-answer is reset and retried; the final text is whole")
    func brokenStream() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            let text = "one two three four five"
            try await mock.script("openai", [["text": .string(text), "breakAfter": .int(2)], ["text": .string(text)]])
            let events = try await world.subscribe(requestId: "b1")
            let response = try await world.call(AIGateway.chat, chat("b1"))
            #expect(response.text == text)
            try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
            let kinds = GatewayWorld.chatEvents(events).map(\.kind)
            #expect(kinds.prefix(3) == [.token, .token, .reset])
            #expect(kinds.last == .final)
            let afterReset = GatewayWorld.chatEvents(events).drop { $0.kind != .reset }.compactMap(\.delta).joined()
            #expect(afterReset == text)
            #expect(try await mock.requests().count == 2)
        }
    }

    @Test("malformed stream data moves on to the next provider after a reset")
    func malformedStreamFallsBack() async throws {
        try await withMockGateway(routes: [.chat: ["gemini", "openai"]]) { world, mock in
            try await mock.script("gemini", [["text": .string("half an answer"), "malformed": .bool(true)]])
            try await mock.script("openai", [["text": .string("A whole answer.")]])
            let events = try await world.subscribe(requestId: "m1")
            let response = try await world.call(AIGateway.chat, chat("m1"))
            #expect(response.text == "A whole answer.")
            #expect(response.generation.provider == "openai" && response.generation.fallbacks.first?.provider == "gemini")
            try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
            #expect(GatewayWorld.chatEvents(events).map(\.kind).contains(.reset))
        }
    }

    @Test("complete streamed answers are cached; a repeat is one token and a final event marked cached")
    func streamedAnswerCached() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await mock.script("openai", [["text": .string("Cache me if you can.")]])
            _ = try await world.call(AIGateway.chat, chat("c1"))
            let events = try await world.subscribe(requestId: "c2")
            let again = try await world.call(AIGateway.chat, chat("c2"))
            #expect(again.generation.cached && again.text == "Cache me if you can.")
            try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
            #expect(GatewayWorld.chatEvents(events).map(\.kind) == [.token, .final])
            #expect(try await mock.requests().count == 1)
        }
    }

    @Test("chat.cancel stops an answer mid-stream: the call returns the text so far, finish reason cancelled, nothing cached")
    func cancel() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            let long = (1...40).map { "word\($0)" }.joined(separator: " ")
            try await mock.script("openai", [["text": .string(long), "chunkDelayMs": .int(100)], ["text": .string("Again.")]])
            let events = try await world.subscribe(requestId: "x1")
            let call = Task { try await world.call(AIGateway.chat, chat("x1")) }
            try await eventually("first tokens") { GatewayWorld.chatEvents(events).count >= 2 }
            await #expect(throws: BusError.notFound("no chat answer x1 is in progress")) {
                _ = try await world.call(AIGateway.cancelChat, ChatCancelRequest(requestId: "x1"), user: "u2")
            }
            let cancelled = try await world.call(AIGateway.cancelChat, ChatCancelRequest(requestId: "x1"))
            #expect(cancelled.cancelled)
            let response = try await call.value
            #expect(response.finishReason == .cancelled)
            #expect(!response.text.isEmpty && response.text.count < long.count && long.hasPrefix(response.text))
            try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
            #expect(GatewayWorld.chatEvents(events).last?.finishReason == .cancelled)
            await #expect(throws: BusError.self) { _ = try await world.call(AIGateway.cancelChat, ChatCancelRequest(requestId: "x1")) }
            let repeated = try await world.call(AIGateway.chat, chat("x2"))
            #expect(!repeated.generation.cached && repeated.text == "Again.")
        }
    }

    @Test("two answers cannot share a request id while the first runs")
    func duplicateRequestId() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await mock.script("openai", [["text": .string("slow answer here"), "chunkDelayMs": .int(300)]])
            let first = Task { try await world.call(AIGateway.chat, chat("d1")) }
            try await eventually("first request at the provider") { try await !mock.requests().isEmpty }
            await #expect(throws: BusError.alreadyExists("a chat answer with requestId d1 is already in progress")) {
                _ = try await world.call(AIGateway.chat, chat("d1", messages: [ChatMessage(role: .user, content: "other")]))
            }
            _ = try await first.value
        }
    }

    @Test("without stream the chat call returns the whole answer and publishes nothing")
    func unstreamed() async throws {
        try await withMockGateway(routes: [.chat: ["openai"]]) { world, mock in
            try await mock.script("openai", [["text": .string("Quiet answer.")]])
            let events = try await world.subscribe(requestId: "q1")
            let response = try await world.call(AIGateway.chat, chat("q1", stream: false))
            #expect(response.text == "Quiet answer." && response.requestId == "q1")
            try await Task.sleep(for: .milliseconds(200))
            #expect(GatewayWorld.chatEvents(events).isEmpty)
        }
    }
}
