import Bus
import Foundation
import Wire

/// Produces `bus.rpc` events, but only while some subscriber asked for them: a non-empty prefix
/// of `bus.rpc` (`bus.rpc`, `bus.`, `b`). A subscription to everything (`""`) does not count, so
/// tailing all events does not make the broker trace every call. The broker learns the
/// subscriptions from its XPUB socket (verboser mode: every subscribe and unsubscribe).
struct RPCTracer {
    private var prefixCounts: [Data: Int] = [:]
    private(set) var isEnabled = false
    private var seq: Int64 = 0
    private let idPrefix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let instance: String

    init(instance: String) { self.instance = instance }

    /// Applies one XPUB subscription message (`0x01`/`0x00` then the prefix).
    mutating func apply(subscriptionMessage message: Data) {
        guard let kind = message.first, kind <= 1 else { return }
        let prefix = Data(message.dropFirst())
        let count = (prefixCounts[prefix] ?? 0) + (kind == 1 ? 1 : -1)
        prefixCounts[prefix] = count > 0 ? count : nil
        let topic = Data(BrokerProtocol.rpc.name.utf8)
        isEnabled = prefixCounts.keys.contains { !$0.isEmpty && topic.starts(with: $0) }
    }

    /// The three frames of one trace event.
    mutating func event(_ trace: RPCTrace) -> [Data] {
        seq += 1
        let header = EventHeader(
            id: "\(idPrefix)-\(seq)", source: BrokerProtocol.serviceName, instance: instance, seq: seq,
            ts: Date().unixMilliseconds, user: trace.user)
        let payload = (try? WireCoding.encode(trace)) ?? Data("{}".utf8)
        return [Data(BrokerProtocol.rpc.name.utf8), header.encoded(), payload]
    }
}

/// Logs a kind of problem at most once per interval, with how many were not logged.
struct RateLimitedReport {
    private var lastReport: ContinuousClock.Instant?
    private var suppressed = 0
    let interval: Duration

    init(interval: Duration) { self.interval = interval }

    /// Returns how many occurrences to report now (this one plus those suppressed), or nil.
    mutating func occurrence(now: ContinuousClock.Instant) -> Int? {
        if let lastReport, now - lastReport < interval {
            suppressed += 1
            return nil
        }
        lastReport = now
        defer { suppressed = 0 }
        return suppressed + 1
    }
}
