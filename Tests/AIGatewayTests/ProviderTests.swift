import AIGatewayCore
import Bus
import Contracts
import Foundation
import HTTPClient
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("Remote providers against a mock speaking the OpenAI and Gemini wire formats", .serialized)
struct ProviderTests {
    static let text = "Photosynthesis turns light into sugar. It happens in the leaves of plants."

    @Test("OpenAI chat completions: the request is the real wire format with the key as a bearer token; usage and cost are counted")
    func openAIJSON() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            try await mock.script("openai", [["text": .string("Plants make sugar from light. It happens in leaves. Extra sentence.")]])
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text, maxSentences: 2))
            #expect(response.sentences == ["Plants make sugar from light.", "It happens in leaves."])
            #expect(response.generation == GenerationInfo(provider: "openai", model: "gpt-mock", usage: TokenUsage(promptTokens: 11, completionTokens: 7)))
            let request = try #require(try await mock.requests(containing: "/v1/chat/completions").first)
            #expect(request["headers"]?["authorization"] == .string("Bearer sk-test-openai-secret"))
            #expect(request["json"]?["model"] == .string("gpt-mock"))
            #expect(request["json"]?["messages"]?.arrayValue?.map { $0["role"]?.stringValue } == ["system", "user"])
            #expect(request["json"]?["messages"]?.arrayValue?.last?["content"] == .string(Self.text))
            let usage = try await world.call(AIGateway.usage, UsageRequest())
            let entry = try #require(usage.entries.first { $0.provider == "openai" })
            #expect(entry.model == "gpt-mock" && entry.requests == 1 && entry.promptTokens == 11 && entry.completionTokens == 7)
            #expect(abs(entry.estimatedCostUSD - 0.000025) < 1e-9, "11 × $1/M + 7 × $2/M")
        }
    }

    @Test("Gemini generateContent: key in x-goog-api-key (not the URL), system instruction apart, JSON asked by MIME type")
    func geminiJSON() async throws {
        try await withMockGateway(routes: [.keywords: ["gemini"]]) { world, mock in
            try await mock.script("gemini", [["text": .string("```json\n[\"photosynthesis\", \"light\", \"photosynthesis\"]\n```")]])
            let response = try await world.call(AIGateway.keywords, KeywordsRequest(text: Self.text, maxCount: 5))
            #expect(response.keywords.map(\.term) == ["photosynthesis", "light"])
            #expect(response.keywords.first?.score == 1)
            #expect(response.generation.provider == "gemini" && response.generation.usage == TokenUsage(promptTokens: 13, completionTokens: 5))
            let request = try #require(try await mock.requests(containing: "/v1beta/models/").first)
            #expect(request["path"] == .string("/v1beta/models/gemini-mock:generateContent"))
            #expect(request["headers"]?["x-goog-api-key"] == .string("gm-test-gemini-secret"))
            #expect(request["json"]?["contents"]?.arrayValue?.map { $0["role"]?.stringValue } == ["user"])
            #expect(request["json"]?["systemInstruction"]?["parts"]?.arrayValue?.first?["text"]?.stringValue?.contains("key terms") == true)
            #expect(request["json"]?["generationConfig"]?["responseMimeType"] == .string("application/json"))
        }
    }

    @Test("a 429 with Retry-After (seconds) is retried after that delay")
    func retryAfterSeconds() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            try await mock.script("openai", [["status": .int(429), "headers": .object(["retry-after": .string("1")])], ["text": .string("Done.")]])
            let started = ContinuousClock.now
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text))
            #expect(ContinuousClock.now - started >= .milliseconds(950))
            #expect(response.summary == "Done." && response.generation.fallbacks.isEmpty)
            #expect(try await mock.requests().count == 2)
        }
    }

    @Test("a 503 with Retry-After as an HTTP date is retried at that time")
    func retryAfterHTTPDate() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            // Whole seconds: two seconds ahead is at least one second of waiting.
            let retryAt = formatter.string(from: Date() + 2)
            try await mock.script("openai", [["status": .int(503), "headers": .object(["retry-after": .string(retryAt)])], ["text": .string("Later.")]])
            let started = ContinuousClock.now
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text), timeout: .seconds(10))
            let elapsed = ContinuousClock.now - started
            #expect(response.summary == "Later." && response.generation.fallbacks.isEmpty)
            #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(4), "waited for the date, got \(elapsed)")
        }
    }

    @Test("a provider call that times out is retried, and the retry's answer is used")
    func timeoutRetried() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]], configure: { $0.httpTimeout = .milliseconds(300) }) { world, mock in
            try await mock.script("openai", [["delayMs": .int(2000)], ["text": .string("On the second try.")]])
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text), timeout: .seconds(10))
            #expect(response.summary == "On the second try." && response.generation.provider == "openai")
            #expect(try await mock.requests().count == 2)
        }
    }

    @Test("a 429 with retry-after-ms is retried after that many milliseconds")
    func retryAfterMilliseconds() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            try await mock.script("openai", [["status": .int(429), "headers": .object(["retry-after-ms": .string("400")])], ["text": .string("Done.")]])
            let started = ContinuousClock.now
            _ = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text))
            let elapsed = ContinuousClock.now - started
            #expect(elapsed >= .milliseconds(390) && elapsed < .seconds(2), "milliseconds, not seconds")
        }
    }

    @Test("Gemini's RetryInfo.retryDelay in a 429 sets the wait")
    func geminiRetryDelay() async throws {
        try await withMockGateway(routes: [.summarize: ["gemini"]]) { world, mock in
            try await mock.script("gemini", [["status": .int(429), "retryDelay": .string("0.5s")], ["text": .string("Done.")]])
            let started = ContinuousClock.now
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text))
            #expect(ContinuousClock.now - started >= .milliseconds(490))
            #expect(response.generation.provider == "gemini")
        }
    }

    @Test("5xx answers are retried with back-off until one succeeds")
    func serverErrorsRetried() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            try await mock.script("openai", [["status": .int(500)], ["status": .int(503)], ["text": .string("Third time lucky.")]])
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text))
            #expect(response.summary == "Third time lucky.")
            #expect(try await mock.requests().count == 3)
        }
    }

    @Test("when retries run out the next provider answers, and the failure is reported and counted")
    func fallbackAfterRetries() async throws {
        try await withMockGateway(routes: [.summarize: ["openai", "local"]]) { world, mock in
            try await mock.script("openai", [["status": .int(502)], ["status": .int(502)], ["status": .int(502)]])
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Fixtures.photosynthesis, maxSentences: 1))
            #expect(response.generation.provider == "local")
            #expect(response.generation.fallbacks.map(\.provider) == ["openai"])
            #expect(response.generation.fallbacks.first?.code == "UNAVAILABLE")
            #expect(try await mock.requests().count == 3, "one try and two retries")
            let usage = try await world.call(AIGateway.usage, UsageRequest())
            #expect(usage.entries.first { $0.provider == "openai" }?.errors == 1)
        }
    }

    @Test("the chain gemini -> openai -> local: a 400 is not retried, malformed JSON moves on")
    func fullChain() async throws {
        try await withMockGateway(routes: [.summarize: ["gemini", "openai", "local"]]) { world, mock in
            try await mock.script("gemini", [["status": .int(400), "text": .string("bad prompt")]])
            try await mock.script("openai", [["malformed": .bool(true)]])
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Fixtures.photosynthesis))
            #expect(response.generation.provider == "local")
            #expect(response.generation.fallbacks.map(\.provider) == ["gemini", "openai"])
            #expect(response.generation.fallbacks.map(\.code) == ["INVALID_ARGUMENT", "INTERNAL"])
            #expect(response.generation.fallbacks.first?.message.contains("bad prompt") == true)
            #expect(try await mock.requests().count == 2)
        }
    }

    @Test("when every provider fails the error says why, with each failure in the details")
    func allFail() async throws {
        try await withMockGateway(routes: [.summarize: ["gemini", "openai"]]) { world, mock in
            try await mock.script("gemini", [["status": .int(404)]])
            try await mock.script("openai", [["status": .int(401)]])
            let error = await #expect(throws: BusError.self) { _ = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text)) }
            #expect(error?.code == .unavailable)
            #expect(error?.message.contains("gemini: NOT_FOUND") == true && error?.message.contains("openai: UNAUTHENTICATED") == true)
            #expect(error?.details?.arrayValue?.count == 2)
        }
    }

    @Test("a slow provider times out within the request's deadline and the next provider answers in time")
    func slowProvider() async throws {
        try await withMockGateway(routes: [.summarize: ["openai", "local"]], configure: { $0.httpTimeout = .milliseconds(300); $0.retry.maxRetries = 1 }) { world, mock in
            try await mock.script("openai", [["delayMs": .int(2000)], ["delayMs": .int(2000)]])
            let started = ContinuousClock.now
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Fixtures.photosynthesis), timeout: .seconds(5))
            #expect(ContinuousClock.now - started < .seconds(4), "well inside the 5 s deadline")
            #expect(response.generation.provider == "local")
            #expect(response.generation.fallbacks.first?.code == "DEADLINE_EXCEEDED")
        }
    }

    @Test("the caller's deadline bounds the provider call: DEADLINE_EXCEEDED, not a hang")
    func deadlinePropagates() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            try await mock.script("openai", [["delayMs": .int(5000)]])
            let started = ContinuousClock.now
            let error = await #expect(throws: BusError.self) {
                _ = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text), timeout: .milliseconds(700))
            }
            #expect(error?.code == .deadlineExceeded)
            #expect(ContinuousClock.now - started < .seconds(3), "not the provider's 5 s")
        }
    }

    @Test("the token bucket makes a request wait within its deadline, or fails it at once with RESOURCE_EXHAUSTED")
    func rateLimit() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"], .keywords: ["openai", "local"]], configure: {
            $0.openAI?.requestsPerMinute = 60
            $0.openAI?.burst = 1
        }) { world, mock in
            try await mock.script("openai", [["text": .string("One.")], ["text": .string("Two.")]])
            _ = try await world.call(AIGateway.summarize, SummarizeRequest(text: "First text to summarize."))
            let started = ContinuousClock.now
            let second = try await world.call(AIGateway.summarize, SummarizeRequest(text: "Second text to summarize."))
            #expect(ContinuousClock.now - started >= .milliseconds(800), "60/min: the next token comes a second later")
            #expect(second.summary == "Two.")

            let error = await #expect(throws: BusError.self) {
                _ = try await world.call(AIGateway.summarize, SummarizeRequest(text: "Third text to summarize."), timeout: .milliseconds(400))
            }
            #expect(error?.code == .resourceExhausted, "no waiting in vain: waiting for the token a second away would end in DEADLINE_EXCEEDED")

            let fallback = try await world.call(AIGateway.keywords, KeywordsRequest(text: Fixtures.photosynthesis), timeout: .milliseconds(400))
            #expect(fallback.generation.provider == "local")
            #expect(fallback.generation.fallbacks.first?.code == "RESOURCE_EXHAUSTED")
            #expect(try await mock.requests().count == 2)
        }
    }

    /// A mock provider, a data directory that outlives one gateway, and a clock, for the cache tests.
    static func cacheSetup() async throws -> (MockProvider, URL, ManualWallClock) {
        (try await MockProvider(), FileManager.default.temporaryDirectory.appending(path: "ai-gateway-cache-\(UUID().uuidString)"),
         ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000)))
    }

    /// Runs `body` with a gateway on `directory` and `clock` that summarizes through OpenAI and
    /// caches answers for an hour, with `settings` applied.
    static func withCachingGateway(
        _ mock: MockProvider, directory: URL, clock: ManualWallClock, settings: (inout AIGatewayConfiguration) -> Void = { _ in },
        _ body: (GatewayWorld) async throws -> Void
    ) async throws {
        try await withGateway(mock: mock, routes: [.summarize: ["openai"]], directory: directory, settings: { configuration in
            configuration.cacheTTL = 3600
            configuration.wallClock = clock
            settings(&configuration)
        }, body)
    }

    @Test("remote answers are cached in memory and on disk, keyed by provider, model and prompt, until the TTL")
    func responseCache() async throws {
        let (mock, directory, clock) = try await Self.cacheSetup()
        try await mock.script("openai", [["text": .string("Cached answer.")], ["text": .string("Fresh answer.")]])
        let request = SummarizeRequest(text: Self.text)
        try await Self.withCachingGateway(mock, directory: directory, clock: clock) { world in
            #expect(try await world.call(AIGateway.summarize, request).generation.cached == false)
            let again = try await world.call(AIGateway.summarize, request)
            #expect(again.generation.cached && again.summary == "Cached answer.")
            let otherPrompt = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text, maxSentences: 1))
            #expect(!otherPrompt.generation.cached)
        }
        try await Self.withCachingGateway(mock, directory: directory, clock: clock) { world in
            let afterRestart = try await world.call(AIGateway.summarize, request)
            #expect(afterRestart.generation.cached && afterRestart.summary == "Cached answer.", "the disk cache survives a restart")
            clock.advance(by: 3601)
            let expired = try await world.call(AIGateway.summarize, request)
            #expect(!expired.generation.cached)
            #expect(try await world.call(AIGateway.usage, UsageRequest()).entries.first { $0.provider == "openai" }?.cacheHits == 2)
        }
        #expect(try await mock.requests().count == 3)
        await mock.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test("beyond AI_CACHE_DISK_ENTRIES the oldest answers leave the disk cache (purged at start and every minute)")
    func diskCacheBounded() async throws {
        let (mock, directory, clock) = try await Self.cacheSetup()
        let requests = (1...4).map { SummarizeRequest(text: Self.text + " Variant \($0).") }
        try await Self.withCachingGateway(mock, directory: directory, clock: clock, settings: { $0.diskCacheEntries = 2 }) { (world: GatewayWorld) async throws in
            for request in requests {
                let response = try await world.call(AIGateway.summarize, request)
                #expect(response.generation.cached == false)
                clock.advance(by: 1)  // distinct creation times: "oldest" is well defined
            }
        }
        try await Self.withCachingGateway(mock, directory: directory, clock: clock, settings: { $0.diskCacheEntries = 2 }) { (world: GatewayWorld) async throws in
            var cached: [Bool] = []
            for request in requests.reversed() { cached.append(try await world.call(AIGateway.summarize, request).generation.cached) }
            #expect(cached == [true, true, false, false], "the newest two stayed on disk")
        }
        #expect(try await mock.requests().count == 6)
        await mock.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test("an answer that uses guilt language is refused and the next provider answers")
    func toneGuard() async throws {
        try await withMockGateway(routes: [.encourage: ["openai", "local"]]) { world, mock in
            try await mock.script("openai", [["text": .string("You missed two days, so try harder.")]])
            let response = try await world.call(AIGateway.encourage, EncourageRequest(streak: 3))
            #expect(response.generation.provider == "local")
            #expect(response.generation.fallbacks.first?.code == "FAILED_PRECONDITION")
            #expect(ToneGuard.isWarm(response.message))
        }
    }

    @Test("flashcards from a provider keep only cards that name a given chunk and a valid kind")
    func remoteFlashcards() async throws {
        try await withMockGateway(routes: [.flashcards: ["gemini"]]) { world, mock in
            let cards = """
                {"cards": [{"chunkId": "c2", "kind": "qa", "front": "Where?", "back": "Leaves"},
                           {"chunkId": "c1", "kind": "definition", "front": "Photosynthesis", "back": "Making sugar from light"},
                           {"chunkId": "nope", "kind": "qa", "front": "X", "back": "Y"},
                           {"chunkId": "c1", "kind": "essay", "front": "X", "back": "Y"}]}
                """
            try await mock.script("gemini", [["text": .string(cards)]])
            let response = try await world.call(AIGateway.generateFlashcards, FlashcardsRequest(
                chunks: [TextChunk(id: "c1", text: "Photosynthesis makes sugar."), TextChunk(id: "c2", text: "It happens in leaves.")]))
            #expect(response.cards == [
                GeneratedCard(chunkId: "c1", kind: .definition, front: "Photosynthesis", back: "Making sugar from light"),
                GeneratedCard(chunkId: "c2", kind: .qa, front: "Where?", back: "Leaves"),
            ])
        }
    }

    @Test("every generating method works through each remote provider, answers read from its wire format", arguments: ["openai", "gemini"])
    func everyMethodThroughEachProvider(provider: String) async throws {
        let tasks: [GatewayTask] = [.summarize, .keywords, .flashcards, .reflect, .encourage, .thought]
        try await withMockGateway(routes: Dictionary(uniqueKeysWithValues: tasks.map { ($0, [provider]) })) { world, mock in
            try await mock.script(provider, [
                ["text": .string("Plants make sugar from light.")],
                ["text": .string(#"["chlorophyll", "light"]"#)],
                ["text": .string(#"{"cards": [{"chunkId": "c1", "kind": "qa", "front": "What makes sugar?", "back": "Leaves"}]}"#)],
                ["text": .string("You are becoming someone who understands plants.")],
                ["text": .string("Three days in a row: you are a steady learner.")],
                ["text": .string(#"{"thought": "The kitchen is warm.", "emotion": "calm", "category": "comfort", "confidence": 0.7, "suggestion": "Keep it so."}"#)],
            ])
            let summary = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text))
            #expect(summary.summary == "Plants make sugar from light." && summary.generation.provider == provider)
            let keywords = try await world.call(AIGateway.keywords, KeywordsRequest(text: Self.text))
            #expect(keywords.keywords.map(\.term) == ["chlorophyll", "light"] && keywords.generation.provider == provider)
            let cards = try await world.call(AIGateway.generateFlashcards, FlashcardsRequest(chunks: [TextChunk(id: "c1", text: Self.text)]))
            #expect(cards.cards == [GeneratedCard(chunkId: "c1", kind: .qa, front: "What makes sugar?", back: "Leaves")])
            #expect(cards.generation.provider == provider)
            let reflection = try await world.call(AIGateway.reflect, ReflectRequest(text: Self.text, identity: "Curious Botanist"))
            #expect(reflection.reflection.contains("understands plants") && reflection.generation.provider == provider)
            let encouragement = try await world.call(AIGateway.encourage, EncourageRequest(streak: 3))
            #expect(encouragement.message.contains("steady learner") && encouragement.generation.provider == provider)
            let thought = try await world.call(AIGateway.thought, ThoughtRequest(notes: [HouseNote(answer: "The kitchen stays warm.")]))
            #expect(thought.thought == "The kitchen is warm." && thought.emotion == .calm && thought.generation.provider == provider)
            #expect(try await mock.requests().count == 6, "each answer came from \(provider)")
        }
    }

    @Test("a house thought from a provider is read from its JSON")
    func remoteThought() async throws {
        try await withMockGateway(routes: [.thought: ["openai"]]) { world, mock in
            try await mock.script("openai", [["text": .string(#"{"thought": "I feel the draft by the door.", "emotion": "concerned", "category": "comfort", "confidence": 0.8, "suggestion": "Seal the door.", "context": "Where does the cold come in?"}"#)]])
            let thought = try await world.call(AIGateway.thought, ThoughtRequest(notes: [HouseNote(answer: "The front door lets cold air in.")]))
            #expect(thought.thought == "I feel the draft by the door." && thought.emotion == .concerned && thought.category == .comfort)
            #expect(thought.confidence == 0.8 && thought.suggestion == "Seal the door." && thought.context == "Where does the cold come in?")
        }
    }

    @Test("transcription: Whisper multipart upload, verbose_json segments, duration-weighted confidence, audio minutes costed")
    func transcription() async throws {
        try await withMockGateway { world, mock in
            let audio = Data((0..<2048).map { UInt8($0 % 251) })
            let response = try await world.call(AIGateway.transcribe, TranscribeRequest(language: "en", fileName: "note.wav"), attachment: audio)
            #expect(response.text == "show math materials")
            #expect(response.segments.map(\.text) == ["show math", "materials"])
            #expect(response.duration == 4.2 && response.language == "english")
            let expected = (exp(-0.1) * 0.99 * 1.6 + exp(-0.3) * 0.98 * 2.6) / 4.2
            #expect(abs((response.confidence ?? 0) - expected) < 0.001)
            #expect(response.generation.provider == "openai" && response.generation.model == "whisper-1")
            let form = try #require(try await mock.requests(containing: "/v1/audio/transcriptions").first?["form"])
            #expect(form["model"] == .string("whisper-1") && form["response_format"] == .string("verbose_json") && form["language"] == .string("en"))
            #expect(form["file"]?["filename"] == .string("note.wav") && form["file"]?["bytes"] == .int(2048))
            let usage = try await world.call(AIGateway.usage, UsageRequest())
            let entry = try #require(usage.entries.first { $0.model == "whisper-1" })
            #expect(entry.audioSeconds == 4.2 && abs(entry.estimatedCostUSD - 0.006 * 4.2 / 60) < 1e-6)
        }
    }

    @Test("transcription has a rate limit of its own (Whisper's 50/min in the seeds): beyond it RESOURCE_EXHAUSTED, while chat still runs")
    func transcriptionRateLimit() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]], configure: {
            $0.openAI?.transcriptionRequestsPerMinute = 1
            $0.openAI?.burst = 1
        }) { world, mock in
            let audio = Data(repeating: 7, count: 512)
            _ = try await world.call(AIGateway.transcribe, TranscribeRequest(fileName: "a.wav"), attachment: audio)
            let limited = await #expect(throws: BusError.self) {
                _ = try await world.call(AIGateway.transcribe, TranscribeRequest(fileName: "b.wav"), timeout: .seconds(2), attachment: audio)
            }
            #expect(limited?.code == .resourceExhausted && limited?.message.contains("1 requests/min") == true)
            #expect(try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text)).generation.provider == "openai",
                    "chat completions have their own bucket")
            #expect(try await mock.requests(containing: "/v1/audio/transcriptions").count == 1)
        }
    }

    @Test("API keys never appear in answers, errors or providers, even when a provider echoes them")
    func keysStaySecret() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            try await mock.script("openai", [["status": .int(401), "text": .string("Incorrect API key provided: sk-test-openai-secret")]])
            let error = await #expect(throws: BusError.self) { _ = try await world.call(AIGateway.summarize, SummarizeRequest(text: Self.text)) }
            #expect(error?.message.contains("sk-test-openai-secret") == false)
            #expect(error?.message.contains("[redacted]") == true)
            #expect(error?.details?.jsonText.contains("sk-test") == false)
            let providers = try await world.call(AIGateway.providers, Empty())
            #expect(providers.providers.map(\.name) == ["local", "gemini", "openai"])
            #expect(providers.providers.allSatisfy { $0.name == "local" || $0.hasKey })
            #expect(!(try WireCoding.encode(providers)).contains(Data("secret".utf8)))
            #expect(providers.routes["chat"] == ["gemini", "openai", "local"], "default route: configured remotes, then local")
        }
    }

    @Test("a request can pin the local provider whatever the route")
    func pinnedProvider() async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]]) { world, mock in
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: Fixtures.photosynthesis, provider: "local"))
            #expect(response.generation.provider == "local")
            #expect(try await mock.requests().isEmpty)
        }
    }
}
