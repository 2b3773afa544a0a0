import Foundation
import Wire

// Payloads of `usage` and `providers`.

/// `usage` request.
public struct UsageRequest: Codable, Sendable, Equatable {
    /// Only usage from this day on (UTC days); default everything kept.
    public var since: Date?
    /// Sum over every user instead of the caller's own; operators only (PERMISSION_DENIED for
    /// anyone else). No user ids are returned.
    public var allUsers: Bool?

    public init(since: Date? = nil, allUsers: Bool? = nil) {
        self.since = since
        self.allUsers = allUsers
    }
}

/// Usage of one provider and model.
public struct UsageEntry: Codable, Sendable, Equatable {
    public var provider: String
    public var model: String
    /// Requests answered or attempted, cache hits included.
    public var requests: Int
    public var cacheHits: Int
    public var errors: Int
    public var promptTokens: Int
    public var completionTokens: Int
    public var totalTokens: Int
    /// Seconds of audio transcribed.
    public var audioSeconds: Double
    /// From the configured prices; 0 for local and cached answers.
    public var estimatedCostUSD: Double

    public init(
        provider: String, model: String, requests: Int, cacheHits: Int, errors: Int, promptTokens: Int,
        completionTokens: Int, audioSeconds: Double, estimatedCostUSD: Double
    ) {
        self.provider = provider
        self.model = model
        self.requests = requests
        self.cacheHits = cacheHits
        self.errors = errors
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.totalTokens = promptTokens + completionTokens
        self.audioSeconds = audioSeconds
        self.estimatedCostUSD = estimatedCostUSD
    }
}

/// `usage` response.
public struct UsageResponse: Codable, Sendable, Equatable {
    /// Sorted by provider, then model.
    public var entries: [UsageEntry]
    public var totalRequests: Int
    public var totalEstimatedCostUSD: Double

    public init(entries: [UsageEntry]) {
        self.entries = entries
        self.totalRequests = entries.reduce(0) { $0 + $1.requests }
        self.totalEstimatedCostUSD = entries.reduce(0) { $0 + $1.estimatedCostUSD }
    }
}

/// The kinds of provider the gateway speaks to.
public enum ProviderKind: String, WireEnum {
    case local, openai, gemini
}

/// One configured provider (never its key).
public struct ProviderInfo: Codable, Sendable, Equatable {
    public var name: String
    public var kind: ProviderKind
    public var baseURL: String?
    public var chatModel: String
    public var transcriptionModel: String?
    /// The token bucket's rate; nil for no limit.
    public var requestsPerMinute: Int?
    /// Whether a key was configured (the key itself is never shown).
    public var hasKey: Bool

    public init(name: String, kind: ProviderKind, baseURL: String?, chatModel: String, transcriptionModel: String?, requestsPerMinute: Int?, hasKey: Bool) {
        self.name = name
        self.kind = kind
        self.baseURL = baseURL
        self.chatModel = chatModel
        self.transcriptionModel = transcriptionModel
        self.requestsPerMinute = requestsPerMinute
        self.hasKey = hasKey
    }
}

/// `providers` response.
public struct ProvidersResponse: Codable, Sendable, Equatable {
    public var providers: [ProviderInfo]
    /// Each method's fallback chain, e.g. `"chat": ["gemini", "openai", "local"]`.
    public var routes: [String: [String]]

    public init(providers: [ProviderInfo], routes: [String: [String]]) {
        self.providers = providers
        self.routes = routes
    }
}
