import Bus
import Contracts
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
import Wire

/// A broker pair on two hosts of their own, timer-ticker (a data owner) on a third, and the test
/// as the client on a fourth address, every process given both brokers' endpoints and bus
/// security on: the deployment of docs/operations.md, "A broker pair".
private struct PairHosts: HostWorld {
    let network: VirtualHosts
    let keys: TestKeys
    let client: Bus
    let logs: String
    let brokers: [String: ChildProcess]

    static let heartbeatMs = 500
    static let brokerHosts = ["broker-a", "broker-b"]

    static func start() async throws -> PairHosts {
        let network = try VirtualHosts(hosts: brokerHosts + ["data"])
        let keys = try TestKeys()
        do {
            _ = try keys.service("timer-ticker")
            let clientSecurity = try keys.operator("client")
            func list(_ port: Int) -> String { brokerHosts.map { "tcp://\(network.address($0)):\(port)" }.joined(separator: ",") }
            let endpoints = ["BUS_RPC": list(5555), "BUS_PUB": list(5556), "BUS_SUB": list(5557)]
            let common = ["BUS_HEARTBEAT_MS": String(heartbeatMs), "LOG_LEVEL": "info", "BUS_BROKER_KEY": keys.publicPath("broker"), "BUS_SECURITY": "on"]
            let logs = keys.directory
            var brokers: [String: ChildProcess] = [:]
            for host in brokerHosts {
                // The two brokers share nothing but the key pair the other processes know them by.
                let address = network.address(host)
                let environment = common.merging([
                    "BUS_KEY": keys.secretPath("broker"), "BUS_ALLOWLIST": keys.allowlistPath, "BUS_RPC_BIND": "tcp://\(address):5555",
                    "BUS_PUB_BIND": "tcp://\(address):5556", "BUS_SUB_BIND": "tcp://\(address):5557",
                ]) { $1 }
                brokers[host] = try network.start(
                    on: host, builtProductsDirectory.appending(path: "broker").path, environment: environment, logFile: "\(logs)/\(host).log")
            }
            try network.start(
                on: "data", builtProductsDirectory.appending(path: "timer-ticker").path,
                environment: common.merging(endpoints) { $1 }.merging([
                    "BUS_KEY": keys.secretPath("timer-ticker"), "DATA_DIR": "\(logs)/timer-ticker", "TIMER_MAX_ACTIVE": "100000",
                ]) { $1 },
                logFile: "\(logs)/timer-ticker.log")
            let client = try hostClient(source: "pair-test", endpoints: endpoints, heartbeatMs: heartbeatMs, security: clientSecurity)
            let hosts = PairHosts(network: network, keys: keys, client: client, logs: logs, brokers: brokers)
            // Registered with each broker, seen through a client of that broker alone.
            for host in brokerHosts {
                let direct = try hostClient(
                    source: "pair-test", endpoints: endpoints.merging(["BUS_RPC": "tcp://\(network.address(host)):5555"]) { $1 },
                    heartbeatMs: heartbeatMs, security: clientSecurity)
                try await eventually("timer-ticker serving through \(host)", timeout: Wait.startup) {
                    (try? await direct.call(TimerTicker.listTimers, ListTimersRequest(), options: CallOptions(user: "u1", timeout: .seconds(1)))) != nil
                }
                await direct.shutdown()
            }
            return hosts
        } catch {
            network.remove()
            keys.remove()
            throw error
        }
    }

    /// The first broker is lost: with `vanishing`, its host drops every packet first (no FIN,
    /// no RST reaches anyone) and the broker is killed behind that wall; otherwise the broker
    /// alone is killed, and its host's kernel closes its connections.
    func killFirstBroker(vanishing: Bool) async throws {
        if vanishing { try network.cut("broker-a") }
        brokers["broker-a"]!.send(SIGKILL)
        _ = await brokers["broker-a"]!.waitForExit()
    }
}

/// What happened to one call attempt of the load.
private struct Attempt: Sendable {
    let operation: String
    let started: ContinuousClock.Instant
    let took: Duration
    /// nil for OK.
    let code: StatusCode?
}

/// The attempts of every lane, appended as they finish.
private final class AttemptLog: Sendable {
    private let attempts = Mutex<[Attempt]>([])
    func append(_ attempt: Attempt) { attempts.withLock { $0.append(attempt) } }
    var all: [Attempt] { attempts.withLock { $0 } }
}

@Suite("Across hosts: a broker pair", .serialized)
struct BrokerPairFailoverTests {
    /// The first broker's host vanishes without a FIN (true), or its broker process is killed (false).
    @Test("the first broker is lost mid-load: every call completes or fails retryably within its deadline, none is applied twice, calls are served through the survivor within 5 s, events keep flowing",
          arguments: [true, false])
    func firstBrokerLost(hostVanishes: Bool) async throws {
        try await PairHosts.run { hosts in
            let user = "u1"
            let events = EventCollector(try hosts.client.subscribe([TimerTicker.timerCreated.name]))
            try await eventually("events flow through the pair") {
                _ = try? await hosts.client.call(
                    TimerTicker.createTimer, CreateTimerRequest(label: "probe", minutes: 5), options: CallOptions(user: user, idempotencyKey: "probe"))
                return !events.all.isEmpty
            }

            let attempts = AttemptLog()
            let timeout = Duration.seconds(2)
            let loadStarted = ContinuousClock.now
            let loadLength = Duration.seconds(10)
            let killAfter = Duration.seconds(2)
            // Lanes of calls, each operation retried with its idempotency key until it succeeds
            // (or the load ends), as a caller told "retry" does.
            let client = hosts.client
            let lanes = Task {
                await withTaskGroup(of: Void.self) { group in
                    for lane in 0..<6 {
                        group.addTask {
                            var number = 0
                            while ContinuousClock.now - loadStarted < loadLength {
                                number += 1
                                let operation = "op-\(lane)-\(number)"
                                var done = false
                                while !done, ContinuousClock.now - loadStarted < loadLength + .seconds(5) {
                                    let started = ContinuousClock.now
                                    var code: StatusCode?
                                    do {
                                        _ = try await client.call(
                                            TimerTicker.createTimer, CreateTimerRequest(label: operation, minutes: 5),
                                            options: CallOptions(user: "lane\(lane)", timeout: timeout, idempotencyKey: operation))
                                        done = true
                                    } catch {
                                        code = (error as? BusError)?.code ?? .unknown
                                    }
                                    attempts.append(Attempt(operation: operation, started: started, took: ContinuousClock.now - started, code: code))
                                    // Paced: a steady load, not a flood that starves the suites running beside it.
                                    try? await Task.sleep(for: .milliseconds(done ? 25 : 100))
                                }
                            }
                        }
                    }
                }
            }
            try await Task.sleep(until: loadStarted + killAfter)
            let killedAt = ContinuousClock.now
            try await hosts.killFirstBroker(vanishing: hostVanishes)
            await lanes.value
            let all = attempts.all

            let late = all.filter { $0.took > timeout + .milliseconds(500) }
            #expect(late.isEmpty, "calls that outlived their 2 s deadline: \(late.prefix(5).map { "\($0.operation) \($0.took)" })")
            let wrong = all.compactMap(\.code).filter { $0 != .unavailable && $0 != .deadlineExceeded }
            #expect(wrong.isEmpty, "every failure is retryable, got \(Set(wrong.map(\.name)))")
            let succeeded = Set(all.filter { $0.code == nil }.map(\.operation))
            let operations = Set(all.map(\.operation))
            #expect(succeeded.count > 20, "the load made progress: \(succeeded.count) operations")
            #expect(all.contains { $0.code != nil }, "calls were in flight on the lost broker and failed over")
            let unfinished = operations.subtracting(succeeded)
            #expect(unfinished.count <= 6, "every operation but the lanes' last succeeded on a retry: \(unfinished.sorted())")

            // Served again within 5 s: the longest time without a call completing, around the loss.
            let completions = all.filter { $0.code == nil }.map { $0.started + $0.took }.sorted()
            let outage = zip(completions, completions.dropFirst()).map { $1 - $0 }.max() ?? loadLength
            #expect(outage < .seconds(5), "no call completed for \(outage)")
            #expect(completions.contains { $0 > killedAt + .seconds(5) }, "calls completed after the kill")
            let failures = Dictionary(grouping: all.compactMap(\.code), by: \.name).mapValues(\.count)
            print("broker pair, \(hostVanishes ? "host vanished" : "broker killed"): \(all.count) calls, \(succeeded.count) operations done, failures \(failures), longest time without a completed call \(outage)")

            // Nothing applied twice: one timer per operation that succeeded, none for another.
            // Each lane is a user of its own, whose timers one list holds (at most 1000).
            var perLabel: [String: Int] = [:]
            for lane in 0..<6 {
                let timers = try await client.call(
                    TimerTicker.listTimers, ListTimersRequest(), options: CallOptions(user: "lane\(lane)", timeout: .seconds(5))).timers
                #expect(timers.count < 1000, "lane \(lane)'s list is whole")
                for timer in timers { perLabel[timer.label, default: 0] += 1 }
            }
            let twice = perLabel.filter { $0.value > 1 }
            #expect(twice.isEmpty, "applied twice: \(twice.keys.sorted().prefix(10))")
            let missing = succeeded.subtracting(perLabel.keys)
            #expect(missing.isEmpty, "acknowledged but not applied: \(missing.sorted().prefix(10))")
            let unasked = Set(perLabel.keys).subtracting(operations)
            #expect(unasked.isEmpty, "applied but never asked: \(unasked.sorted().prefix(10))")

            // Events keep flowing through the survivor: each operation acknowledged well after
            // the kill is seen by the subscriber, once.
            let afterKill = Set(all.filter { $0.code == nil && $0.started >= killedAt + .seconds(3) }.map(\.operation))
            #expect(!afterKill.isEmpty, "operations succeeded after the kill")
            var seen: [String: Int] = [:]
            do {
                try await eventually("timer.created of the operations after the kill", timeout: .seconds(10)) {
                    seen = [:]
                    for event in events.all {
                        if let timer = try? event.decode(TimerTicker.timerCreated) { seen[timer.label, default: 0] += 1 }
                    }
                    return afterKill.isSubset(of: Set(seen.keys))
                }
            } catch {
                Issue.record("events missing after the kill: \(afterKill.subtracting(seen.keys).sorted().prefix(10)) of \(afterKill.count)")
            }
            #expect(seen.filter { $0.value > 1 }.isEmpty, "an event delivered twice: \(seen.filter { $0.value > 1 }.keys.sorted().prefix(5))")
            events.cancel()
            let log = (try? String(contentsOfFile: "\(hosts.logs)/timer-ticker.log", encoding: .utf8)) ?? ""
            #expect(!log.contains("stopped on error"), "timer-ticker kept running")
        }
    }
}
