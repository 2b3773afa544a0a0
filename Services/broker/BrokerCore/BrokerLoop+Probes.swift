import Bus
import Foundation
import Wire
import ZMQ

/// What the broker learnt of a worker from its own `_health` questions (wire protocol, Addition
/// 19): the build the worker runs and whether it serves.
struct WorkerProbe {
    var build: BuildStamp?
    /// `SERVING`, `NOT_SERVING`, or the status code name of an error answer; nil until answered.
    var health: String?
    /// The question out now: its request id and when it went.
    var pending: (id: String, sentAt: ContinuousClock.Instant)?
    /// When to ask next; nil: at the next chance.
    var nextAt: ContinuousClock.Instant?
}

extension BrokerLoop {
    /// The client address of the broker's own questions to workers. libzmq reserves routing
    /// identities that start with a zero byte for the ones it makes up (5 bytes), so no client's
    /// address is this one.
    static let probeClient = Data([0]) + Data("broker-probe".utf8)
    /// How often each worker is asked again: a draining worker shows within this.
    static let probeInterval: Duration = .seconds(10)
    /// How long an unanswered question counts as out; then the worker may be asked again.
    static let probeTimeout: Duration = .seconds(5)
    private static let healthMethod = Data("_health".utf8)

    /// Asks `worker` for `_health` unless a question to it is out (and not timed out). The
    /// request takes none of the worker's credit: every StudyBus host answers `_health` on its
    /// I/O thread, beside the requests its credit counts. A worker that does not answer keeps
    /// the build it last named.
    func probe(_ worker: WorkerRecord, now: ContinuousClock.Instant) {
        if let pending = worker.probe.pending, now - pending.sentAt < Self.probeTimeout { return }
        probesSent += 1
        let id = "broker-probe-\(probesSent)"
        let header = RequestHeader(id: id, deadline: Date().unixMilliseconds + Int64(Self.probeTimeout.components.seconds) * 1000).encoded()
        let sent = send(to: worker.identity, [
            MDP.Frames.empty, MDP.Frames.worker, MDP.Command.request.frame, Self.probeClient, MDP.Frames.empty, Self.healthMethod, header,
            MDP.Frames.empty,
        ])
        worker.probe.pending = sent ? (id, now) : nil
        worker.probe.nextAt = now + Self.probeInterval
    }

    /// Asks every worker whose time has come (at each heartbeat pass).
    func probeWorkers(now: ContinuousClock.Instant) {
        for worker in workers.values where worker.probe.nextAt.map({ now >= $0 }) ?? true {
            probe(worker, now: now)
        }
    }

    /// Takes the REPLY in `message` (from `worker`, with `header`) if it answers the broker's own
    /// question; returns false when it is addressed to a client.
    func takeProbeAnswer(from worker: WorkerRecord, client: Data, header: ReplyHeader) -> Bool {
        guard client == Self.probeClient else { return false }
        guard let pending = worker.probe.pending, pending.id == header.id else { return true }
        worker.probe.pending = nil
        guard header.code == .ok else {
            worker.probe.health = header.code.name
            return true
        }
        let health = try? WireCoding.decode(HealthStatus.self, from: message.bytes(7))
        worker.probe.health = health?.status.rawValue ?? StatusCode.invalidArgument.name
        if let build = health?.build { worker.probe.build = build }
        return true
    }
}
