// Measures the HTTP edge against the bus it fronts, in one run: a broker, the store and the edge
// in this process over real loopback sockets; the same small call (store subjects.list of a user
// with one subject) made directly on the bus by Swift clients and through the edge by wrk
// (keep-alive connections), each with the same number of calls in flight. Prints `name value
// unit` lines:
//
//   bus_rps, bus_p50_us, bus_p99_us        direct bus calls: rps with EDGE_BENCH_CONNECTIONS in
//                                          flight, latency one call at a time
//   edge_rps, edge_p50_us, edge_p99_us     the same calls through the edge (wrk), measured alike
//   edge_rps_ratio                         edge_rps / bus_rps               (target >= 0.5)
//   edge_added_p50_us                      edge_p50_us - bus_p50_us         (target <= 200)
//   edge_sse_streams                       idle /v1/events streams held open
//   edge_sse_rss_mb                        this process's RSS with them open (target <= 200)
//   edge_sse_added_mb, edge_sse_kb_per_stream   what they added to it
//
// EDGE_BENCH_SECONDS (default 10) is each phase's length, EDGE_BENCH_CONNECTIONS (default 16)
// the calls in flight, EDGE_BENCH_SSE (default 10,000) the idle streams, opened by
// `SSE_IDLE_CLIENT` (bench/sse-idle.py), another process, so that only the edge's side counts;
// EDGE_BENCH_HOLD_PATH=/healthz holds plain keep-alive connections instead, for comparison.
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
let idleStreams = max(0, Int(environment["EDGE_BENCH_SSE"] ?? "") ?? 10_000)
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
edgeConfiguration.maximumEventStreams = idleStreams + 100
let edge = try EdgeService(context: ServiceContext(configuration: edgeConfiguration, logger: logger, busConfiguration: busConfiguration("edge")))
let running = (store.services + edge.services).map { service in
    Task {
        do {
            try await service.run()
        } catch is CancellationError {
        } catch {
            FileHandle.standardError.write(Data("\(type(of: service)) stopped: \(error)\n".utf8))
            exit(1)
        }
    }
}
let client = try Bus(configuration: busConfiguration("bench"), logger: logger)
let options = CallOptions(user: "bench", timeout: .seconds(30))
while (try? await client.call(Reserved.health("store"), Empty())) == nil || edge.boundPort == nil {
    try await Task.sleep(for: .milliseconds(20))
}
_ = try await client.call(Store.createSubject, SubjectCreate(name: "Biology"), options: options)

func percentile(_ sorted: [Int], _ p: Double) -> Int {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// Direct: `concurrency` tasks, each one call at a time, for `seconds`; calls per second and
/// the sorted latencies in microseconds.
func busPhase(concurrency: Int) async -> (rps: Double, latencies: [Int]) {
    let clock = ContinuousClock()
    let end = clock.now + .seconds(seconds)
    let latencies = await withTaskGroup(of: [Int].self) { group in
        for _ in 0..<concurrency {
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
    return (Double(latencies.count) / Double(seconds), latencies)
}

// Through the edge: wrk with keep-alive connections; its Lua `done` prints the figures in
// microseconds.
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

/// wrk with `connections` connections for `seconds`: requests per second, p50, p99 (µs), errors.
func edgePhase(connections: Int) throws -> (rps: Double, p50: Int, p99: Int, errors: Int) {
    let wrk = Process()
    wrk.executableURL = URL(fileURLWithPath: environment["WRK"] ?? "/usr/bin/wrk")
    wrk.arguments = ["-t", String(min(2, connections)), "-c", String(connections), "-d", "\(seconds)s", "-s", script.path,
                     "http://127.0.0.1:\(edge.boundPort!)/v1/store/subjects.list"]
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
    return (Double(figures[0]) / (Double(figures[1]) / 1_000_000), figures[2], figures[3], figures[4])
}

// Throughput with `connections` calls in flight both ways; latency one call at a time, where
// what the edge adds is not hidden in queueing.
let busLoaded = await busPhase(concurrency: connections)
let edgeLoaded = try edgePhase(connections: connections)
let busSingle = await busPhase(concurrency: 1)
let edgeSingle = try edgePhase(connections: 1)
print("bus_rps \(Int(busLoaded.rps)) rps")
print("bus_p50_us \(percentile(busSingle.latencies, 0.5)) us")
print("bus_p99_us \(percentile(busSingle.latencies, 0.99)) us")
print("edge_rps \(Int(edgeLoaded.rps)) rps")
print("edge_p50_us \(edgeSingle.p50) us")
print("edge_p99_us \(edgeSingle.p99) us")
print("edge_errors \(edgeLoaded.errors + edgeSingle.errors) requests")
print("edge_rps_ratio \(String(format: "%.2f", busLoaded.rps > 0 ? edgeLoaded.rps / busLoaded.rps : 0)) x")
print("edge_added_p50_us \(edgeSingle.p50 - percentile(busSingle.latencies, 0.5)) us")

// Idle streams: held open by another process; this one's RSS before and with them.
if idleStreams > 0, let client = environment["SSE_IDLE_CLIENT"] {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    // As many users as it takes at the per-user limit.
    let perUser = edgeConfiguration.maximumEventStreamsPerUser
    var tokens: [String] = []
    for n in 0..<((idleStreams + perUser - 1) / perUser) {
        tokens.append(try await TokenIssuer.issue(user: "sse-\(n)", lifetime: 3600, settings: TokenSettings(hmacSecret: secret)))
    }
    let tokensFile = directory.appending(path: "tokens")
    try tokens.joined(separator: "\n").write(to: tokensFile, atomically: true, encoding: .utf8)
    // EDGE_BENCH_HOLD_PATH=/healthz holds plain keep-alive connections instead (one request
    // each, then idle): what a connection costs the edge without a stream.
    let path = environment["EDGE_BENCH_HOLD_PATH"] ?? "/v1/events"
    let held = try await holdConnections(client: client, tokensFile: tokensFile, path: path)
    let perConnectionKB = String(format: "%.1f", held.addedMB * 1024 / Double(max(held.opened, 1)))
    if path == "/v1/events" {
        print("edge_sse_streams \(held.opened) streams")
        print("edge_sse_failed \(idleStreams - held.opened) streams")
        print("edge_sse_rss_mb \(String(format: "%.1f", held.rssMB)) MB")
        print("edge_sse_added_mb \(String(format: "%.1f", held.addedMB)) MB")
        print("edge_sse_kb_per_stream \(perConnectionKB) KB")
    } else {
        print("edge_idle_connections \(held.opened) connections")
        print("edge_idle_connection_kb \(perConnectionKB) KB")
    }
}

/// Has `client` (bench/sse-idle.py) open `idleStreams` connections to `path` and hold them; this
/// process's RSS with them open and what they added, and how many opened.
func holdConnections(client: String, tokensFile: URL, path: String) async throws -> (opened: Int, rssMB: Double, addedMB: Double) {
    let before = residentMegabytes()
    let holder = Process()
    holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    holder.arguments = ["python3", client, "127.0.0.1", String(edge.boundPort!), tokensFile.path, String(idleStreams), path]
    let output = Pipe(), input = Pipe()
    holder.standardOutput = output
    holder.standardInput = input
    try holder.run()
    var line = ""
    while !line.hasSuffix("\n"), let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty {
        line += String(decoding: byte, as: UTF8.self)
    }
    let counts = line.split(separator: " ").dropFirst().compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    guard counts.count == 2 else {
        FileHandle.standardError.write(Data("the connection holder printed no counts: \(line)\n".utf8))
        exit(1)
    }
    // Let the streams' first replays settle before reading the figure.
    try await Task.sleep(for: .seconds(2))
    let with = residentMegabytes()
    try input.fileHandleForWriting.close()
    holder.waitUntilExit()
    return (counts[0], with, with - before)
}

/// This process's resident set, in MB (`VmRSS` of /proc/self/status).
func residentMegabytes() -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let kilobytes = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }?.split(separator: " ").dropFirst().first.flatMap { Double($0) }
    return (kilobytes ?? 0) / 1024
}

for task in running.reversed() {
    task.cancel()
    _ = try? await task.value
}
await client.shutdown()
await broker.stop()
try? FileManager.default.removeItem(at: directory)
