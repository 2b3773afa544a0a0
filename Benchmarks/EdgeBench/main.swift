// Measures the HTTP edge against the bus it fronts, in one run: a broker, the store and the edge
// in this process over real loopback sockets; the same small call (store subjects.list of a user
// with one subject) made directly on the bus by Swift clients and through the edge by wrk
// (keep-alive connections), each with the same number of calls in flight. Prints `name value
// unit` lines:
//
//   bus_rps, bus_p50_us, bus_p99_us        direct bus calls
//   edge_rps, edge_p50_us, edge_p99_us     the same calls through the edge (wrk)
//   edge_rps_ratio                         edge_rps / bus_rps               (target >= 0.5)
//   edge_added_p50_us                      edge_p50_us - bus_p50_us         (target <= 200)
//
// EDGE_BENCH_SECONDS (default 10) is each phase's length, EDGE_BENCH_CONNECTIONS (default 16)
// the calls in flight.
import BrokerCore
import Bus
import Contracts
import EdgeCore
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import StoreCore
import Synchronization
import Wire

let environment = ProcessInfo.processInfo.environment
let seconds = max(1, Int(environment["EDGE_BENCH_SECONDS"] ?? "") ?? 10)
let connections = max(1, Int(environment["EDGE_BENCH_CONNECTIONS"] ?? "") ?? 16)
let logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
let directory = FileManager.default.temporaryDirectory.appending(path: "studybus-edge-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

var brokerConfiguration = BrokerConfiguration()
brokerConfiguration.rpcBind = "tcp://127.0.0.1:*"
brokerConfiguration.pubBind = "tcp://127.0.0.1:*"
brokerConfiguration.subBind = "tcp://127.0.0.1:*"
let broker = try Broker(configuration: brokerConfiguration, logger: logger)
let endpoints = try await broker.start()
func busConfiguration(_ source: String) -> BusConfiguration {
    var configuration = BusConfiguration(source: source)
    configuration.security = .off
    configuration.rpcEndpoint = endpoints.rpc
    configuration.pubEndpoint = endpoints.pub
    configuration.subEndpoint = endpoints.sub
    return configuration
}
let store = try StoreService(context: ServiceContext(
    configuration: StoreConfiguration(databaseURL: directory.appending(path: "store.sqlite")), logger: logger,
    busConfiguration: busConfiguration("store")))
let secret = Array(UUID().uuidString.utf8) + Array(UUID().uuidString.utf8)
var edgeConfiguration = EdgeConfiguration(tokens: TokenSettings(hmacSecret: secret))
edgeConfiguration.host = "127.0.0.1"
edgeConfiguration.port = 0
edgeConfiguration.ratePerSecond = 1_000_000
edgeConfiguration.rateBurst = 1_000_000
let edge = try EdgeService(context: ServiceContext(configuration: edgeConfiguration, logger: logger, busConfiguration: busConfiguration("edge")))
let running = (store.services + edge.services).map { service in Task { try await service.run() } }
let client = try Bus(configuration: busConfiguration("bench"), logger: logger)
let options = CallOptions(user: "bench", timeout: .seconds(30))
while (try? await client.call(Reserved.health("store"), Empty())) == nil || edge.boundPort == nil {
    try await Task.sleep(for: .milliseconds(20))
}
_ = try await client.call(Store.createSubject, SubjectCreate(name: "Biology"), options: options)

func percentile(_ sorted: [Int], _ p: Double) -> Int {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

// Direct: `connections` tasks, each one call at a time, for `seconds`.
let clock = ContinuousClock()
let end = clock.now + .seconds(seconds)
let latencies = await withTaskGroup(of: [Int].self) { group in
    for _ in 0..<connections {
        group.addTask {
            var mine: [Int] = []
            while clock.now < end {
                let started = clock.now
                _ = try? await client.call(Store.listSubjects, SubjectList(), options: options)
                let elapsed = clock.now - started
                mine.append(Int(elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000))
            }
            return mine
        }
    }
    var all: [Int] = []
    for await mine in group { all += mine }
    return all.sorted()
}
let busRPS = Double(latencies.count) / Double(seconds)
print("bus_rps \(Int(busRPS)) rps")
print("bus_p50_us \(percentile(latencies, 0.5)) us")
print("bus_p99_us \(percentile(latencies, 0.99)) us")

// Through the edge: wrk with `connections` keep-alive connections; its Lua `done` prints the
// figures in microseconds.
let token = try await TokenIssuer.issue(user: "bench", lifetime: 3600, settings: TokenSettings(hmacSecret: secret))
let script = directory.appending(path: "edge.lua")
try """
    wrk.method = "POST"
    wrk.body = "{}"
    wrk.headers["Content-Type"] = "application/json"
    wrk.headers["Authorization"] = "Bearer \(token)"
    done = function(summary, latency, requests)
      io.write(string.format("WRK %d %d %d %d %d\\n", summary.requests, summary.duration,
        latency:percentile(50), latency:percentile(99), summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.timeout))
    end
    """.write(to: script, atomically: true, encoding: .utf8)
let wrk = Process()
wrk.executableURL = URL(fileURLWithPath: environment["WRK"] ?? "/usr/bin/wrk")
wrk.arguments = ["-t", "2", "-c", String(connections), "-d", "\(seconds)s", "-s", script.path, "http://127.0.0.1:\(edge.boundPort!)/v1/store/subjects.list"]
let pipe = Pipe()
wrk.standardOutput = pipe
try wrk.run()
let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
wrk.waitUntilExit()
guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("WRK ") }) else {
    FileHandle.standardError.write(Data("wrk printed no figures:\n\(output)\n".utf8))
    exit(1)
}
let figures = line.split(separator: " ").dropFirst().compactMap { Int($0) }
let edgeRPS = Double(figures[0]) / (Double(figures[1]) / 1_000_000)
print("edge_rps \(Int(edgeRPS)) rps")
print("edge_p50_us \(figures[2]) us")
print("edge_p99_us \(figures[3]) us")
print("edge_errors \(figures[4]) requests")
print("edge_rps_ratio \(String(format: "%.2f", busRPS > 0 ? edgeRPS / busRPS : 0)) x")
print("edge_added_p50_us \(figures[2] - percentile(latencies, 0.5)) us")

for task in running.reversed() {
    task.cancel()
    _ = try? await task.value
}
await client.shutdown()
await broker.stop()
try? FileManager.default.removeItem(at: directory)
