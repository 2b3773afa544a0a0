import Bus
import Foundation
import Wire

/// Produces `bus.rpc` events, but only while some subscriber asked for them: a non-empty prefix
/// of `bus.rpc` (`bus.rpc`, `bus.`, `b`). A subscription to everything (`""`) does not count, so
/// tailing all events does not make the broker trace every call.
///
/// The tracer counts the subscribers of each of the seven prefixes that matter and ignores the
/// others: constant work per subscription message, however many subscriptions there are. What
/// it is told depends on the broker's XPUB mode:
///
/// - security off (libzmq's default mode): a subscribe when a prefix gets its first
///   subscriber, an unsubscribe when its last one leaves, all ``Sender/trusted``;
/// - security on (manual mode): every subscribe and unsubscribe with its sender's key. Only
///   operators may trace, so a non-operator's subscribe is ``Sender/refused`` and its
///   unsubscribe ignored: a key that may not trace cannot switch tracing off for an operator.
///   libzmq reports each subscription of a closed connection, admitted or not, as an
///   unsubscribe without a sender (``Sender/disconnected``); those take away refused ones
///   first. So tracing may stay on after the last operator left, never off while one listens.
struct RPCTracer {
    /// Who sent a subscription message.
    enum Sender {
        /// Security off, or an operator's key: its messages count.
        case trusted
        /// A key that may not trace: its subscribes were refused, its unsubscribes mean nothing.
        case refused
        /// libzmq, for a subscription of a connection that closed.
        case disconnected
    }

    private static let topic = Array(BrokerProtocol.rpc.name.utf8)
    /// Subscribers of the prefix of `bus.rpc` of `n` bytes, at `n - 1`.
    private var listeners = [Int](repeating: 0, count: topic.count)
    /// Refused subscribes to that prefix whose connections may still close.
    private var refused = [Int](repeating: 0, count: topic.count)
    private var seq: Int64 = 0
    private let idPrefix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let instance: String

    init(instance: String) { self.instance = instance }

    var isEnabled: Bool { listeners.contains { $0 > 0 } }

    /// Applies one XPUB subscription message (`0x01`/`0x00` then the prefix).
    mutating func apply(subscriptionMessage message: UnsafeRawBufferPointer, from sender: Sender) {
        guard let kind = message.first, kind <= 1, let index = Self.prefixIndex(message.dropFirst()) else { return }
        switch (kind, sender) {
        case (1, .trusted): listeners[index] += 1
        case (1, _): refused[index] += 1
        case (_, .trusted): listeners[index] = max(0, listeners[index] - 1)
        case (_, .refused): break
        case (_, .disconnected):
            if refused[index] > 0 { refused[index] -= 1 } else { listeners[index] = max(0, listeners[index] - 1) }
        }
    }

    mutating func apply(subscriptionMessage message: Data, from sender: Sender = .trusted) {
        message.withUnsafeBytes { apply(subscriptionMessage: $0, from: sender) }
    }

    /// Which prefix of `bus.rpc` `prefix` is, if it is one.
    private static func prefixIndex(_ prefix: Slice<UnsafeRawBufferPointer>) -> Int? {
        guard !prefix.isEmpty, prefix.count <= topic.count, prefix.elementsEqual(topic.prefix(prefix.count)) else { return nil }
        return prefix.count - 1
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
