import Foundation
import Glibc
import Synchronization
import TestSupport

/// Several hosts on one machine: a Linux network namespace per host, each with its own address
/// on a bridge (in a namespace of its own, so the machine's network is not touched), and the
/// test process attached to the same bridge. Processes started on a host talk to the others
/// over a real, if virtual, network, where faults can be injected: a host that vanishes without
/// a FIN or RST (iptables DROP), a link that is down, delay and loss (``impairLinks(_:seed:)``:
/// our kernels have no netem). A host may have a CPU of its own: a cgroup with a quota
/// (``CPUQuota``) that every process started on it joins before it runs, so two real cores can be
/// shared out like several small machines.
///
/// Needs root (CI and the development machines run tests as root) and iproute2 and iptables
/// (scripts/requirements/apt). ``remove()`` deletes every namespace and cgroup it made, and with
/// them their links; a network left behind by a test that crashed is removed by the next one
/// that takes its number.
final class VirtualHosts: Sendable {
    /// The network's number: its subnet is 10.77.N.0/24 and its names start with `sbN`.
    let number: Int
    private let hosts: [String]
    private let cpus = Mutex<[String: CPUQuota]>([:])
    private let processes = Mutex<[ChildProcess]>([])
    /// The numbers of this process's networks: suites run at once, and each clears its number first.
    private static let numbersInUse = Mutex<Set<Int>>([])

    /// Where the test process is on the network.
    var testAddress: String { "10.77.\(number).254" }

    /// Makes a network with `hosts` (host `i` of the list gets address 10.77.N.(i+1)); a host
    /// named in `cpuCores` gets that many cores (e.g. 0.25), the others share the machine's.
    init(hosts: [String], cpuCores: [String: Double] = [:]) throws {
        precondition(!hosts.isEmpty && hosts.count < 200 && Set(cpuCores.keys).isSubset(of: hosts))
        number = Self.numbersInUse.withLock { used in
            let number = (1...250).filter { !used.contains($0) }.randomElement()!
            used.insert(number)
            return number
        }
        self.hosts = hosts
        Self.removeNamespaces(prefix: "sb\(number)-")
        CPUQuota.removeLeftovers(prefix: "sb\(number)-")
        do {
            for (host, cores) in cpuCores {
                let quota = try CPUQuota(name: namespace(host), cores: cores)
                cpus.withLock { $0[host] = quota }
            }
            try Self.ip("netns", "add", switchNamespace)
            try Self.ip("-n", switchNamespace, "link", "add", "br0", "type", "bridge")
            try Self.ip("-n", switchNamespace, "link", "set", "br0", "up")
            for host in hosts {
                try Self.ip("netns", "add", namespace(host))
                try connect(host)
            }
            try attach(name: "sb\(number)t", into: nil, address: testAddress)
        } catch {
            remove()
            throw error
        }
    }

    /// The namespace of the bridge.
    var switchNamespace: String { "sb\(number)-net" }

    /// The bridge's ports, where the test's cable and then each host's (in the order of `hosts`) plug in.
    var bridgePorts: [String] { ["sb\(number)tp"] + hosts.map { linkName($0) + "p" } }

    /// The namespace of `host`.
    func namespace(_ host: String) -> String { "sb\(number)-\(host)" }

    /// The address of `host`.
    func address(_ host: String) -> String {
        guard let index = hosts.firstIndex(of: host) else { preconditionFailure("no host \(host)") }
        return "10.77.\(number).\(index + 1)"
    }

    /// A veth pair: `name` in `namespace` (the test's own when nil) as eth0 with `address`, its
    /// peer on the bridge.
    private func attach(name: String, into namespace: String?, address: String) throws {
        let peer = name + "p"
        // A fixed MAC per address, as a real host's NIC has across reboots: peers' ARP caches stay right.
        let lastOctets = address.split(separator: ".").suffix(2).map { String(format: "%02x", Int($0)!) }.joined(separator: ":")
        try Self.ip("link", "add", name, "address", "02:77:00:00:\(lastOctets)", "type", "veth", "peer", "name", peer)
        try Self.ip("link", "set", peer, "netns", switchNamespace)
        try Self.ip("-n", switchNamespace, "link", "set", peer, "master", "br0", "up")
        if let namespace {
            try Self.ip("link", "set", name, "netns", namespace)
            try Self.ip("-n", namespace, "link", "set", name, "name", "eth0")
            try Self.ip("-n", namespace, "addr", "add", "\(address)/24", "dev", "eth0")
            try Self.ip("-n", namespace, "link", "set", "eth0", "up")
        } else {
            try Self.ip("addr", "add", "\(address)/24", "dev", name)
            try Self.ip("link", "set", name, "up")
        }
    }

    /// Starts `executable` with `arguments` on `host` with `environment` added to the test's; its
    /// output goes to `logFile`. Stopped by ``remove()`` if still running.
    @discardableResult
    func start(on host: String, _ executable: String, arguments: [String] = [], environment: [String: String], logFile: String) throws -> ChildProcess {
        // `ip netns exec` enters the namespace and then execs the program: the pid is the program's.
        var command = [Self.ipPath, "netns", "exec", namespace(host), executable] + arguments
        if let cpu = cpu(host) {
            // A shell joins the host's cgroup and then execs the rest, so not one instruction of
            // the program runs outside its quota (and the pid stays the program's).
            command = ["/bin/sh", "-c", #"while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@""#, "sh"]
                + cpu.processListFiles + ["--"] + command
        }
        let process = try ChildProcess(executable: command[0], arguments: Array(command.dropFirst()), environment: environment, logFile: logFile)
        processes.withLock { $0.append(process) }
        return process
    }

    /// The CPU of `host`, when it has a quota.
    func cpu(_ host: String) -> CPUQuota? { cpus.withLock { $0[host] } }

    // MARK: Faults

    /// `host` vanishes from the network without closing anything: every packet in and out is
    /// dropped, so its peers see no FIN or RST and learn of it only by their heartbeats.
    func cut(_ host: String) throws {
        for (chain, direction) in [("INPUT", "-i"), ("OUTPUT", "-o")] {
            try Self.ip("netns", "exec", namespace(host), "iptables", "-A", chain, direction, "eth0", "-j", "DROP")
        }
    }

    /// Undoes ``cut(_:)``.
    func heal(_ host: String) throws {
        for chain in ["INPUT", "OUTPUT"] { try Self.ip("netns", "exec", namespace(host), "iptables", "-F", chain) }
    }

    /// `host` restarts as after a power cut: its namespace, and with it every connection its
    /// kernel knew, is made anew with the same address. Stop its processes first. A peer learns
    /// of it only when it sends something and gets an RST back.
    func reboot(_ host: String) throws {
        // The link first: a namespace's links go with it, but only later, in the kernel's own time.
        try Self.ip("-n", switchNamespace, "link", "del", linkName(host) + "p")
        try Self.ip("netns", "del", namespace(host))
        try Self.ip("netns", "add", namespace(host))
        try connect(host)
    }

    private func linkName(_ host: String) -> String { "sb\(number)h\(hosts.firstIndex(of: host)!)" }

    /// Gives `host`'s namespace its link to the bridge and its loopback.
    private func connect(_ host: String) throws {
        try attach(name: linkName(host), into: namespace(host), address: address(host))
        try Self.ip("-n", namespace(host), "link", "set", "lo", "up")
    }

    // MARK: Cleaning up

    /// Stops the processes started on the hosts and deletes every namespace and cgroup of the
    /// network.
    func remove() {
        let started = processes.withLock { $0 }
        for process in started {
            process.send(SIGKILL)
            _ = waitpid(process.pid, nil, 0)
        }
        for quota in cpus.withLock({ $0.values }) { quota.remove() }
        Self.removeNamespaces(prefix: "sb\(number)-")
        _ = Self.numbersInUse.withLock { $0.remove(number) }
    }

    private static func removeNamespaces(prefix: String) {
        let listed = (try? ip("netns", "list")) ?? ""
        for line in listed.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            if name.hasPrefix(prefix) { _ = try? ip("netns", "del", name) }
        }
    }

    // MARK: Commands

    static let ipPath = "/usr/sbin/ip"

    @discardableResult
    private static func ip(_ arguments: String...) throws -> String { try ip(arguments) }

    /// Runs `ip` with `arguments` to its end (`ip netns exec` runs iptables in a namespace);
    /// its output, or an error with what it said.
    @discardableResult
    static func ip(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipPath)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw CommandFailed(command: "ip " + arguments.joined(separator: " "), output: text) }
        return text
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let command: String
        let output: String
        var description: String { "\(command) failed: \(output)" }
    }
}
