import AIGatewayCore
import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

@Suite("ai-gateway over the bus with the local provider (the default)", .serialized)
struct GatewayBusTests {
    @Test("summarize, keywords and flashcards answer locally, naming provider and model")
    func textMethods() async throws {
        try await withGateway { world in
            let summary = try await world.call(AIGateway.summarize, SummarizeRequest(text: Fixtures.photosynthesis, maxSentences: 2))
            #expect(summary.sentences.count == 2)
            #expect(summary.summary == summary.sentences.joined(separator: " "))
            #expect(summary.generation.provider == "local")
            #expect(summary.generation.model == "local-summarize")
            #expect(summary.generation.usage.estimated)
            let keywords = try await world.call(AIGateway.keywords, KeywordsRequest(text: Fixtures.photosynthesis, maxCount: 5))
            #expect(keywords.keywords.count == 5)
            let cards = try await world.call(AIGateway.generateFlashcards, FlashcardsRequest(
                chunks: [TextChunk(id: "chunk-1", text: Fixtures.photosynthesis)], maxCards: 6, maxCardsPerChunk: 6))
            #expect(cards.cards.count == 6)
            #expect(cards.cards.allSatisfy { $0.chunkId == "chunk-1" })
        }
    }

    @Test("a repeated request is answered from the cache")
    func localCache() async throws {
        try await withGateway { world in
            let request = KeywordsRequest(text: Fixtures.frenchRevolution, maxCount: 4)
            let first = try await world.call(AIGateway.keywords, request)
            let second = try await world.call(AIGateway.keywords, request)
            #expect(!first.generation.cached)
            #expect(second.generation.cached)
            #expect(second.keywords == first.keywords)
        }
    }

    @Test("reflect, encourage and thought answer warmly without a model")
    func toneMethods() async throws {
        try await withGateway { world in
            let encouragement = try await world.call(AIGateway.encourage, EncourageRequest(accuracy: 0.92, streak: 5, identity: "Lifelong Learner"))
            #expect(encouragement.message.contains("92%") && encouragement.message.contains("Lifelong Learner"))
            let reflection = try await world.call(AIGateway.reflect, ReflectRequest(text: "I practised French verbs and irregular conjugations; it was tough."))
            #expect(!reflection.reflection.isEmpty)
            let thought = try await world.call(AIGateway.thought, ThoughtRequest(notes: [HouseNote(question: "What worries you?", answer: "The smoke alarm in the hallway keeps beeping.")]))
            #expect(thought.category == .safety)
            #expect(thought.generation.provider == "local")
        }
    }

    @Test("the tutor streams its local answer token by token on ai.stream.<requestId>, in order, then a final event")
    func localChatStream() async throws {
        try await withGateway { world in
            let events = try await world.subscribe(requestId: "req-local-1")
            let response = try await world.call(AIGateway.chat, ChatRequest(
                requestId: "req-local-1", messages: [ChatMessage(role: .user, content: "What is chlorophyll?")],
                context: StudyContext(chunks: [TextChunk(id: "c", text: Fixtures.photosynthesis)]), stream: true))
            #expect(response.text.hasPrefix("No language model is configured"))
            #expect(response.finishReason == .stop)
            #expect(response.generation.provider == "local")
            try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
            let received = GatewayWorld.chatEvents(events)
            #expect(received.map(\.index) == Array(0..<received.count))
            #expect(received.dropLast().allSatisfy { $0.kind == .token })
            #expect(received.dropLast().compactMap(\.delta).joined() == response.text)
            #expect(received.last?.text == response.text)
            #expect(received.last?.generation?.provider == "local")
            #expect(received.allSatisfy { $0.requestId == "req-local-1" })
        }
    }

    @Test("voice commands: parse built-ins, register the user's own patterns over the bus, list and remove them")
    func intentsOverTheBus() async throws {
        try await withGateway { world in
            let parsed = try await world.call(AIGateway.parseIntent, IntentParseRequest(text: "Show biology materials"))
            #expect(parsed.match?.intent == "showSubjectMaterials")
            #expect(parsed.match?.parameters == ["subject": "biology"])

            let registered = try await world.call(AIGateway.registerIntents, IntentRegisterRequest(commands: [
                IntentRegistration(pattern: "quiz me on * [please]", intent: "quiz", category: .action, parameters: ["topic"]),
            ]))
            #expect(registered.commands.count == 1)
            let own = try #require(registered.commands.first)
            #expect(own.userId == "u1" && !own.builtIn && own.createdAt == own.updatedAt)

            let quiz = try await world.call(AIGateway.parseIntent, IntentParseRequest(text: "Quiz me on the Calvin cycle, please"))
            #expect(quiz.match?.intent == "quiz")
            #expect(quiz.match?.parameters == ["topic": "the calvin cycle"])
            let otherUser = try await world.call(AIGateway.parseIntent, IntentParseRequest(text: "quiz me on cells"), user: "u2")
            #expect(otherUser.match == nil, "patterns are per user")

            let again = try await world.call(AIGateway.registerIntents, IntentRegisterRequest(commands: [
                IntentRegistration(pattern: "Quiz me on * [please]", intent: "quizMe", category: .action),
            ]))
            #expect(again.commands.first?.id == own.id, "the same pattern is replaced, not added")
            #expect(try await world.call(AIGateway.parseIntent, IntentParseRequest(text: "quiz me on cells")).match?.intent == "quizMe")

            let listed = try await world.call(AIGateway.listIntents, Empty())
            #expect(listed.commands.filter { !$0.builtIn }.map(\.intent) == ["quizMe"])
            #expect(listed.commands.contains { $0.builtIn && $0.pattern == "show * materials" })

            await #expect(throws: BusError.notFound("command pattern \(own.id) not found")) {
                _ = try await world.call(AIGateway.removeIntents, IntentRemoveRequest(ids: [own.id]), user: "u2")
            }
            let remaining = try await world.call(AIGateway.removeIntents, IntentRemoveRequest(ids: [own.id]))
            #expect(!remaining.commands.contains { !$0.builtIn })
            #expect(try await world.call(AIGateway.parseIntent, IntentParseRequest(text: "quiz me on cells")).match == nil)
        }
    }

    @Test("transcription with an empty route (AI_ROUTE_TRANSCRIBE=) fails with FAILED_PRECONDITION saying how to configure one")
    func transcribeUnconfigured() async throws {
        try await withGateway(routes: [.transcribe: []]) { world in
            let error = await #expect(throws: BusError.self) {
                _ = try await world.call(AIGateway.transcribe, TranscribeRequest(), attachment: Data(repeating: 1, count: 100))
            }
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message.contains("OPENAI_API_KEY") == true)
        }
    }

    @Test("bad requests are INVALID_ARGUMENT naming the field and the limit; the user header is required")
    func validation() async throws {
        try await withGateway { world in
            func code<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String? = "u1", attachment: Data? = nil) async -> (StatusCode, String)? {
                do {
                    _ = try await world.call(method, request, user: user, attachment: attachment)
                    return nil
                } catch {
                    return (error.code, error.message)
                }
            }
            let missingUser = await code(AIGateway.summarize, SummarizeRequest(text: "Some text here."), user: nil)
            #expect(missingUser?.0 == .invalidArgument && missingUser?.1.contains("user") == true)
            let tooMany = await code(AIGateway.summarize, SummarizeRequest(text: "Some text.", maxSentences: 21))
            #expect(tooMany?.1 == "field 'maxSentences' must be between 1 and 20, got 21")
            let huge = await code(AIGateway.keywords, KeywordsRequest(text: String(repeating: "a", count: AIGatewayLimits.textBytes + 1)))
            #expect(huge?.0 == .invalidArgument && huge?.1 == "field 'text' must be at most \(AIGatewayLimits.textBytes) bytes of UTF-8, got \(AIGatewayLimits.textBytes + 1)")
            let empty = await code(AIGateway.summarize, SummarizeRequest(text: "   "))
            #expect(empty?.1 == "field 'text' must not be empty")
            let duplicate = await code(AIGateway.generateFlashcards, FlashcardsRequest(chunks: [TextChunk(id: "a", text: "x"), TextChunk(id: "a", text: "y")]))
            #expect(duplicate?.1 == "field 'chunks[1].id' must be unique, got 'a' again")
            let streamWithoutId = await code(AIGateway.chat, ChatRequest(messages: [ChatMessage(role: .user, content: "hi")], stream: true))
            #expect(streamWithoutId?.0 == .invalidArgument && streamWithoutId?.1.contains("requestId") == true)
            let noTokens = await code(AIGateway.chat, ChatRequest(messages: [ChatMessage(role: .user, content: "hi")], maxTokens: 0))
            #expect(noTokens?.1 == "field 'maxTokens' must be between 1 and 8192, got 0")
            let badId = await code(AIGateway.chat, ChatRequest(requestId: "a.b", messages: [ChatMessage(role: .user, content: "hi")]))
            #expect(badId?.1.contains("A-Z a-z 0-9 _ -") == true)
            let bigAudio = await code(AIGateway.transcribe, TranscribeRequest(), attachment: Data(count: AIGatewayLimits.audioBytes + 1))
            #expect(bigAudio?.0 == .invalidArgument && bigAudio?.1 == "field 'attachment' must be at most \(AIGatewayLimits.audioBytes) bytes, got \(AIGatewayLimits.audioBytes + 1)")
            let noAudio = await code(AIGateway.transcribe, TranscribeRequest())
            #expect(noAudio?.1.hasPrefix("field 'attachment'") == true)
            let unknownProvider = await code(AIGateway.summarize, SummarizeRequest(text: "Some text.", provider: "gemini"))
            #expect(unknownProvider?.0 == .invalidArgument && unknownProvider?.1.contains("gemini") == true)
            let noNumbers = await code(AIGateway.encourage, EncourageRequest(identity: "Reader"))
            #expect(noNumbers?.0 == .invalidArgument)
            let badPattern = await code(AIGateway.registerIntents, IntentRegisterRequest(commands: [IntentRegistration(pattern: "[x", intent: "x", category: .action)]))
            #expect(badPattern?.1.hasPrefix("field 'commands[0].pattern'") == true)
        }
    }

    @Test("usage counts requests and cache hits per provider and model, per user; allUsers sums everyone")
    func usage() async throws {
        try await withGateway { world in
            let request = SummarizeRequest(text: Fixtures.photosynthesis)
            _ = try await world.call(AIGateway.summarize, request)
            _ = try await world.call(AIGateway.summarize, request)
            _ = try await world.call(AIGateway.summarize, request, user: "u2")
            let mine = try await world.call(AIGateway.usage, UsageRequest())
            let entry = try #require(mine.entries.first { $0.model == "local-summarize" })
            #expect(entry.provider == "local" && entry.requests == 2 && entry.cacheHits == 1 && entry.errors == 0)
            #expect(entry.promptTokens > 0 && entry.estimatedCostUSD == 0)
            let everyone = try await world.call(AIGateway.usage, UsageRequest(allUsers: true))
            #expect(everyone.entries.first { $0.model == "local-summarize" }?.requests == 3)
            #expect(everyone.totalRequests == 3)
            // Every user's usage is for operators; an app sees its user's own.
            var asEdge = CallOptions(user: "u1", timeout: .seconds(20))
            asEdge.claimedCaller = try BusIdentity(role: .edge, name: "web")
            #expect(try await world.client.call(AIGateway.usage, UsageRequest(), options: asEdge).totalRequests == 2)
            let refused = await #expect(throws: BusError.self) { try await world.client.call(AIGateway.usage, UsageRequest(allUsers: true), options: asEdge) }
            #expect(refused?.code == .permissionDenied)
            let providers = await #expect(throws: BusError.self) { try await world.client.call(AIGateway.providers, Empty(), options: asEdge) }
            #expect(providers?.code == .permissionDenied)
        }
    }

    @Test("providers lists local and each method's route; _describe lists every method")
    func describe() async throws {
        try await withGateway { world in
            let providers = try await world.call(AIGateway.providers, Empty())
            #expect(providers.providers.map(\.name) == ["local"])
            #expect(providers.routes["chat"] == ["local"])
            #expect(providers.routes["transcribe"] == ["local"] && providers.routes["speak"] == ["local"])
            let description = try await world.call(Reserved.describe("ai-gateway"), Empty())
            let names = Set(description.methods.map(\.name))
            for method in AIGateway.methods { #expect(names.contains(method.name), "\(method.name) is not served") }
            #expect(description.events.map(\.topic) == ["ai.stream.<requestId>"])
        }
    }
}
