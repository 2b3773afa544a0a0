extension VirtualHosts {
    /// Every link of the network, the test's and each host's, delays and loses packets as
    /// `fault` says until ``ImpairedLinks/heal()``: what `tc netem` on every host's interface
    /// would do. The rules sit on the bridge (br_netfilter hands bridged IPv4 to iptables): each
    /// packet entering the bridge from a cable goes to that cable's NFQUEUE, so it is held once
    /// per crossing (a round trip between two hosts takes two delays) and each link keeps its
    /// own order. IPv6 and ARP pass untouched; the hosts talk IPv4.
    func impairLinks(_ fault: LinkFault, seed: UInt64 = 27) throws -> ImpairedLinks {
        let ports = bridgePorts
        // Bound before the rules exist: a packet sent to an NFQUEUE nobody holds is dropped.
        let delayLine = try PacketDelayLine(namespace: switchNamespace, queues: ports.indices.map { UInt16($0) }, fault: fault, seed: seed)
        let impaired = ImpairedLinks(switchNamespace: switchNamespace, delayLine: delayLine)
        do {
            // On by default in a new namespace; said here because everything depends on it.
            try Self.ip(["netns", "exec", switchNamespace, "/bin/sh", "-c", "echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables"])
            for (queue, port) in ports.enumerated() {
                try Self.ip([
                    "netns", "exec", switchNamespace, "iptables", "-A", "FORWARD", "-m", "physdev", "--physdev-in", port,
                    "-j", "NFQUEUE", "--queue-num", String(queue),
                ])
            }
        } catch {
            impaired.heal()
            throw error
        }
        return impaired
    }
}

/// The links of a ``VirtualHosts`` network while they delay and lose packets.
final class ImpairedLinks: Sendable {
    let delayLine: PacketDelayLine
    private let switchNamespace: String

    fileprivate init(switchNamespace: String, delayLine: PacketDelayLine) {
        self.switchNamespace = switchNamespace
        self.delayLine = delayLine
    }

    /// Whether the bridge still sends packets to the delay line.
    var rulesInPlace: Bool {
        let rules = (try? VirtualHosts.ip(["netns", "exec", switchNamespace, "iptables", "-S", "FORWARD"])) ?? ""
        return rules.contains("NFQUEUE")
    }

    /// The kernel's figures of each queue (/proc/net/netfilter/nfnetlink_queue: number, peer,
    /// held, copy mode, copy range, dropped when full, dropped undelivered, last id, 1).
    var kernelQueues: String {
        (try? VirtualHosts.ip(["netns", "exec", switchNamespace, "cat", "/proc/net/netfilter/nfnetlink_queue"])) ?? "unreadable"
    }

    /// The links carry packets at once again: the rules go first, then the delay line lets what it
    /// holds go and ends. Safe to call more than once, and after the network was removed.
    func heal() {
        // The bridge's namespace holds no rules but these.
        _ = try? VirtualHosts.ip(["netns", "exec", switchNamespace, "iptables", "-F", "FORWARD"])
        delayLine.stop()
    }
}
