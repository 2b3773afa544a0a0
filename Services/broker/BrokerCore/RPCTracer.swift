import Bus
import Foundation
import Wire

/// Produces `bus.rpc` events, but only while some subscriber asked for them: a non-empty prefix
/// of `bus.rpc` (`bus.rpc`, `bus.`, `b`). A subscription to everything (`""`) does not count, so
/// tailing all events does not make the broker trace every call.
///
/// The broker learns of subscriptions from its XPUB socket in libzmq's default mode: a
/// subscribe when a prefix gets its first subscriber, an unsubscribe when its last one leaves
/// (also by disconnecting). So the tracer keeps one bit for each of the seven prefixes that
/// matter and ignores the others: constant work per subscription message, however many
/// subscriptions there are.
struct RPCTracer {
    private static let topic = Array(BrokerProtocol.rpc.name.utf8)
    /// Bit `n - 1` is set while the prefix of `bus.rpc` of `n` bytes has a subscriber.
    private var subscribedPrefixes: UInt8 = 0
    private var seq: Int64 = 0
    private let idPrefix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let instance: String

    init(instance: String) { self.instance = instance }

    var isEnabled: Bool { subscribedPrefixes != 0 }

    /// Applies one XPUB subscription message (`0x01`/`0x00` then the prefix).
    mutating func apply(subscriptionMessage message: UnsafeRawBufferPointer) {
        guard let kind = message.first, kind <= 1 else { return }
        let prefix = message.dropFirst()
        guard !prefix.isEmpty, prefix.count <= Self.topic.count, prefix.elementsEqual(Self.topic.prefix(prefix.count)) else { return }
        let bit = UInt8(1) << (prefix.count - 1)
        if kind == 1 { subscribedPrefixes |= bit } else { subscribedPrefixes &= ~bit }
    }

    mutating func apply(subscriptionMessage message: Data) {
        message.withUnsafeBytes { apply(subscriptionMessage: $0) }
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
