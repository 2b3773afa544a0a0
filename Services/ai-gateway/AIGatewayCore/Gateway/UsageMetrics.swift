import CoreMetrics

/// `studybus_ai_tokens_total{provider, direction}` and `studybus_ai_cost_usd_total{provider}`,
/// counted with the usage ledger. Providers are the configured ones (a closed set), never a
/// name from a request.
enum UsageMetrics {
    static func count(provider: String, _ counts: UsageLedger.Counts) {
        if counts.promptTokens > 0 {
            Counter(label: "studybus_ai_tokens_total", dimensions: [("provider", provider), ("direction", "input")]).increment(by: counts.promptTokens)
        }
        if counts.completionTokens > 0 {
            Counter(label: "studybus_ai_tokens_total", dimensions: [("provider", provider), ("direction", "output")]).increment(by: counts.completionTokens)
        }
        if counts.costUSD > 0 {
            FloatingPointCounter(label: "studybus_ai_cost_usd_total", dimensions: [("provider", provider)]).increment(by: counts.costUSD)
        }
    }
}
