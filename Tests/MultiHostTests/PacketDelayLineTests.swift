import CNetfilterQueue
import Dispatch
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
import Threads

/// The fault injector the delay-and-loss test relies on, measured on real sockets across the
/// bridge before anything is built on it.
@Suite("A packet delay line in place of netem", .serialized)
struct PacketDelayLineTests {
    static let datagrams = 2000

    @Test("200 ms and 5 % on every link: one way takes one delay, a round trip two, about 5 % of datagrams are lost, none reordered; healed links are fast again and hold no rule")
    func delayAndLoss() async throws {
        let network = try VirtualHosts(hosts: ["echo"])
        try await running(network, stop: { $0.remove() }) { network in
            let echo = network.address("echo")
            let links = try network.impairLinks(LinkFault(delay: .milliseconds(200), loss: 0.05))
            defer { links.heal() }

            // One way: numbered datagrams from the test to the host, stamped with the monotonic
            // clock that both ends share (namespaces have their own network, not their own clocks).
            let receiver = try network.socket(on: "echo", type: SOCK_DGRAM)
            defer { close(receiver) }
            // Room for every datagram at once (each takes about 1 KiB of buffer), set before the
            // first is sent: a receiver thread that starts late on the loaded machine, or is
            // starved of CPU, loses none itself (the default holds a few hundred).
            var room: Int32 = 8 << 20
            setsockopt(receiver, SOL_SOCKET, SO_RCVBUFFORCE, &room, socklen_t(MemoryLayout<Int32>.size))
            try bind(receiver, address: echo, port: 40_000)
            let sending = SendingFlag()
            let delayLine = links.delayLine
            let receiving = Task {
                await offThePool {
                    receive(on: receiver, whileSending: sending) { delayLine.total.passed + delayLine.total.dropped >= Self.datagrams }
                }
            }
            try await offThePool {
                defer { sending.finished.withLock { $0 = true } }
                try send(Self.datagrams, to: echo, port: 40_000)
            }
            let received = await receiving.value

            let lossRate = 1 - Double(received.count) / Double(Self.datagrams)
            let queued = links.delayLine.total
            // Binomial with p = 0.05 over 2000 draws: standard deviation 0.49 %; ±2 % is four of them.
            // The receiving host's own counters: RcvbufErrors are datagrams the socket had no room for.
            let udp = (try? VirtualHosts.ip(["netns", "exec", network.namespace("echo"), "cat", "/proc/net/snmp"]))?.split(separator: "\n").filter { $0.hasPrefix("Udp:") } ?? []
            #expect((0.03...0.07).contains(lossRate), "lost \(lossRate * 100) % of \(Self.datagrams) datagrams; the delay line \(queued), the kernel's queues: \(links.kernelQueues); the host's UDP counters: \(udp)")
            #expect(received.map(\.index) == received.map(\.index).sorted(), "datagrams were reordered")
            let oneWay = received.map(\.delay).sorted()
            let (fastest, median) = (try #require(oneWay.first), oneWay[oneWay.count / 2])
            #expect(fastest >= .milliseconds(200), "a datagram arrived \(fastest) after it was sent, before the delay")
            #expect(median < .milliseconds(250), "median one-way time \(median)")

            // A round trip: TCP's handshake, SYN one way and SYN-ACK back, each held once. A lost
            // SYN or SYN-ACK is resent after a second, so the median says what a round trip takes.
            let listener = try network.socket(on: "echo", type: SOCK_STREAM)
            defer { close(listener) }
            try bind(listener, address: echo, port: 40_001)
            listen(listener, 64)
            let roundTrips = try await offThePool { try (0..<9).map { _ in try connectTime(to: echo, port: 40_001) }.sorted() }
            #expect((Duration.milliseconds(400)..<Duration.milliseconds(480)).contains(roundTrips[4]), "median handshake \(roundTrips[4]) of \(roundTrips)")
            let counted = links.delayLine.total
            print("delay line, 200 ms and 5 %: \(Self.datagrams) datagrams, \(lossRate * 100) % lost, one way \(fastest) fastest, \(median) median; handshakes \(roundTrips)")
            #expect(counted.dropped > 0 && counted.passed > Self.datagrams / 2, "the delay line counted \(counted)")

            links.heal()
            #expect(!links.rulesInPlace, "the bridge still queues packets after the heal")
            let healed = try await offThePool { try (0..<5).map { _ in try connectTime(to: echo, port: 40_001) }.sorted() }
            #expect(healed[2] < .milliseconds(50), "handshakes after the heal \(healed)")
        }
    }
}

/// A datagram's number and how long it took from `send` to `receive`.
private struct Arrival {
    let index: UInt64
    let delay: Duration
}

private func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Sends `count` datagrams to `address`:`port`, one a millisecond, each its number and send time.
private func send(_ count: Int, to address: String, port: UInt16) throws {
    let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard sender >= 0 else { throw SocketFailed(call: "socket") }
    defer { close(sender) }
    var destination = try socketAddress(address, port: port)
    for index in 0..<UInt64(count) {
        var datagram = [index, monotonicNanoseconds()]
        let sent = withUnsafePointer(to: &destination) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                datagram.withUnsafeMutableBytes { sendto(sender, $0.baseAddress, $0.count, 0, address, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard sent == 16 else { throw SocketFailed(call: "sendto") }
        usleep(1000)
    }
}

/// Whether the sender has sent everything.
private final class SendingFlag: Sendable {
    let finished = Mutex(false)
}

/// What arrives on `receiver` until the sender is done, the delay line has let go of or dropped
/// every datagram (`released`), and nothing has arrived for a second: neither a sender nor a delay
/// line starved of CPU on the loaded machine may end the count early.
private func receive(on receiver: Int32, whileSending sending: SendingFlag, released: () -> Bool) -> [Arrival] {
    var timeout = timeval(tv_sec: 1, tv_usec: 0)
    setsockopt(receiver, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var arrivals: [Arrival] = []
    var datagram: [UInt64] = [0, 0]
    while true {
        let allSent = sending.finished.withLock { $0 } && released()
        guard datagram.withUnsafeMutableBytes({ recv(receiver, $0.baseAddress, $0.count, 0) }) == 16 else {
            if allSent { return arrivals }
            continue
        }
        let now = monotonicNanoseconds()
        arrivals.append(Arrival(index: datagram[0], delay: .nanoseconds(Int64(now &- datagram[1]))))
    }
}

/// How long a TCP handshake with `address`:`port` takes (the connection is closed at once).
private func connectTime(to address: String, port: UInt16) throws -> Duration {
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard client >= 0 else { throw SocketFailed(call: "socket") }
    defer { close(client) }
    var destination = try socketAddress(address, port: port)
    let started = ContinuousClock.now
    let connected = withUnsafePointer(to: &destination) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw SocketFailed(call: "connect") }
    return ContinuousClock.now - started
}

private func bind(_ socket: Int32, address: String, port: UInt16) throws {
    var local = try socketAddress(address, port: port)
    var reuse: Int32 = 1
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &local) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw SocketFailed(call: "bind") }
}

private func socketAddress(_ address: String, port: UInt16) throws -> sockaddr_in {
    var result = sockaddr_in()
    result.sin_family = sa_family_t(AF_INET)
    result.sin_port = port.bigEndian
    guard inet_pton(AF_INET, address, &result.sin_addr) == 1 else { throw SocketFailed(call: "inet_pton \(address)") }
    return result
}

struct SocketFailed: Error, CustomStringConvertible {
    let call: String
    let code = errno
    var description: String { "\(call): \(String(cString: strerror(code)))" }
}

extension VirtualHosts {
    /// A new socket of `type` in `host`'s network namespace, where it stays whichever thread
    /// uses it: made on a thread of its own that enters the namespace and ends.
    func socket(on host: String, type: __socket_type) throws -> Int32 {
        let made = Mutex<Result<Int32, SocketFailed>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let path = "/var/run/netns/\(namespace(host))"
        startThread(named: "netns-socket") {
            defer { done.signal() }
            let namespaceFile = open(path, O_RDONLY | O_CLOEXEC)
            guard namespaceFile >= 0 else { return made.withLock { $0 = .failure(SocketFailed(call: "open \(path)")) } }
            defer { close(namespaceFile) }
            guard studybus_enter_network_namespace(namespaceFile) == 0 else { return made.withLock { $0 = .failure(SocketFailed(call: "setns \(path)")) } }
            let created = Glibc.socket(AF_INET, Int32(type.rawValue), 0)
            made.withLock { $0 = created >= 0 ? .success(created) : .failure(SocketFailed(call: "socket")) }
        }
        done.wait()
        return try made.withLock { $0! }.get()
    }
}
