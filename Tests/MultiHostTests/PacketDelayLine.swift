import CNetfilterQueue
import Dispatch
import Glibc
import Synchronization
import TestSupport
import Threads

/// What a link does to the packets it carries, as `tc netem delay D J loss L limit N` would.
struct LinkFault: Sendable {
    /// How long each packet is held before it goes on.
    var delay: Duration
    /// Each packet's delay is `delay` plus a uniform draw from `-jitter...jitter`, but never less
    /// than the previous packet's on the same link: packets are not reordered (netem's are).
    var jitter: Duration = .zero
    /// The probability that a packet is dropped, each packet drawn on its own (0..<1).
    var loss: Double
    /// The packets a link holds at most; the kernel drops new ones while it is full, as netem
    /// drops beyond its `limit` (whose default this is).
    var queueLimit: UInt32 = 1000
}

/// The fault injector `tc netem` would be, for kernels without `sch_netem` (ours): an iptables
/// NFQUEUE rule hands packets to user space, and this gives each one its verdict, ACCEPT after
/// `delay` or DROP with probability `loss`, in arrival order per queue.
///
/// One thread of its own owns the netlink socket and every queue: it enters `namespace` first
/// (`setns` moves only the calling thread), as a queue is bound in the network namespace of the
/// rule that feeds it. It sleeps in `poll` until a packet arrives, a held packet is due or it is
/// told to stop; no busy loop. ``stop()`` lets every held packet go before it unbinds.
final class PacketDelayLine: Sendable {
    struct Counts: Sendable {
        var passed = 0
        var dropped = 0
    }

    private let counts = Mutex(Counts())
    private let stopped = Mutex(false)
    /// An eventfd that wakes the thread to stop.
    private let stopSignal: Int32
    private let finished = DispatchSemaphore(value: 0)

    /// Binds NFQUEUE queues `queues` in `namespace` (a name under /var/run/netns) and starts
    /// holding their packets as `fault` says; with the same `seed` each queue draws the same
    /// sequence every run. Returns once the queues are bound, so rules added afterwards lose
    /// nothing to an unbound queue.
    init(namespace: String, queues: [UInt16], fault: LinkFault, seed: UInt64) throws {
        precondition(!queues.isEmpty && (0..<1).contains(fault.loss) && fault.delay >= .zero && fault.jitter >= .zero && fault.queueLimit > 0)
        stopSignal = eventfd(0, Int32(EFD_CLOEXEC))
        guard stopSignal >= 0 else { throw InjectorFailed(reason: "eventfd: \(String(cString: strerror(errno)))") }

        let bound = DispatchSemaphore(value: 0)
        let failure = Mutex<String?>(nil)
        startThread(named: "packet-delay") { [self] in
            run(namespace: namespace, queues: queues, fault: fault, seed: seed) { reason in
                failure.withLock { $0 = reason }
                bound.signal()
            }
            finished.signal()
        }
        bound.wait()
        if let reason = failure.withLock({ $0 }) {
            finished.wait()
            close(stopSignal)
            throw InjectorFailed(reason: reason)
        }
    }

    /// Packets passed on and dropped so far, over every queue.
    var total: Counts { counts.withLock { $0 } }

    /// Lets every held packet go, unbinds the queues and ends the thread; waits for it. Remove
    /// the rules first: a packet sent to a queue nobody holds is dropped.
    func stop() {
        guard stopped.withLock({ wasStopped in defer { wasStopped = true }; return !wasStopped }) else { return }
        _ = eventfd_write(stopSignal, 1)
        finished.wait()
        close(stopSignal)
    }

    /// The thread's body. `ready` is called once: with nil when every queue is bound, or with
    /// why they could not be.
    private func run(namespace: String, queues: [UInt16], fault: LinkFault, seed: UInt64, ready: (String?) -> Void) {
        let namespaceFile = open("/var/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
        guard namespaceFile >= 0 else { return ready("cannot open namespace \(namespace): \(String(cString: strerror(errno)))") }
        let entered = studybus_enter_network_namespace(namespaceFile) == 0
        close(namespaceFile)
        guard entered else { return ready("cannot enter namespace \(namespace): \(String(cString: strerror(errno)))") }

        guard let handle = nfq_open() else { return ready("nfq_open: \(String(cString: strerror(errno)))") }
        defer { nfq_close(handle) }
        var links: [HeldPackets] = []
        defer {
            for link in links {
                link.releaseAll()
                nfq_destroy_queue(link.queue)
            }
        }
        for number in queues {
            let link = HeldPackets(fault: fault, random: SeededRandom(seed: seed &+ UInt64(number)))
            let context = Unmanaged.passUnretained(link).toOpaque()
            let queue = nfq_create_queue(handle, number, { _, _, packet, context in
                // Called by nfq_handle_packet below, on this thread.
                Unmanaged<HeldPackets>.fromOpaque(context!).takeUnretainedValue().arrived(studybus_nfq_packet_id(packet))
                return 0
            }, context)
            guard let queue else { return ready("cannot bind NFQUEUE \(number) in \(namespace): \(String(cString: strerror(errno)))") }
            link.queue = queue
            links.append(link)
            guard nfq_set_mode(queue, UInt8(NFQNL_COPY_META.rawValue), 0) == 0, nfq_set_queue_maxlen(queue, fault.queueLimit) == 0 else {
                return ready("cannot configure NFQUEUE \(number): \(String(cString: strerror(errno)))")
            }
        }
        let socket = nfq_fd(handle)
        _ = studybus_netlink_ignore_enobufs(socket)
        ready(nil)

        var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: stopSignal, events: Int16(POLLIN), revents: 0)]
        var buffer = [CChar](repeating: 0, count: 65_536)
        while true {
            let now = ContinuousClock.now
            for link in links { link.release(dueBy: now) }
            let counted = links.reduce(into: Counts()) { sum, link in
                sum.passed += link.passed
                sum.dropped += link.dropped
            }
            counts.withLock { $0 = counted }
            let timeout = links.compactMap(\.nextDue).min().map { Self.milliseconds(until: $0, from: now) } ?? -1
            guard poll(&descriptors, 2, timeout) >= 0 || errno == EINTR else { break }
            if descriptors[1].revents != 0 || descriptors[0].revents & Int16(POLLERR | POLLNVAL) != 0 { break }
            guard descriptors[0].revents & Int16(POLLIN) != 0 else { continue }
            // Everything the socket holds now; each message is one packet.
            while true {
                let received = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard received > 0 else { break }
                _ = buffer.withUnsafeMutableBufferPointer { nfq_handle_packet(handle, $0.baseAddress, Int32(received)) }
            }
        }
    }

    /// Whole milliseconds from `now` until `due`, rounded up so that a packet is never let go early.
    private static func milliseconds(until due: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
        let (seconds, attoseconds) = (due - now).components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return Int32(min(seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000, Int64(Int32.max)))
    }

    struct InjectorFailed: Error, CustomStringConvertible {
        let reason: String
        var description: String { "packet delay line: \(reason)" }
    }
}

/// One queue's packets waiting for their verdict, in arrival order. Used only on the delay
/// line's thread.
private final class HeldPackets {
    var queue: OpaquePointer?
    private let fault: LinkFault
    private var random: SeededRandom
    /// Kernel packet ids and when each may go, oldest first; `first` indexes the oldest.
    private var held: [(id: UInt32, due: ContinuousClock.Instant)] = []
    private var first = 0
    private(set) var passed = 0
    private(set) var dropped = 0

    init(fault: LinkFault, random: SeededRandom) {
        self.fault = fault
        self.random = random
    }

    var nextDue: ContinuousClock.Instant? { first < held.count ? held[first].due : nil }

    func arrived(_ id: UInt32) {
        if Double.random(in: 0..<1, using: &random) < fault.loss {
            nfq_set_verdict(queue, id, UInt32(NF_DROP), 0, nil)
            dropped += 1
            return
        }
        var due = ContinuousClock.now + fault.delay
        if fault.jitter > .zero {
            let jitterNanoseconds = fault.jitter.components.seconds * 1_000_000_000 + fault.jitter.components.attoseconds / 1_000_000_000
            due += .nanoseconds(Int64.random(in: -jitterNanoseconds...jitterNanoseconds, using: &random))
        }
        if let last = held.last, first < held.count { due = max(due, last.due) }
        held.append((id, due))
    }

    func release(dueBy now: ContinuousClock.Instant) {
        while first < held.count, held[first].due <= now {
            nfq_set_verdict(queue, held[first].id, UInt32(NF_ACCEPT), 0, nil)
            passed += 1
            first += 1
        }
        // Drop the released prefix once it outweighs what is still held, so memory stays bounded
        // by the queue limit.
        if first > 64 && first * 2 > held.count {
            held.removeFirst(first)
            first = 0
        }
    }

    func releaseAll() { release(dueBy: .now + .seconds(1_000_000)) }
}
