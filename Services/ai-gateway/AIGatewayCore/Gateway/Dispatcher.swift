import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import Threads
import Wire

/// Who a provider call is for and until when.
struct CallScope: Sendable {
    var user: String
    var deadline: ContinuousClock.Instant
    var logger: Logger

    /// The scope of the request being served; a request without a deadline gets five minutes.
    /// - Throws: `INVALID_ARGUMENT` when the request names no user.
    init(_ context: RequestContext) throws(BusError) {
        user = try context.requireUser()
        deadline = .now + (context.timeRemaining ?? .seconds(300))
        logger = context.logger
    }

    var remaining: Duration { deadline - .now }
}

/// Sends each task along its fallback chain: the response cache first, then the provider's rate
/// limit, then the call with retries (back-off with jitter, or the provider's own delay), then
/// the next provider; every call counted in the usage ledger.
final class Dispatcher: Sendable {
    let configuration: AIGatewayConfiguration
    let chatProviders: [String: any ChatProvider]
    let transcribers: [String: any TranscriptionProvider]
    let speakers: [String: any SpeechProvider]
    let buckets: [String: TokenBucket]
    private let prices: [String: Prices]
    let cache: ResponseCache
    /// Speech, in memory only: audio is large (``speechCacheEntries`` of at most
    /// ``speechCacheBytes`` each).
    let speechCache: ResponseCache
    let ledger: UsageLedger

    static let speechCacheEntries = 64
    static let speechCacheBytes = 1024 * 1024

    init(configuration: AIGatewayConfiguration, http: HTTPClient, cache: ResponseCache, ledger: UsageLedger) {
        self.configuration = configuration
        var chat: [String: any ChatProvider] = [:]
        var transcribers: [String: any TranscriptionProvider] = [:]
        var speakers: [String: any SpeechProvider] = [:]
        var buckets: [String: TokenBucket] = [:]
        var prices: [String: Prices] = [:]
        for remote in configuration.remotes {
            switch remote.kind {
            case .openai:
                let provider = OpenAIProvider(configuration: remote, http: http)
                chat[remote.name] = provider
                transcribers[remote.name] = provider
                speakers[remote.name] = provider
            case .gemini:
                chat[remote.name] = GeminiProvider(configuration: remote, http: http)
            case .local:
                continue
            }
            if let rate = remote.requestsPerMinute { buckets[remote.name] = TokenBucket(perSecond: Double(rate) / 60, burst: Double(remote.burst)) }
            if let rate = remote.transcriptionRequestsPerMinute {
                buckets[remote.name + ".transcribe"] = TokenBucket(perSecond: Double(rate) / 60, burst: Double(remote.burst))
            }
            if let rate = remote.speechRequestsPerMinute { buckets[remote.name + ".speech"] = TokenBucket(perSecond: Double(rate) / 60, burst: Double(remote.burst)) }
            prices[remote.name] = remote.prices
        }
        chatProviders = chat
        self.transcribers = transcribers
        self.speakers = speakers
        self.buckets = buckets
        self.prices = prices
        self.cache = cache
        speechCache = ResponseCache(database: nil, ttl: configuration.cacheTTL, memoryEntries: Self.speechCacheEntries, diskEntries: 0,
                                    clock: configuration.wallClock, logger: cache.logger)
        self.ledger = ledger
    }

    /// The providers to try for `task`: the pinned one alone, else the task's route.
    /// - Throws: `INVALID_ARGUMENT` for a pinned provider that is not configured for `task`,
    ///   `FAILED_PRECONDITION` when the route is empty.
    func chain(for task: GatewayTask, pinned: String?) throws(BusError) -> [String] {
        if let pinned {
            let remotes: [String] = switch task {
            case .transcribe: Array(transcribers.keys)
            case .speak: Array(speakers.keys)
            default: Array(chatProviders.keys)
            }
            return [try Field.oneOf(pinned, "provider", (["local"] + remotes).sorted())]
        }
        let route = configuration.routes[task] ?? ["local"]
        guard !route.isEmpty else {
            throw .failedPrecondition(task == .transcribe
                ? "no transcription provider is configured (AI_ROUTE_TRANSCRIBE is empty): set it to local, or set OPENAI_API_KEY (or AI_OPENAI_BASE_URL for a Whisper-compatible server) — see docs/services/ai-gateway.md"
                : "no provider is configured for \(task.method): set \(task.routeVariable) or AI_ROUTE")
        }
        return route
    }

    /// Runs a task along its chain. `local` answers without a network; `remote` asks one chat
    /// provider within a timeout and reads its answer (throwing `malformed` when it cannot).
    func run<Output: Codable & Sendable>(
        _ task: GatewayTask, pinned: String?, scope: CallScope, cacheInput: String,
        local: @escaping @Sendable () throws(BusError) -> Output,
        remote: @Sendable (any ChatProvider, Duration) async throws(ProviderError) -> (Output, TokenUsage)
    ) async throws(BusError) -> (Output, GenerationInfo) {
        var failures: [ProviderFailure] = []
        for name in try chain(for: task, pinned: pinned) {
            let provider = chatProviders[name]
            guard provider != nil || name == "local" else { continue }
            let model = provider?.model ?? "local-" + task.rawValue
            let key = CacheKey(provider: name, model: model, prompt: cacheInput)
            if let cached = cache.get(key), let output = try? WireCoding.decode(Output.self, from: cached) {
                ledger.record(user: scope.user, provider: name, model: model, .init(requests: 1, cacheHits: 1))
                return (output, GenerationInfo(provider: name, model: model, cached: true, fallbacks: failures))
            }
            guard let provider else {
                let output = try await Self.compute(heavy: cacheInput.utf8.count > 64 * 1024, local)
                let data = try? WireCoding.encode(output)
                if let data { cache.put(key, data, persist: false) }
                let usage = Self.estimate(cacheInput, data)
                record(scope: scope, provider: name, model: model, usage: usage)
                return (output, GenerationInfo(provider: name, model: model, usage: usage, fallbacks: failures))
            }
            do {
                let (output, usage) = try await attempt(name, bucket: buckets[name], scope: scope) { timeout throws(ProviderError) in
                    try await remote(provider, timeout)
                }
                if let data = try? WireCoding.encode(output) { cache.put(key, data, persist: true) }
                record(scope: scope, provider: name, model: model, usage: usage)
                return (output, GenerationInfo(provider: name, model: model, usage: usage, fallbacks: failures))
            } catch {
                failures.append(failure(name, error, scope: scope, model: model))
                if Task.isCancelled { throw .cancelled("the request was cancelled") }
            }
        }
        throw Self.exhausted(task, failures)
    }

    /// Transcribes along the `transcribe` route: OpenAI-compatible providers, and `local`
    /// (offline, `local`'s errors are the call's). No cache: the audio is the prompt and is
    /// rarely sent twice.
    func transcribe(
        _ audio: Data, request: TranscribeRequest, scope: CallScope, local: @Sendable () async throws(BusError) -> Transcript
    ) async throws(BusError) -> (Transcript, GenerationInfo) {
        var failures: [ProviderFailure] = []
        for name in try chain(for: .transcribe, pinned: request.provider) {
            if name == "local" {
                let transcript = try await local()
                ledger.record(user: scope.user, provider: name, model: OfflineSpeech.recognitionModel, .init(requests: 1, audioSeconds: transcript.duration))
                return (transcript, GenerationInfo(provider: name, model: OfflineSpeech.recognitionModel, usage: TokenUsage(estimated: true), fallbacks: failures))
            }
            guard let provider = transcribers[name] else { continue }
            do {
                let transcript = try await attempt(name, bucket: buckets[name + ".transcribe"], scope: scope) { timeout throws(ProviderError) in
                    try await provider.transcribe(audio, request: request, timeout: timeout)
                }
                let cost = (prices[name]?.audioPerMinute ?? 0) * transcript.duration / 60
                ledger.record(user: scope.user, provider: name, model: provider.transcriptionModel,
                              .init(requests: 1, audioSeconds: transcript.duration, costUSD: cost))
                return (transcript, GenerationInfo(provider: name, model: provider.transcriptionModel, usage: TokenUsage(estimated: true), fallbacks: failures))
            } catch {
                failures.append(failure(name, error, scope: scope, model: provider.transcriptionModel))
                if Task.isCancelled { throw .cancelled("the request was cancelled") }
            }
        }
        throw Self.exhausted(.transcribe, failures)
    }

    /// Speaks along the `speak` route: for each provider the speech cache, its rate limit,
    /// the call with retries; `local` (espeak-ng) last, whose errors are the call's.
    func speak(
        _ input: SpeechInput, pinned: String?, scope: CallScope, local: @Sendable () async throws(BusError) -> SpeechAudio
    ) async throws(BusError) -> (SpeechAudio, GenerationInfo) {
        var failures: [ProviderFailure] = []
        for name in try chain(for: .speak, pinned: pinned) {
            let provider = speakers[name]
            guard provider != nil || name == "local" else { continue }
            let model = provider?.speechModel ?? OfflineSpeech.synthesisModel
            let key = CacheKey(provider: name, model: model, prompt: CacheInput.of(.speak, input))
            if let cached = speechCache.get(key).flatMap(CachedSpeech.decode) {
                ledger.record(user: scope.user, provider: name, model: model, .init(requests: 1, cacheHits: 1))
                return (cached, GenerationInfo(provider: name, model: model, cached: true, usage: TokenUsage(estimated: true), fallbacks: failures))
            }
            let audio: SpeechAudio
            if let provider {
                do {
                    audio = try await attempt(name, bucket: buckets[name + ".speech"], scope: scope) { timeout throws(ProviderError) in
                        try await provider.speak(input, timeout: timeout)
                    }
                } catch {
                    failures.append(failure(name, error, scope: scope, model: model))
                    if Task.isCancelled { throw .cancelled("the request was cancelled") }
                    continue
                }
            } else {
                audio = try await local()
            }
            guard audio.duration <= AIGatewayLimits.speechSeconds else {
                throw Field.invalid("text", "would take more than \(Int(AIGatewayLimits.speechSeconds)) s to say at this rate; send less text or a higher rate")
            }
            if let data = CachedSpeech.encode(audio), data.count <= Self.speechCacheBytes { speechCache.put(key, data, persist: false) }
            let cost = (prices[name]?.speechPerMillionCharacters ?? 0) * Double(input.text.unicodeScalars.count) / 1_000_000
            ledger.record(user: scope.user, provider: name, model: model, .init(requests: 1, audioSeconds: audio.duration, costUSD: cost))
            return (audio, GenerationInfo(provider: name, model: model, usage: TokenUsage(estimated: true), fallbacks: failures))
        }
        throw Self.exhausted(.speak, failures)
    }

    /// Runs local work; long texts (tens of milliseconds and more) off the cooperative pool.
    static func compute<Output: Sendable>(heavy: Bool, _ work: @escaping @Sendable () throws(BusError) -> Output) async throws(BusError) -> Output {
        guard heavy else { return try work() }
        return try await offThePool(work)
    }

    // MARK: One provider

    /// Calls `body` with the time left (at most the HTTP timeout), after taking a token from the
    /// provider's bucket; retries what is worth retrying while the deadline allows.
    func attempt<T>(
        _ name: String, bucket: TokenBucket?, scope: CallScope, _ body: (Duration) async throws(ProviderError) -> T
    ) async throws(ProviderError) -> T {
        var retry = 0
        var lastError: ProviderError?
        while true {
            if let bucket {
                guard let wait = bucket.reserve(notAfter: scope.deadline) else {
                    throw lastError ?? .rateLimited("\(name)'s limit of \(Int((bucket.perSecond * 60).rounded())) requests/min leaves no request before the deadline")
                }
                if wait > .zero {
                    scope.logger.debug("waiting for the rate limit", metadata: ["provider": "\(name)", "ms": "\(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)"])
                    do { try await Task.sleep(for: wait) } catch { throw .transport(.cancelled) }
                }
            }
            let remaining = scope.remaining
            guard remaining > .milliseconds(5) else { throw lastError ?? .deadline("the deadline passed before \(name) was asked") }
            do {
                return try await body(min(configuration.httpTimeout, remaining))
            } catch {
                lastError = error
                guard !Task.isCancelled, error.isRetryable, retry < configuration.retry.maxRetries else { throw error }
                let delay = configuration.retry.delay(beforeRetry: retry, providerAsked: error.retryAfter)
                guard ContinuousClock.now + delay < scope.deadline else { throw error }
                scope.logger.info("retrying provider", metadata: [
                    "provider": "\(name)", "retry": "\(retry + 1)", "delayMs": "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)",
                    "error": "\(error)",
                ])
                if error.retryAfter != nil, let bucket {
                    bucket.pause(until: .now + delay)  // the bucket makes the wait, for every caller
                } else {
                    do { try await Task.sleep(for: delay) } catch { throw .transport(.cancelled) }
                }
                retry += 1
            }
        }
    }

    func record(scope: CallScope, provider: String, model: String, usage: TokenUsage) {
        let cost = prices[provider]?.cost(usage) ?? 0
        ledger.record(user: scope.user, provider: provider, model: model,
                      .init(requests: 1, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, costUSD: cost))
    }

    func failure(_ name: String, _ error: ProviderError, scope: CallScope, model: String) -> ProviderFailure {
        scope.logger.warning("provider failed", metadata: ["provider": "\(name)", "code": "\(error.code.name)", "error": "\(error)"])
        if case .rateLimited = error {} else {
            ledger.record(user: scope.user, provider: name, model: model, .init(requests: 1, errors: 1))
        }
        return ProviderFailure(provider: name, code: error.code.name, message: error.description)
    }

    /// The error when every provider of the chain failed: RESOURCE_EXHAUSTED if all were rate
    /// limited, DEADLINE_EXCEEDED if time ran out, else UNAVAILABLE; the failures in `details`.
    static func exhausted(_ task: GatewayTask, _ failures: [ProviderFailure]) -> BusError {
        let summary = failures.map { "\($0.provider): \($0.code) (\($0.message))" }.joined(separator: "; ")
        let details = JSONValue.array(failures.map {
            .object(["provider": .string($0.provider), "code": .string($0.code), "message": .string($0.message)])
        })
        let code: StatusCode
        if !failures.isEmpty, failures.allSatisfy({ $0.code == StatusCode.resourceExhausted.name }) {
            code = .resourceExhausted
        } else if failures.last?.code == StatusCode.deadlineExceeded.name {
            code = .deadlineExceeded
        } else {
            code = .unavailable
        }
        return BusError(code, "no provider could answer \(task.method): \(summary)", details: details)
    }

    /// Token estimate for the local provider: about four characters a token.
    static func estimate(_ input: String, _ output: Data?) -> TokenUsage {
        TokenUsage(promptTokens: (input.utf8.count + 3) / 4, completionTokens: ((output?.count ?? 0) + 3) / 4, estimated: true)
    }
}
