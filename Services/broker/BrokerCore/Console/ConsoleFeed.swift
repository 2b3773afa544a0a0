import Bus
import Foundation
import Synchronization
import Wire

/// What the operator console shows of the broker, handed from the broker thread to the
/// monitoring server: the services with their workers, per-method counts in 10-second buckets
/// over the last five minutes, and a tail of recent events and calls.
///
/// The broker thread writes through its ``ConsoleRecorder``, which batches what one pass of its
/// loop saw and hands it over here under the lock once per pass; the monitoring server reads
/// copies under the same lock. Neither side touches the other's sockets or routing state.
/// Everything is bounded: ``tailCapacity`` entries, ``bucketCount`` buckets of at most
/// ``maximumMethods`` methods each, and the services the broker keeps (`BROKER_MAX_SERVICES`).
public final class ConsoleFeed: Sendable {
    static let tailCapacity = 1000
    static let bucketSeconds: Int64 = 10
    static let bucketCount = 30
    static let maximumMethods = 256
    /// How long the tail is filled after the last time someone read it.
    static let tailInterest: Duration = .seconds(15)
    /// What one entry keeps of an event's frames, in bytes.
    static let topicBytes = 256, headerBytes = 2048, payloadBytes = 1024

    struct State {
        var services: [ServiceStatus] = []
        var buckets: [StatsBucket] = []
        var tail: [ConsoleTailEntry] = []
        var nextSeq: Int64 = 1
    }

    private let state = Mutex(State())
    private let started = ContinuousClock.now
    /// Until when (milliseconds after `started`) someone wants the tail: the broker thread
    /// copies events and calls only then.
    private let tailWantedUntil = Atomic<Int64>(0)
    /// When the broker started, for rates over windows longer than its life.
    let startedAt = Date()

    public init() {}

    // MARK: Written by the broker thread

    func isTailWanted(now: ContinuousClock.Instant) -> Bool {
        tailWantedUntil.load(ordering: .relaxed) > (now - started).wholeMicroseconds / 1000
    }

    /// Takes what the broker thread recorded in one pass.
    func deliver(samples: [MethodKey: MethodSample], tail: [ConsoleTailEntry], services: [ServiceStatus]?, epoch: Int64) {
        state.withLock { state in
            if let services { state.services = services }
            if !samples.isEmpty { state.merge(samples, epoch: epoch) }
            for var entry in tail {
                entry.seq = state.nextSeq
                state.nextSeq += 1
                state.tail.append(entry)
            }
            if state.tail.count > Self.tailCapacity { state.tail.removeFirst(state.tail.count - Self.tailCapacity) }
        }
    }

    // MARK: Read by the monitoring server

    /// The services and per-method figures over the last `window` seconds (10–300).
    func overview(window: Int64, now: Date = Date()) -> ConsoleOverview {
        let (services, buckets) = state.withLock { ($0.services, $0.buckets) }
        let window = min(max(window, Self.bucketSeconds), Self.bucketSeconds * Int64(Self.bucketCount))
        let epoch = Self.epoch(of: now)
        let first = epoch - window / Self.bucketSeconds + 1
        var totals: [MethodKey: MethodSample] = [:]
        for bucket in buckets where bucket.epoch >= first && bucket.epoch <= epoch {
            for (key, sample) in bucket.methods { totals[key, default: MethodSample()].add(sample) }
        }
        // The rate is over the part of the window the broker has been up for.
        let seconds = max(1, min(Double(window), now.timeIntervalSince(startedAt)))
        let methods = totals.map { key, sample in
            MethodFigures(service: key.service, method: key.method, requests: sample.count, perSecond: Double(sample.count) / seconds,
                          notOK: sample.notOK, errors: sample.errors,
                          p50Ms: sample.latency.quantile(0.5), p99Ms: sample.latency.quantile(0.99))
        }.sorted { ($0.requests, $1.service, $1.method) > ($1.requests, $0.service, $0.method) }
        return ConsoleOverview(
            broker: BrokerFigures(build: BuildInfo.stamp, startedAt: startedAt), windowSeconds: window, services: services, methods: methods)
    }

    /// Entries after `after` whose subject `pattern` matches (all without one), at most
    /// `limit`, oldest first. Reading says the tail is wanted for the next ``tailInterest``.
    func tail(after: Int64, matching pattern: SubjectPattern?, limit: Int) -> ConsoleTail {
        tailWantedUntil.store((ContinuousClock.now - started + Self.tailInterest).wholeMicroseconds / 1000, ordering: .relaxed)
        return state.withLock { state in
            let newer = state.tail.drop { $0.seq <= after }
            let missed = (newer.first?.seq ?? state.nextSeq) > after + 1 && after > 0
            let matching = newer.filter { pattern?.matches($0.subject) ?? true }.suffix(limit)
            return ConsoleTail(entries: Array(matching), next: state.nextSeq - 1, missed: missed)
        }
    }

    /// The newest entry's number: where a tail starts that wants only what comes next.
    var lastSeq: Int64 { state.withLock { $0.nextSeq - 1 } }

    static func epoch(of date: Date) -> Int64 { Int64(date.timeIntervalSince1970) / bucketSeconds }
}

extension ConsoleFeed.State {
    mutating func merge(_ samples: [MethodKey: MethodSample], epoch: Int64) {
        if buckets.last?.epoch != epoch {
            buckets.append(StatsBucket(epoch: epoch))
            buckets.removeAll { $0.epoch <= epoch - Int64(ConsoleFeed.bucketCount) }
        }
        let index = buckets.count - 1
        for (key, sample) in samples {
            var key = key
            if buckets[index].methods[key] == nil && buckets[index].methods.count >= ConsoleFeed.maximumMethods { key = .other }
            buckets[index].methods[key, default: MethodSample()].add(sample)
        }
    }
}

/// A method of a service, as the console counts it.
struct MethodKey: Hashable {
    let service: String
    let method: String

    /// Where methods beyond ``ConsoleFeed/maximumMethods`` in one bucket are counted.
    static let other = MethodKey(service: "_other", method: "_other")
}

/// Requests of one method in one bucket: how many, how many failed, and their latencies.
struct MethodSample {
    var count = 0
    /// Answers with any code but OK.
    var notOK = 0
    /// Answers saying the server failed: INTERNAL, UNKNOWN, DATA_LOSS, UNAVAILABLE (what the
    /// example alert counts, docs/operations.md, "Monitoring").
    var errors = 0
    var latency = LatencyHistogram()

    static let failures: Set<StatusCode> = [.internal, .unknown, .dataLoss, .unavailable]

    mutating func add(code: StatusCode, latencyUs: Int64) {
        count += 1
        if code != .ok { notOK += 1 }
        if Self.failures.contains(code) { errors += 1 }
        latency.add(latencyUs)
    }

    mutating func add(_ other: MethodSample) {
        count += other.count
        notOK += other.notOK
        errors += other.errors
        latency.add(other.latency)
    }
}

/// Latencies in buckets 25% apart from 50 µs up (the last takes everything longer than about
/// 60 s), so a quantile is known to within 25%.
struct LatencyHistogram {
    static let bucketCount = 64
    static let first = 50.0
    static let growth = 1.25
    private(set) var counts = [UInt32](repeating: 0, count: bucketCount)

    /// The bucket of `microseconds`: the first whose upper bound is at least it.
    static func bucket(_ microseconds: Int64) -> Int {
        guard Double(microseconds) > first else { return 0 }
        return min(bucketCount - 1, Int((log(Double(microseconds) / first) / log(growth)).rounded(.up)))
    }

    /// The upper bound of bucket `index`, in microseconds.
    static func upperBound(_ index: Int) -> Double { first * pow(growth, Double(index)) }

    mutating func add(_ microseconds: Int64) {
        let index = Self.bucket(microseconds)
        counts[index] &+= 1
    }

    mutating func add(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] &+= other.counts[index] }
    }

    /// The upper bound of the bucket holding quantile `q`, in milliseconds; nil when empty.
    func quantile(_ q: Double) -> Double? {
        let total = counts.reduce(0) { $0 + Int($1) }
        guard total > 0 else { return nil }
        let rank = max(1, Int((q * Double(total)).rounded(.up)))
        var seen = 0
        for (index, count) in counts.enumerated() {
            seen += Int(count)
            if seen >= rank { return Self.upperBound(index).rounded() / 1000 }
        }
        return nil
    }
}

/// Ten seconds of per-method counts.
struct StatsBucket {
    let epoch: Int64
    var methods: [MethodKey: MethodSample] = [:]
}

/// One line of the console's tail: an event the broker forwarded, or a call it saw answered.
struct ConsoleTailEntry: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable { case event, call }

    /// The console's own number, from 1, one per entry: the tail's cursor.
    var seq: Int64 = 0
    /// When the broker saw it, Unix milliseconds.
    var ts: Int64
    var kind: Kind
    /// What the topic filter matches: the event's topic, or `bus.rpc.SERVICE.METHOD` for a call.
    var subject: String
    /// An event's header as it was sent (at most 2 KiB).
    var header: String?
    /// The start of an event's payload (at most 1 KiB).
    var payload: String?
    /// True when the header or payload was cut.
    var truncated: Bool?
    /// A call, as `bus.rpc` carries it (no payloads).
    var call: RPCTrace?
}

/// What `/console/api/overview` answers.
struct ConsoleOverview: Codable, Sendable {
    var broker: BrokerFigures
    var windowSeconds: Int64
    var services: [ServiceStatus]
    var methods: [MethodFigures]
}

struct BrokerFigures: Codable, Sendable {
    var build: BuildStamp
    var startedAt: Date
}

/// One method over the overview's window.
struct MethodFigures: Codable, Sendable, Equatable {
    var service: String
    var method: String
    var requests: Int
    var perSecond: Double
    var notOK: Int
    var errors: Int
    var p50Ms: Double?
    var p99Ms: Double?
}

/// What `/console/api/tail` answers: entries, the cursor to ask from next, and whether entries
/// after the cursor asked from were dropped before this read (the buffer is bounded).
struct ConsoleTail: Codable, Sendable {
    var entries: [ConsoleTailEntry]
    var next: Int64
    var missed: Bool
}
