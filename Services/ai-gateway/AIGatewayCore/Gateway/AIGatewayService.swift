import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// The `ai-gateway` service: its handlers on the bus, the providers behind them, the response
/// cache, the usage ledger and the voice-command engine.
///
/// ```swift
/// await ServiceRunner.run("ai-gateway") { context in
///     [try AIGatewayService.fromEnvironment(context)]
/// }
/// ```
///
/// As a `Service` it serves until graceful shutdown (finishing requests in flight), writes the
/// usage ledger every second and at the end, and purges expired cache rows every minute.
public final class AIGatewayService: Service, Sendable {
    public let host: ServiceHost
    let intents: IntentEngine
    let dispatcher: Dispatcher
    let chats = ChatRegistry()
    let bus: Bus
    private let http: HTTPClient
    private let clock: any WallClock
    private let configuration: GatewayConfiguration

    /// A gateway on `bus` with `configuration`, keeping its cache, ledger and users' commands in
    /// `database`.
    public init(bus: Bus, configuration: GatewayConfiguration, database: ServiceDatabase, clock: any WallClock = SystemWallClock(), logger: Logger) throws {
        self.bus = bus
        self.configuration = configuration
        self.clock = clock
        http = try HTTPClient(logger: logger)
        let cache = ResponseCache(database: database, ttl: configuration.cacheTTL, memoryEntries: configuration.memoryCacheEntries,
                                  diskEntries: configuration.diskCacheEntries, clock: clock, logger: logger)
        dispatcher = Dispatcher(configuration: configuration, http: http, cache: cache, ledger: UsageLedger(database: database, clock: clock, logger: logger))
        intents = IntentEngine(cacheSize: configuration.intentCacheSize, store: IntentStore(database: database))
        host = ServiceHost(bus: bus, contract: AIGateway, credit: configuration.credit, logger: logger)
        host.serveBackup(of: database)
        registerHandlers()
    }

    /// The gateway as the environment configures it, with its database in DATA_DIR.
    public static func fromEnvironment(_ context: ProcessContext) throws -> AIGatewayService {
        let configuration = try GatewayConfiguration.fromEnvironment(context.environment)
        let database = try GatewayDatabase.open(in: try context.environment.dataDirectory(service: context.name), logger: context.logger)
        let service = try AIGatewayService(bus: context.bus, configuration: configuration, database: database, logger: context.logger)
        context.logger.info("providers", metadata: [
            "remote": "\(configuration.remotes.map { "\($0.name)(\($0.chatModel), key: \($0.apiKey == nil ? "no" : "yes"))" })",
            "routes": "\(configuration.routes.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.method)=\($0.value.joined(separator: ">"))" })",
        ])
        return service
    }

    public func run() async throws {
        defer { dispatcher.ledger.flush() }
        do {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await self.host.run() }
                group.addTask { await self.maintain() }
            }
        } catch {
            await http.shutdown()
            throw error
        }
        await http.shutdown()
    }

    /// Writes the ledger every flush interval and purges the cache every minute, until graceful
    /// shutdown.
    private func maintain() async {
        var lastPurge = ContinuousClock.now
        dispatcher.cache.purge()
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.configuration.ledgerFlushInterval) }
            dispatcher.ledger.flush()
            if ContinuousClock.now - lastPurge > .seconds(60) {
                dispatcher.cache.purge()
                lastPurge = .now
            }
        }
    }

    // MARK: Handlers

    private func registerHandlers() {
        serve(AIGateway.summarize) { service, request, context in try await service.summarize(request, context) }
        serve(AIGateway.keywords) { service, request, context in try await service.keywords(request, context) }
        serve(AIGateway.generateFlashcards) { service, request, context in try await service.flashcards(request, context) }
        serve(AIGateway.reflect) { service, request, context in try await service.reflect(request, context) }
        serve(AIGateway.encourage) { service, request, context in try await service.encourage(request, context) }
        serve(AIGateway.thought) { service, request, context in try await service.thought(request, context) }
        serve(AIGateway.chat) { service, request, context in try await service.chat(request, context) }
        serve(AIGateway.cancelChat) { service, request, context in
            let user = try context.requireUser()
            guard service.chats.cancel(request.requestId, user: user) else {
                throw BusError.notFound("no chat answer \(request.requestId) is in progress")
            }
            return ChatCancelResponse(requestId: request.requestId, cancelled: true)
        }
        serve(AIGateway.parseIntent) { service, request, context in
            let user = try context.requireUser()
            guard (1...500).contains(request.text.count) else { throw BusError.invalidArgument("text must have 1...500 characters, got \(request.text.count)") }
            return try service.intents.parse(request.text, user: user)
        }
        serve(AIGateway.registerIntents) { service, request, context in
            let user = try context.requireUser()
            guard (1...100).contains(request.commands.count) else {
                throw BusError.invalidArgument("commands must hold 1...100 patterns, got \(request.commands.count)")
            }
            return IntentListResponse(commands: try service.intents.register(request.commands, user: user, now: service.clock.now()))
        }
        serve(AIGateway.listIntents) { service, _, context in
            IntentListResponse(commands: try service.intents.list(user: try context.requireUser()))
        }
        serve(AIGateway.removeIntents) { service, request, context in
            let user = try context.requireUser()
            guard (1...100).contains(request.ids.count) else { throw BusError.invalidArgument("ids must hold 1...100 ids, got \(request.ids.count)") }
            return IntentListResponse(commands: try service.intents.remove(ids: request.ids, user: user))
        }
        serve(AIGateway.transcribe) { service, request, context in try await service.transcribe(request, context) }
        serve(AIGateway.usage) { service, request, context in
            let user = try context.requireUser()
            return UsageResponse(entries: try service.dispatcher.ledger.report(user: request.allUsers == true ? nil : user, since: request.since))
        }
        serve(AIGateway.providers) { service, _, context in
            _ = try context.requireUser()
            return service.providers()
        }
    }

    /// Registers `handler` for `method`, holding the service weakly: the service owns the host,
    /// and a strong reference back would keep both alive forever. A handler that starts after
    /// the service went away (a request in flight as it stops) answers UNAVAILABLE; one that
    /// started keeps the service until it ends.
    private func serve<Request, Response>(
        _ method: Method<Request, Response>, _ handler: @escaping @Sendable (AIGatewayService, Request, RequestContext) async throws -> Response
    ) {
        host.handle(method) { [weak self] request, context in
            guard let self else { throw BusError.unavailable("ai-gateway is stopping; retry the call") }
            return try await handler(self, request, context)
        }
    }

    private func scope(_ context: RequestContext) throws(BusError) -> CallScope {
        CallScope(user: try context.requireUser(), deadline: context.deadline, logger: context.logger)
    }

    private func summarize(_ request: SummarizeRequest, _ context: RequestContext) async throws -> SummarizeResponse {
        let scope = try scope(context)
        try Validate.text(request.text, field: "text")
        let count = try Validate.int(request.maxSentences, default: 3, 1...20, field: "maxSentences")
        let text = request.text
        let (sentences, generation) = try await dispatcher.run(
            .summarize, pinned: request.provider, scope: scope, cacheInput: "summarize\n\(count)\n" + text,
            local: { Summarizer.summarize(text, maxSentences: count) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.summarize(text, maxSentences: count), timeout: timeout)
                return (try Prompts.sentences(completion.text, maxSentences: count), completion.usage)
            })
        return SummarizeResponse(summary: sentences.joined(separator: " "), sentences: sentences, generation: generation)
    }

    private func keywords(_ request: KeywordsRequest, _ context: RequestContext) async throws -> KeywordsResponse {
        let scope = try scope(context)
        try Validate.text(request.text, field: "text")
        let count = try Validate.int(request.maxCount, default: 10, 1...50, field: "maxCount")
        let text = request.text
        let (keywords, generation) = try await dispatcher.run(
            .keywords, pinned: request.provider, scope: scope, cacheInput: "keywords\n\(count)\n" + text,
            local: { LocalText.keywords(text, maxCount: count) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.keywords(text, maxCount: count), timeout: timeout)
                return (try Prompts.keywordList(completion.text, maxCount: count), completion.usage)
            })
        return KeywordsResponse(keywords: keywords, generation: generation)
    }

    private func flashcards(_ request: FlashcardsRequest, _ context: RequestContext) async throws -> FlashcardsResponse {
        let scope = try scope(context)
        try Validate.chunks(request.chunks)
        let maxCards = try Validate.int(request.maxCards, default: 50, 1...500, field: "maxCards")
        let perChunk = try Validate.int(request.maxCardsPerChunk, default: 5, 1...20, field: "maxCardsPerChunk")
        let kinds = Set(request.kinds ?? FlashcardKind.allCases)
        guard !kinds.isEmpty else { throw BusError.invalidArgument("kinds must name at least one kind (qa, cloze, definition) when given") }
        var keyed = request
        keyed.provider = nil
        let chunks = request.chunks
        let (cards, generation) = try await dispatcher.run(
            .flashcards, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.flashcards, keyed),
            local: { LocalText.flashcards(chunks, maxCards: maxCards, maxCardsPerChunk: perChunk, kinds: kinds) },
            remote: { provider, timeout throws(ProviderError) in
                let prompt = Prompts.flashcards(chunks, maxCards: maxCards, maxPerChunk: perChunk, kinds: kinds)
                let completion = try await provider.complete(prompt, timeout: timeout)
                return (try Prompts.flashcardList(completion.text, chunks: chunks, maxCards: maxCards, maxPerChunk: perChunk, kinds: kinds), completion.usage)
            })
        return FlashcardsResponse(cards: cards, generation: generation)
    }

    private func reflect(_ request: ReflectRequest, _ context: RequestContext) async throws -> ReflectResponse {
        let scope = try scope(context)
        try Validate.text(request.text, field: "text")
        var keyed = request
        keyed.provider = nil
        let (text, identity) = (request.text, request.identity)
        let (reflection, generation) = try await dispatcher.run(
            .reflect, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.reflect, keyed),
            local: { Encouragement.reflection(text, identity: identity) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.reflect(text, identity: identity), timeout: timeout)
                return (try Prompts.warmText(completion.text), completion.usage)
            })
        return ReflectResponse(reflection: reflection, generation: generation)
    }

    private func encourage(_ request: EncourageRequest, _ context: RequestContext) async throws -> EncourageResponse {
        let scope = try scope(context)
        try Validate.fraction(request.accuracy, field: "accuracy")
        try Validate.fraction(request.completionRate, field: "completionRate")
        _ = try Validate.int(request.streak, default: 0, 0...100_000, field: "streak")
        _ = try Validate.int(request.count, default: 0, 0...100_000, field: "count")
        guard request.accuracy != nil || request.streak != nil || request.completionRate != nil || request.count != nil else {
            throw BusError.invalidArgument("give at least one of accuracy, streak, completionRate or count")
        }
        var keyed = request
        keyed.provider = nil
        let (message, generation) = try await dispatcher.run(
            .encourage, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.encourage, keyed),
            local: { Encouragement.message(request) },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.encourage(request), timeout: timeout)
                return (try Prompts.warmText(completion.text), completion.usage)
            })
        return EncourageResponse(message: message, generation: generation)
    }

    private func thought(_ request: ThoughtRequest, _ context: RequestContext) async throws -> HouseThought {
        let scope = try scope(context)
        guard (1...200).contains(request.notes.count) else { throw BusError.invalidArgument("notes must hold 1...200 notes, got \(request.notes.count)") }
        try Validate.text(request.notes.map { ($0.question ?? "") + " " + $0.answer }.joined(separator: "\n"), field: "notes")
        var keyed = request
        keyed.provider = nil
        let notes = request.notes
        let (output, generation) = try await dispatcher.run(
            .thought, pinned: request.provider, scope: scope, cacheInput: CacheInput.of(.thought, keyed),
            local: {
                let thought = HouseThoughts.thought(notes)
                return HouseThoughtOutput(thought: thought.thought, emotion: thought.emotion, category: thought.category,
                                          confidence: thought.confidence, suggestion: thought.suggestion)
            },
            remote: { provider, timeout throws(ProviderError) in
                let completion = try await provider.complete(Prompts.thought(notes), timeout: timeout)
                return (try Prompts.houseThought(completion.text), completion.usage)
            })
        return HouseThought(thought: output.thought, emotion: output.emotion, category: output.category, confidence: output.confidence,
                            suggestion: output.suggestion, generation: generation)
    }

    /// The tutor. With `conversationId`, `materialId` or `setId` the history and study context
    /// come from store first, and the turn is appended there before the final event (a failure to
    /// store fails the call and ends the stream with an error event).
    private func chat(_ request: ChatRequest, _ context: RequestContext) async throws -> ChatResponse {
        let scope = try scope(context)
        try Validate.chat(request)
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

    private func transcribe(_ request: TranscribeRequest, _ context: RequestContext) async throws -> TranscribeResponse {
        let scope = try scope(context)
        guard let audio = context.attachment, !audio.isEmpty else {
            throw BusError.invalidArgument("attachment: the audio must be sent as the request's attachment frame")
        }
        guard audio.count <= AIGatewayLimits.audioBytes else {
            throw BusError.invalidArgument("attachment is \(audio.count) bytes; the limit is \(AIGatewayLimits.audioBytes) bytes (5 MiB)")
        }
        let (transcript, generation) = try await dispatcher.transcribe(audio, request: request, scope: scope)
        let timed = transcript.segments.filter { $0.confidence != nil && $0.end > $0.start }
        let weight = timed.reduce(0) { $0 + ($1.end - $1.start) }
        let confidence = weight > 0 ? timed.reduce(0) { $0 + $1.confidence! * ($1.end - $1.start) } / weight : nil
        return TranscribeResponse(
            text: transcript.text, language: transcript.language ?? request.language, confidence: confidence.map { ($0 * 1000).rounded() / 1000 },
            alternatives: [], segments: transcript.segments, duration: transcript.duration, generation: generation)
    }

    private func providers() -> ProvidersResponse {
        var providers = [ProviderInfo(name: "local", kind: .local, baseURL: nil, chatModel: "local", transcriptionModel: nil, requestsPerMinute: nil, hasKey: false)]
        for remote in configuration.remotes {
            providers.append(ProviderInfo(
                name: remote.name, kind: remote.kind, baseURL: remote.baseURL, chatModel: remote.chatModel, transcriptionModel: remote.transcriptionModel,
                requestsPerMinute: remote.requestsPerMinute, hasKey: remote.apiKey != nil))
        }
        let routes = Dictionary(uniqueKeysWithValues: configuration.routes.map { ($0.key.method, $0.value) })
        return ProvidersResponse(providers: providers, routes: routes)
    }
}
