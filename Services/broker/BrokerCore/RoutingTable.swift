import Bus
import Foundation
import Wire
import ZMQ

/// A FIFO that is cheap at both ends (requests waiting for a worker).
struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    mutating func append(_ item: Element) { items.append(item) }

    mutating func prepend(_ item: Element) {
        if head > 0 {
            head -= 1
            items[head] = item
        } else {
            items.insert(item, at: 0)
        }
    }

    var first: Element? { head < items.count ? items[head] : nil }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        items[head] = nil
        head += 1
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Removes and returns every element matching `predicate`, keeping the order of the rest.
    mutating func removeAll(where predicate: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept: [Element?] = []
        kept.reserveCapacity(count)
        for case let item? in items[head...] {
            if predicate(item) { removed.append(item) } else { kept.append(item) }
        }
        items = kept
        head = 0
        return removed
    }
}

/// What the broker remembers of a request from its arrival to its answer: who to answer, and
/// what a `bus.rpc` trace of it says.
struct RequestRecord {
    let client: Data
    let id: String
    let deadlineMs: Int64?
    let methodName: String
    let user: String?
    let receivedAt: ContinuousClock.Instant
    let requestBytes: Int

    var key: RequestKey { RequestKey(client: client, id: id) }
    var trace: TraceContext { (methodName, user, receivedAt, requestBytes) }
}

/// A client request waiting in a service's queue, with its method, header, payload and
/// optional attachment parts, moved (not copied) out of the message that brought them.
struct QueuedRequest {
    let record: RequestRecord
    let parts: ZMQMultipart
    /// The parts' size, counted against the client's and the broker's queued bytes.
    let bytes: Int
}

/// A client with requests the broker has not answered yet: their ids, so that a second request
/// under one of them is refused (it would take a second place at a worker under the same key,
/// past the worker's credit), and the bytes of those waiting in queues. Made for a client's
/// first outstanding request and dropped with its last, so the table follows the requests.
final class ClientRecord {
    // Touched for every request, by the broker thread only (see BrokerLoop.services).
    @exclusivity(unchecked) var outstandingIDs: Set<String> = []
    @exclusivity(unchecked) var queuedBytes = 0
}

/// A worker holds requests of one client under that client's ids.
struct RequestKey: Hashable {
    let client: Data
    let id: String
}

/// A registered worker connection.
final class WorkerRecord {
    let identity: Data
    let service: ServiceRecord
    let credit: Int
    // Touched for every request and reply, by the broker thread only (see BrokerLoop.services).
    @exclusivity(unchecked) var inFlight: [RequestKey: RequestRecord] = [:]
    @exclusivity(unchecked) var expiresAt: ContinuousClock.Instant
    /// When it sent READY.
    let since = Date()
    /// What it answered to the broker's `_health` (Addition 19), and the question out now.
    var probe = WorkerProbe()

    init(identity: Data, service: ServiceRecord, credit: Int, expiresAt: ContinuousClock.Instant) {
        self.identity = identity
        self.service = service
        self.credit = credit
        self.expiresAt = expiresAt
    }

    /// The worker as `mmi.services` and the console list it.
    var status: WorkerStatus {
        WorkerStatus(id: String(hexIdentity.prefix(10)), credit: credit, inFlight: inFlight.count, since: since,
                     build: probe.build, health: probe.health)
    }

    var freeCredit: Int { credit - inFlight.count }
    var hexIdentity: String { identity.map { String(format: "%02x", $0) }.joined() }
}

/// A service: its workers, its queue, its counters.
final class ServiceRecord {
    let name: String
    // Touched for every request, by the broker thread only (see BrokerLoop.services).
    @exclusivity(unchecked) var workers: [WorkerRecord] = [] {
        didSet { idleSince = workers.isEmpty ? ContinuousClock.now : nil }
    }
    /// Since when the service has had no worker; its record expires some time after.
    @exclusivity(unchecked) private(set) var idleSince: ContinuousClock.Instant? = ContinuousClock.now
    @exclusivity(unchecked) var queue = FIFO<QueuedRequest>()
    @exclusivity(unchecked) var requests: UInt64 = 0
    @exclusivity(unchecked) private var rotation = 0

    init(name: String) { self.name = name }

    /// The worker with the most free credit, rotating among equals so load spreads.
    func workerWithFreeCredit() -> WorkerRecord? {
        guard !workers.isEmpty else { return nil }
        var best: WorkerRecord?
        for offset in 0..<workers.count {
            let worker = workers[(rotation + offset) % workers.count]
            if worker.freeCredit > 0 && worker.freeCredit > (best?.freeCredit ?? 0) { best = worker }
        }
        rotation = (rotation + 1) % workers.count
        return best
    }

    var inFlight: Int { workers.reduce(0) { $0 + $1.inFlight.count } }
    var totalCredit: Int { workers.reduce(0) { $0 + $1.credit } }

    /// The service's line in `mmi.services`, with its workers.
    var status: ServiceStatus {
        ServiceStatus(name: name, workers: workers.count, credit: totalCredit, inFlight: inFlight, queued: queue.count,
                      requests: requests, instances: workers.map(\.status))
    }
}

/// Clients cut off for not reading their replies (slow consumers): nothing is sent to them and
/// what they send is dropped, for ``memory`` after the cut or until ``remembered`` later cuts,
/// whichever comes first. A client that reconnects is a new peer (a new identity) at once.
struct SlowConsumers {
    static let memory: Duration = .seconds(60)
    static let remembered = 10_000
    private var identities: Set<Data> = []
    private var order = FIFO<(identity: Data, at: ContinuousClock.Instant)>()
    /// Clients cut off since the broker started.
    private(set) var total = 0

    var isEmpty: Bool { identities.isEmpty }

    func contains(_ identity: Data) -> Bool { identities.contains(identity) }

    /// Cuts `identity` off; returns false if it is already.
    mutating func cutOff(_ identity: Data, now: ContinuousClock.Instant) -> Bool {
        guard identities.insert(identity).inserted else { return false }
        order.append((identity, now))
        total += 1
        if identities.count > Self.remembered, let oldest = order.popFirst() { identities.remove(oldest.identity) }
        return true
    }

    /// Forgets the clients cut off before `cutoff`.
    mutating func forget(cutOffBefore cutoff: ContinuousClock.Instant) {
        while let oldest = order.first, oldest.at < cutoff {
            _ = order.popFirst()
            identities.remove(oldest.identity)
        }
    }
}
