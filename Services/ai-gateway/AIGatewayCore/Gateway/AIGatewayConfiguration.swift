import Bus
import Contracts
import Foundation
import HTTPClient
import ServiceKit
import Wire

/// The gateway's methods that go through a provider, each with its own fallback chain.
public enum GatewayTask: String, CaseIterable, Sendable {
    case summarize, keywords, flashcards, reflect, encourage, thought, chat, transcribe, speak

    /// The method's name on the bus.
    public var method: String { self == .flashcards ? "flashcards.generate" : rawValue }

    /// The environment variable with the method's route, e.g. `AI_ROUTE_CHAT`.
    public var routeVariable: String { "AI_ROUTE_" + rawValue.uppercased() }
}

/// An API key: kept out of logs, descriptions and answers.
public struct APIKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself; only the provider's request headers read it.
    let value: String

    public init(_ value: String) { self.value = value }

    public var description: String { "[redacted]" }
    public var debugDescription: String { "[redacted]" }
}

/// Prices for estimated costs, in US dollars.
public struct Prices: Sendable, Equatable {
    public var inputPerMillionTokens: Double
    public var outputPerMillionTokens: Double
    public var audioPerMinute: Double
    /// Speech synthesis, per million characters of text.
    public var speechPerMillionCharacters: Double

    public init(inputPerMillionTokens: Double = 0, outputPerMillionTokens: Double = 0, audioPerMinute: Double = 0, speechPerMillionCharacters: Double = 0) {
        self.inputPerMillionTokens = inputPerMillionTokens
        self.outputPerMillionTokens = outputPerMillionTokens
        self.audioPerMinute = audioPerMinute
        self.speechPerMillionCharacters = speechPerMillionCharacters
    }

    func cost(_ usage: TokenUsage) -> Double {
        (Double(usage.promptTokens) * inputPerMillionTokens + Double(usage.completionTokens) * outputPerMillionTokens) / 1_000_000
    }
}

/// One remote provider's settings.
public struct RemoteProviderConfiguration: Sendable {
    /// `openai` or `gemini`: the name routes and answers use.
    public var name: String
    public var kind: ProviderKind
    /// E.g. `https://api.openai.com/v1`, `https://generativelanguage.googleapis.com/v1beta`.
    public var baseURL: String
    public var apiKey: APIKey?
    public var chatModel: String
    /// Whisper-style transcription model (OpenAI-compatible only).
    public var transcriptionModel: String?
    /// Text-to-speech model and default voice (OpenAI-compatible only).
    public var speechModel: String?
    public var speechVoice: String?
    /// The chat token bucket's rate; nil for no limit.
    public var requestsPerMinute: Int?
    /// The transcription token bucket's rate; nil for no limit.
    public var transcriptionRequestsPerMinute: Int?
    /// The speech token bucket's rate; nil for no limit.
    public var speechRequestsPerMinute: Int?
    /// Requests the buckets let through at once after a quiet spell.
    public var burst: Int
    public var prices: Prices
    /// A PEM bundle of certificate authorities to trust (a provider behind a private CA).
    public var caFile: String?

    public init(
        name: String, kind: ProviderKind, baseURL: String, apiKey: APIKey?, chatModel: String, transcriptionModel: String? = nil,
        requestsPerMinute: Int? = nil, transcriptionRequestsPerMinute: Int? = nil, burst: Int = 5, prices: Prices = Prices(),
        caFile: String? = nil, speechModel: String? = nil, speechVoice: String? = nil, speechRequestsPerMinute: Int? = nil
    ) {
        self.name = name
        self.kind = kind
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.apiKey = apiKey
        self.chatModel = chatModel
        self.transcriptionModel = transcriptionModel
        self.requestsPerMinute = requestsPerMinute
        self.transcriptionRequestsPerMinute = transcriptionRequestsPerMinute
        self.burst = burst
        self.prices = prices
        self.caFile = caFile
        self.speechModel = speechModel
        self.speechVoice = speechVoice
        self.speechRequestsPerMinute = speechRequestsPerMinute
    }
}

/// The offline speech engines and the audio tool (docs/services/ai-gateway.md, "Speech").
public struct SpeechSettings: Sendable {
    /// The espeak-ng variant local speech uses when the request names no voice
    /// (`AI_SPEECH_VARIANT`, default `f2`: clearer, and the one pocketsphinx understands best);
    /// empty (`none` in the environment) for the voice's own.
    public var variant = "f2"
    /// The folder of pocketsphinx's model (`AI_POCKETSPHINX_MODEL`).
    public var pocketsphinxModel = "/usr/share/pocketsphinx/model/en-us"
    /// How the offline recognizer listens; `.baseline` only for scripts/bench-ai's comparison.
    public var recognition = OfflineRecognitionProfile.tuned
    /// ffmpeg, for decoding uploads and encoding Opus (`AI_FFMPEG`, `AI_FFMPEG_TIMEOUT_SECONDS`).
    var converter = AudioConverter()

    public init() {}

    public var ffmpeg: String {
        get { converter.command }
        set { converter.command = newValue }
    }

    public var ffmpegTimeout: Duration {
        get { converter.timeout }
        set { converter.timeout = newValue }
    }
}

/// How the offline recognizer listens.
public enum OfflineRecognitionProfile: Sendable, Hashable {
    /// The audio conditioned (``SpeechConditioning``), the options docs/benchmarks.md found
    /// best, and every recording heard from the same starting state.
    case tuned
    /// ai-gateway's recognizer before issue 44: pocketsphinx's default options on the audio as
    /// ffmpeg decoded it, its noise estimate carried from one recording to the next. Kept so that
    /// scripts/bench-ai measures both in one run.
    case baseline
}

/// How failed provider calls are retried: HTTPClient's ``BackoffPolicy`` (exponential back-off
/// with full jitter, or the delay the provider asked for), shared with connectors.
public typealias RetryPolicy = BackoffPolicy

/// ai-gateway's settings, read from the environment in one place (docs/services/ai-gateway.md).
public struct AIGatewayConfiguration: ServiceConfiguration {
    public static let serviceName = AIGatewayContract.serviceName

    /// The SQLite file (`ai-gateway.sqlite` in `DATA_DIR`): the response cache, the usage ledger
    /// and the users' own command patterns.
    public var databaseURL: URL
    public var openAI: RemoteProviderConfiguration?
    public var gemini: RemoteProviderConfiguration?
    /// Each method's fallback chain of provider names.
    public var routes: [GatewayTask: [String]]
    public var retry = RetryPolicy()
    /// The longest a provider call may take, whatever the caller's deadline.
    public var httpTimeout: Duration = .seconds(60)
    /// How long cached answers stay valid.
    public var cacheTTL: TimeInterval = 86_400
    public var memoryCacheEntries = 1000
    public var diskCacheEntries = 20_000
    public var intentCacheSize = 50
    /// How often the usage ledger is written to disk.
    public var ledgerFlushInterval: Duration = .seconds(1)
    /// Requests served at once.
    public var credit = 32
    /// Offline speech: espeak-ng's default variant, pocketsphinx's model, ffmpeg.
    public var speech = SpeechSettings()
    /// "Now" for the cache's expiry, the ledger's days and command patterns; a seam for tests.
    public var wallClock: any WallClock = SystemWallClock()

    /// The database at `databaseURL`, the given providers (none: local only, the default with an
    /// empty environment), with the default routes except those in `routes`.
    public init(
        databaseURL: URL, openAI: RemoteProviderConfiguration? = nil, gemini: RemoteProviderConfiguration? = nil, routes: [GatewayTask: [String]] = [:]
    ) {
        self.databaseURL = databaseURL
        self.openAI = openAI
        self.gemini = gemini
        self.routes = Self.defaultRoutes(openAI: openAI, gemini: gemini).merging(routes) { _, chosen in chosen }
    }

    /// The remote providers configured, by name.
    public var remotes: [RemoteProviderConfiguration] { [gemini, openAI].compactMap { $0 } }

    /// Every configured remote provider (Gemini first), then local; speech through OpenAI, then
    /// local; transcription through OpenAI when it is configured, else offline (local).
    public static func defaultRoutes(openAI: RemoteProviderConfiguration?, gemini: RemoteProviderConfiguration?) -> [GatewayTask: [String]] {
        let chain = [gemini, openAI].compactMap { $0?.name } + ["local"]
        var routes: [GatewayTask: [String]] = [:]
        for task in GatewayTask.allCases { routes[task] = chain }
        routes[.transcribe] = [openAI?.name ?? "local"]
        routes[.speak] = [openAI?.name, "local"].compactMap { $0 }
        return routes
    }

    /// The providers that can do `task`, when only some can: speech and transcription need an
    /// OpenAI-compatible provider or the offline engines.
    static func capable(of task: GatewayTask, openAI: RemoteProviderConfiguration?) -> Set<String>? {
        switch task {
        case .transcribe, .speak: Set([openAI?.name, "local"].compactMap { $0 })
        default: nil
        }
    }

    /// Reads `DATA_DIR` and the providers, routes, retries, cache and credit settings;
    /// docs/services/ai-gateway.md lists every variable.
    /// - Throws: `INVALID_ARGUMENT` naming a variable with a bad value or a route through a
    ///   provider that is not configured.
    public init(environment: Environment) throws(BusError) {
        let openAI = try Self.openAIConfiguration(environment)
        self.init(
            databaseURL: try environment.dataDirectory(service: Self.serviceName).appending(path: "ai-gateway.sqlite"), openAI: openAI,
            gemini: try Self.geminiConfiguration(environment))
        let configured = Set(remotes.map(\.name) + ["local"])
        let defaultChain = try environment.optionalString("AI_ROUTE").map { text throws(BusError) in
            try Self.parseRoute(text, variable: "AI_ROUTE", configured: configured)
        }
        for task in GatewayTask.allCases {
            // Set but empty means "no provider" (e.g. AI_ROUTE_TRANSCRIBE= for a chat-only server).
            if let text = environment.values[task.routeVariable] {
                routes[task] = try Self.parseRoute(text, variable: task.routeVariable, configured: configured)
            } else if let defaultChain, task != .transcribe {
                // AI_ROUTE's providers that can do the task (Gemini cannot speak).
                let capable = Self.capable(of: task, openAI: openAI)
                routes[task] = defaultChain.filter { capable?.contains($0) ?? true }
            }
        }
        for task in [GatewayTask.transcribe, .speak] {
            for name in routes[task] ?? [] where !(Self.capable(of: task, openAI: openAI)?.contains(name) ?? true) {
                throw .invalidArgument(task == .transcribe
                    ? "AI_ROUTE_TRANSCRIBE: '\(name)' cannot transcribe; only an OpenAI-compatible (Whisper) provider or local can"
                    : "AI_ROUTE_SPEAK: '\(name)' cannot speak; only an OpenAI-compatible provider or local can")
            }
        }
        retry = RetryPolicy(
            maxRetries: try environment.int("AI_MAX_RETRIES", default: 2, in: 0...10),
            baseDelay: try environment.milliseconds("AI_RETRY_BASE_MS", default: .milliseconds(500)),
            maxDelay: try environment.milliseconds("AI_RETRY_MAX_MS", default: .seconds(8)),
            maxRetryAfter: try environment.milliseconds("AI_RETRY_AFTER_MAX_MS", default: .seconds(60)))
        httpTimeout = try environment.milliseconds("AI_HTTP_TIMEOUT_MS", default: .seconds(60))
        cacheTTL = TimeInterval(try environment.int("AI_CACHE_TTL_SECONDS", default: 86_400, in: 0...31_536_000))
        memoryCacheEntries = try environment.int("AI_CACHE_MEMORY_ENTRIES", default: 1000, in: 1...1_000_000)
        diskCacheEntries = try environment.int("AI_CACHE_DISK_ENTRIES", default: 20_000, in: 0...10_000_000)
        intentCacheSize = try environment.int("AI_INTENT_CACHE_SIZE", default: 50, in: 1...100_000)
        credit = try environment.int("AI_CREDIT", default: 32, in: 1...1024)
        let variant = environment.string("AI_SPEECH_VARIANT", default: "f2")
        speech.variant = variant == "none" ? "" : variant
        guard speech.variant.isEmpty || SpeakRequest.isVoiceName(speech.variant) else {
            throw .invalidArgument("AI_SPEECH_VARIANT must be an espeak-ng variant name such as f2, got '\(speech.variant)'")
        }
        speech.pocketsphinxModel = environment.string("AI_POCKETSPHINX_MODEL", default: "/usr/share/pocketsphinx/model/en-us")
        speech.ffmpeg = environment.string("AI_FFMPEG", default: "ffmpeg")
        speech.ffmpegTimeout = .seconds(try environment.int("AI_FFMPEG_TIMEOUT_SECONDS", default: 30, in: 1...3600))
    }

    private static func parseRoute(_ text: String, variable: String, configured: Set<String>) throws(BusError) -> [String] {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        for name in names where !configured.contains(name) {
            throw .invalidArgument("\(variable): provider '\(name)' is not configured (configured: \(configured.sorted().joined(separator: ", ")))")
        }
        return names
    }

    private static func apiKey(_ environment: Environment, variable: String) throws(BusError) -> APIKey? {
        if let key = environment.optionalString(variable) { return APIKey(key.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard let path = environment.optionalString(variable + "_FILE") else { return nil }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw .invalidArgument("\(variable)_FILE: cannot read \(path)")
        }
        let key = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw .invalidArgument("\(variable)_FILE: \(path) is empty") }
        return APIKey(key)
    }

    private static func number(_ environment: Environment, _ variable: String, default value: Double) throws(BusError) -> Double {
        guard let text = environment.optionalString(variable) else { return value }
        guard let number = Double(text), number >= 0 else { throw .invalidArgument("\(variable) must be a number ≥ 0, got '\(text)'") }
        return number
    }

    private static func voice(_ name: String) throws(BusError) -> String {
        guard SpeakRequest.isVoiceName(name) else { throw .invalidArgument("AI_OPENAI_VOICE must be a voice name such as alloy, got '\(name)'") }
        return name
    }

    private static func rate(_ environment: Environment, _ variable: String, default value: Int) throws(BusError) -> Int? {
        let rate = try environment.int(variable, default: value, in: 0...1_000_000)
        return rate == 0 ? nil : rate
    }

    private static func openAIConfiguration(_ environment: Environment) throws(BusError) -> RemoteProviderConfiguration? {
        let key = try apiKey(environment, variable: "OPENAI_API_KEY")
        let baseURL = environment.optionalString("AI_OPENAI_BASE_URL")
        guard key != nil || baseURL != nil else { return nil }
        return RemoteProviderConfiguration(
            name: "openai", kind: .openai, baseURL: baseURL ?? "https://api.openai.com/v1", apiKey: key,
            chatModel: environment.string("AI_OPENAI_MODEL", default: "gpt-4o-mini"),
            transcriptionModel: environment.string("AI_OPENAI_TRANSCRIPTION_MODEL", default: "whisper-1"),
            requestsPerMinute: try rate(environment, "AI_OPENAI_RPM", default: 500),
            transcriptionRequestsPerMinute: try rate(environment, "AI_WHISPER_RPM", default: 50),
            burst: try environment.int("AI_OPENAI_BURST", default: 5, in: 1...10_000),
            prices: Prices(
                inputPerMillionTokens: try number(environment, "AI_OPENAI_PRICE_INPUT", default: 0.15),
                outputPerMillionTokens: try number(environment, "AI_OPENAI_PRICE_OUTPUT", default: 0.60),
                audioPerMinute: try number(environment, "AI_WHISPER_PRICE_PER_MINUTE", default: 0.006),
                speechPerMillionCharacters: try number(environment, "AI_OPENAI_SPEECH_PRICE", default: 15)),
            caFile: environment.optionalString("AI_OPENAI_CA_FILE"),
            speechModel: environment.string("AI_OPENAI_SPEECH_MODEL", default: "gpt-4o-mini-tts"),
            speechVoice: try voice(environment.string("AI_OPENAI_VOICE", default: "alloy")),
            speechRequestsPerMinute: try rate(environment, "AI_OPENAI_SPEECH_RPM", default: 50))
    }

    private static func geminiConfiguration(_ environment: Environment) throws(BusError) -> RemoteProviderConfiguration? {
        let key = try apiKey(environment, variable: "GEMINI_API_KEY")
        let baseURL = environment.optionalString("AI_GEMINI_BASE_URL")
        guard key != nil || baseURL != nil else { return nil }
        return RemoteProviderConfiguration(
            name: "gemini", kind: .gemini, baseURL: baseURL ?? "https://generativelanguage.googleapis.com/v1beta", apiKey: key,
            chatModel: environment.string("AI_GEMINI_MODEL", default: "gemini-2.5-flash"),
            requestsPerMinute: try rate(environment, "AI_GEMINI_RPM", default: 60),
            burst: try environment.int("AI_GEMINI_BURST", default: 5, in: 1...10_000),
            prices: Prices(
                inputPerMillionTokens: try number(environment, "AI_GEMINI_PRICE_INPUT", default: 0.30),
                outputPerMillionTokens: try number(environment, "AI_GEMINI_PRICE_OUTPUT", default: 2.50)),
            caFile: environment.optionalString("AI_GEMINI_CA_FILE"))
    }
}
