import Foundation
import Wire

/// The broker thread's side of the ``ConsoleFeed``: it counts every answered request (a
/// dictionary update, no lock), copies events and calls for the tail only while someone reads
/// it, and hands the lot to the feed once per pass of the loop, with the services once a second.
/// Lives on the broker thread only, like the routing state it reads.
final class ConsoleRecorder {
    let feed: ConsoleFeed
    private var samples: [MethodKey: MethodSample] = [:]
    private var tail: [ConsoleTailEntry] = []
    private var nextServices: ContinuousClock.Instant
    /// Whether someone read the tail lately: checked once per pass.
    private(set) var tailWanted = false
    static let servicesInterval: Duration = .seconds(1)

    init(feed: ConsoleFeed, now: ContinuousClock.Instant) {
        self.feed = feed
        nextServices = now
    }

    /// A request of `key` answered with `code` after `latencyUs`.
    func count(_ key: MethodKey, code: StatusCode, latencyUs: Int64) {
        samples[key, default: MethodSample()].add(code: code, latencyUs: latencyUs)
    }

    /// A finished call for the tail (only while ``tailWanted``).
    func record(_ trace: RPCTrace) {
        append(ConsoleTailEntry(ts: Date().unixMilliseconds, kind: .call, subject: "\(BrokerProtocol.rpc.name).\(trace.service).\(trace.method)", call: trace))
    }

    /// A forwarded event's first three frames, each cut to what the tail keeps (only while
    /// ``tailWanted``); `truncated` says whether any was cut.
    func recordEvent(_ frames: [Data], truncated: Bool) {
        func text(_ index: Int) -> String? { index < frames.count ? String(decoding: frames[index], as: UTF8.self) : nil }
        append(ConsoleTailEntry(
            ts: Date().unixMilliseconds, kind: .event, subject: text(0) ?? "", header: text(1), payload: text(2), truncated: truncated ? true : nil))
    }

    /// The bytes of an event's frame `index` the tail keeps.
    static func limit(ofFrame index: Int) -> Int {
        switch index {
        case 0: ConsoleFeed.topicBytes
        case 1: ConsoleFeed.headerBytes
        default: ConsoleFeed.payloadBytes
        }
    }

    private func append(_ entry: ConsoleTailEntry) {
        // One pass reads at most a few batches; more than the feed keeps would be dropped there.
        if tail.count >= ConsoleFeed.tailCapacity { tail.removeFirst() }
        tail.append(entry)
    }

    /// Hands what this pass recorded to the feed; `services` is asked for once a second.
    func flush(now: ContinuousClock.Instant, services: () -> [ServiceStatus]) {
        var statuses: [ServiceStatus]?
        if now >= nextServices {
            statuses = services()
            nextServices = now + Self.servicesInterval
        }
        if statuses != nil || !samples.isEmpty || !tail.isEmpty {
            feed.deliver(samples: samples, tail: tail, services: statuses, epoch: ConsoleFeed.epoch(of: Date()))
            samples.removeAll(keepingCapacity: true)
            tail.removeAll(keepingCapacity: true)
        }
        tailWanted = feed.isTailWanted(now: now)
    }
}
