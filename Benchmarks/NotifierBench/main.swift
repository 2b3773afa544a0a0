import Bus
import Contracts
import Foundation
import GRDB
import HTTPClient
import Logging
import ServiceKit
import Storage
import Wire

// Drives a running notifier (started by scripts/bench-notifier) through the bus, as the store
// would: a durable producer whose `ingest.failed` events the notifier turns into webhook
// deliveries to a local receiver. Prints `name value unit` lines.
//
// Phase 1, latency: one event at a time, `dispatch_ms` = receiver's arrival time - the moment
// before the event was written to the producer's outbox (same machine, same clock).
// Phase 2, throughput: events at a steady rate for BENCH_SECONDS to a user with BENCH_CHANNELS
// webhooks; `deliveries_per_s` = deliveries the receiver got in that time / its length.

let environment = ProcessInfo.processInfo.environment
let receiver = environment["RECEIVER_URL"]!
let seconds = Int(environment["BENCH_SECONDS"] ?? "60")!
let target = Int(environment["BENCH_TARGET_PER_S"] ?? "1500")!
let channelsPerUser = Int(environment["BENCH_CHANNELS"] ?? "4")!
let latencySamples = Int(environment["BENCH_LATENCY_SAMPLES"] ?? "400")!
let notifierPID = environment["NOTIFIER_PID"] ?? ""

var logger = Logger(label: "bench")
logger.logLevel = .warning
let bus = try Bus(configuration: .fromEnvironment(service: "store", environment), logger: logger)
let directory = FileManager.default.temporaryDirectory.appending(path: "notifier-bench-\(UUID().uuidString)")
var migrator = DatabaseMigrator()
Outbox.registerMigrations(&migrator)
let database = try ServiceDatabase.open(at: directory.appending(path: "store.sqlite"), migrator: migrator, logger: logger)
let outbox = try Outbox(source: "store", database: database, publisher: bus, logger: logger)
let host = ServiceHost(bus: bus, service: "store", logger: logger)
host.serveReplay(from: outbox)
let hostTask = Task { try await host.run() }
let outboxTask = Task { try await outbox.run() }

let http = try HTTPClient(logger: logger)

func fetch(_ path: String) async throws -> Data {
    try await http.send(HTTPRequest(url: receiver + path, version: .http1)).body
}

func publish(_ titles: [String], user: String) throws {
    try database.pool.write { db in
        for title in titles {
            try Outbox.append(db, Store.ingestFailed, IngestFailed(materialId: title, userId: user, title: title, reason: "Bench.", failedAt: Date()), user: user)
        }
    }
    outbox.notifyCommitted()
}

func addWebhook(user: String, path: String) async throws {
    _ = try await bus.call(Notifier.channelsAdd, AddChannelRequest(
        type: .webhook, url: receiver + path, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), options: CallOptions(user: user))
}

func received() async throws -> Int {
    Int(try JSONValue.parse(try await fetch("/_stats"))["total"]?.intValue ?? 0)
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func rss(_ field: String) -> Double? {
    guard let status = try? String(contentsOfFile: "/proc/\(notifierPID)/status", encoding: .utf8) else { return nil }
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
    return Double(line.split(separator: " ").dropFirst().first { Double($0) != nil } ?? "").map { $0 / 1024 }
}

// Phase 1: latency.
try await addWebhook(user: "lat", path: "/lat/hook")
var published: [String: UInt64] = [:]
try publish(["warm-up"], user: "lat")
try await Task.sleep(for: .milliseconds(500))
for n in 0..<latencySamples {
    let title = "L\(n)"
    published[title] = UInt64(Date().timeIntervalSince1970 * 1e9)
    try publish([title], user: "lat")
    try await Task.sleep(for: .milliseconds(20))
}
try await Task.sleep(for: .seconds(2))
var latencies: [Double] = []
for record in (try JSONValue.parse(try await fetch("/_received?path=/lat/")).arrayValue ?? []) {
    guard let body = record["body"]?.stringValue, let arrived = record["t_ns"]?.intValue,
          let title = (try? JSONValue.parse(body))?["data"]?["title"]?.stringValue else { continue }
    let key = title.components(separatedBy: "“").dropFirst().first?.components(separatedBy: "”").first ?? ""
    if let sent = published[key] { latencies.append(Double(UInt64(arrived) - sent) / 1e6) }
}
latencies.sort()
print("dispatch_samples \(latencies.count) count")
if !latencies.isEmpty {
    print(String(format: "dispatch_ms_p50 %.2f ms", percentile(latencies, 0.5)))
    print(String(format: "dispatch_ms_p99 %.2f ms", percentile(latencies, 0.99)))
}

// Phase 2: sustained throughput.
for index in 0..<channelsPerUser { try await addWebhook(user: "load", path: "/ok/hook\(index)") }
let eventsPerSecond = max(1, target / channelsPerUser)
let tick = Duration.milliseconds(10)
let started = ContinuousClock.now
let receivedAtStart = try await received()
var sent = 0
var nextTick = started
while ContinuousClock.now - started < .seconds(seconds) {
    let elapsed = Double((ContinuousClock.now - started).components.seconds) + Double((ContinuousClock.now - started).components.attoseconds) / 1e18
    let due = Int(elapsed * Double(eventsPerSecond)) - sent
    if due > 0 {
        try publish((0..<due).map { "T\(sent + $0)" }, user: "load")
        sent += due
    }
    nextTick = nextTick + tick
    try await Task.sleep(until: nextTick, clock: .continuous)
}
let delivered = try await received() - receivedAtStart
let expected = sent * channelsPerUser
print(String(format: "deliveries_per_s %.0f per_s", Double(delivered) / Double(seconds)))
print("deliveries_offered_per_s \(expected / seconds) per_s")
// Whatever was still queued at the end, to judge whether the rate was sustained.
try await Task.sleep(for: .seconds(5))
let afterwards = try await received() - receivedAtStart
print("backlog_after_5s \(expected - afterwards) count")
if let current = rss("VmRSS") { print(String(format: "rss_mb %.1f MB", current)) }
if let peak = rss("VmHWM") { print(String(format: "rss_peak_mb %.1f MB", peak)) }

hostTask.cancel()
outboxTask.cancel()
_ = try? await hostTask.value
_ = try? await outboxTask.value
await bus.shutdown()
await http.shutdown()
try? FileManager.default.removeItem(at: directory)
