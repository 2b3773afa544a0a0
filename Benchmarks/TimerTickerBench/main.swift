import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import Logging
import Storage
import Synchronization
import TimerTickerCore
import Wire

// Prints `name value unit` lines for scripts/bench-timers:
//   in the engine (manual clock): schedule_ns_p99, cancel_ns_p99, tick_us_p99 with 1,000,000 timers
//   coming due at 1,000 per second;
//   with the real binary over a real broker and a database of 1,000,000 stored timers:
//   restart_ready_ms, active_timers, rss_mb, then fire_lateness_ms_p50/p99 (end date to
//   timer.completed received by a subscriber) for 10,000 timers ending at 1,000 per second.

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: TimerTickerBench PATH-TO-timer-ticker [timers] [lateness-timers]")
    exit(2)
}
let binary = URL(fileURLWithPath: arguments[1])
let timerCount = arguments.count > 2 ? Int(arguments[2]) ?? 1_000_000 : 1_000_000
let latenessCount = arguments.count > 3 ? Int(arguments[3]) ?? 10_000 : 10_000
var logger = Logger(label: "bench")
logger.logLevel = .warning

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

func report(_ name: String, _ value: Double, _ unit: String) {
    let line = "\(name) \(String(format: value < 10 ? "%.3f" : "%.1f", value)) \(unit)\n"
    FileHandle.standardOutput.write(Data(line.utf8))
}

func nowNs() -> Int64 { MonotonicClock().nanoseconds() }

// MARK: In-engine figures

do {
    let clock = ManualEngineClock(milliseconds: 0)
    let fired = Atomic<Int>(0)
    let engine = TimerEngine(clock: clock) { due in fired.add(due.count, ordering: .relaxed) }
    // Deadlines spread so that 1,000 timers come due per second: one per tick on average.
    let span = Int64(timerCount)
    engine.load((1...Int64(timerCount)).lazy.map { (key: $0, run: 1, kind: FireKind.completion, due: Int64.random(in: 1...span)) },
                expectedCount: timerCount)
    var schedule: [Double] = []
    var cancel: [Double] = []
    let samples = 100_000
    schedule.reserveCapacity(samples)
    cancel.reserveCapacity(samples)
    for n in 0..<samples {
        let key = Int64(timerCount + 1 + n)
        let due = Int64.random(in: 1...span)
        let start = nowNs()
        engine.schedule(key: key, run: 1, kind: .completion, due: due)
        schedule.append(Double(nowNs() - start))
    }
    for _ in 0..<samples {
        let key = Int64.random(in: 1...Int64(timerCount + samples))
        let start = nowNs()
        engine.cancel(key: key)
        cancel.append(Double(nowNs() - start))
    }
    // Ticks: one engine millisecond at a time over a minute, the heap still near its full size.
    var ticks: [Double] = []
    ticks.reserveCapacity(60_000)
    for ms in 1...60_000 as ClosedRange<Int64> {
        clock.set(milliseconds: ms)
        let start = nowNs()
        engine.fireDue()
        ticks.append(Double(nowNs() - start))
    }
    report("schedule_ns_p99", percentile(schedule, 0.99), "ns")
    report("cancel_ns_p99", percentile(cancel, 0.99), "ns")
    report("tick_us_p99", percentile(ticks, 0.99) / 1000, "us")
    report("tick_fires_mean", Double(fired.load(ordering: .relaxed)) / Double(ticks.count), "timers")
}

// MARK: The real service

func rssMegabytes(pid: Int32) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kb = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return .nan }
    return kb / 1024
}

let directory = FileManager.default.temporaryDirectory.appending(path: "bench-timers-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

// A database with `timerCount` running timers ending within a day, plus `latenessCount` that end
// at 1,000 per second from a few seconds after the service starts.
let databaseURL = directory.appending(path: "timer-ticker.sqlite")
let latenessStartMs: Int64
do {
    let database = try ServiceDatabase.open(at: databaseURL, migrator: TimerSchema.migrator(), logger: logger)
    let nowMs = Date().unixMilliseconds
    try database.pool.write { db in
        let statement = try db.makeStatement(sql: """
            INSERT INTO timer (id, user_id, label, hours, minutes, seconds, status, end_ms, remaining_ms, end_action, created_ms, updated_ms)
            VALUES (?, ?, ?, 24, 0, 0, 'running', ?, ?, 'keep', ?, ?)
            """)
        for n in 0..<timerCount {
            let end = nowMs + 600_000 + Int64.random(in: 0..<86_000_000)
            try statement.execute(arguments: ["bulk-\(n)", "user-\(n % 50_000)", "bench", end, end - nowMs, nowMs, nowMs])
        }
    }
    latenessStartMs = Date().unixMilliseconds + 6_000
    try database.pool.write { db in
        let statement = try db.makeStatement(sql: """
            INSERT INTO timer (id, user_id, label, hours, minutes, seconds, status, end_ms, remaining_ms, end_action, created_ms, updated_ms)
            VALUES (?, 'lateness', 'lateness', 0, 0, 10, 'running', ?, 10000, 'keep', ?, ?)
            """)
        for n in 0..<latenessCount {
            try statement.execute(arguments: ["late-\(n)", latenessStartMs + Int64(n), nowMs, nowMs])
        }
    }
    try database.pool.close()
}

var brokerConfiguration = BrokerConfiguration()
brokerConfiguration.rpcBind = "tcp://127.0.0.1:*"
brokerConfiguration.pubBind = "tcp://127.0.0.1:*"
brokerConfiguration.subBind = "tcp://127.0.0.1:*"
let broker = try Broker(configuration: brokerConfiguration, logger: logger)
let endpoints = try await broker.start()
var busConfiguration = BusConfiguration(source: "bench")
busConfiguration.rpcEndpoint = endpoints.rpc
busConfiguration.pubEndpoint = endpoints.pub
busConfiguration.subEndpoint = endpoints.sub
busConfiguration.subscriptionBufferLimit = max(busConfiguration.subscriptionBufferLimit, latenessCount * 2)
let bus = try Bus(configuration: busConfiguration, logger: logger)

let lateness = Mutex<[Double]>([])
/// The two parts of the lateness: end date -> engine fired (firedAt), firedAt -> received.
let engineLateness = Mutex<[Double]>([])
let pipelineLateness = Mutex<[Double]>([])
/// The pipeline in two: fired -> appended to the outbox (header `ts`), appended -> received.
let writerLateness = Mutex<[Double]>([])
let publishLateness = Mutex<[Double]>([])
let subscription = try bus.subscribe(TimerTicker.timerCompleted)
let listener = Task {
    for await event in subscription where event.payload.timer.userId == "lateness" {
        let received = Date()
        lateness.withLock { $0.append(received.timeIntervalSince(event.payload.endDate) * 1000) }
        engineLateness.withLock { $0.append(event.payload.firedAt.timeIntervalSince(event.payload.endDate) * 1000) }
        pipelineLateness.withLock { $0.append(received.timeIntervalSince(event.payload.firedAt) * 1000) }
        let appended = Date(unixMilliseconds: event.header.ts)
        writerLateness.withLock { $0.append(appended.timeIntervalSince(event.payload.firedAt) * 1000) }
        publishLateness.withLock { $0.append(received.timeIntervalSince(appended) * 1000) }
    }
}

let process = Process()
process.executableURL = binary
var environment = ProcessInfo.processInfo.environment
environment["BUS_RPC"] = endpoints.rpc
environment["BUS_PUB"] = endpoints.pub
environment["BUS_SUB"] = endpoints.sub
environment["DATA_DIR"] = directory.path
environment["LOG_LEVEL"] = "info"
environment["LOG_FORMAT"] = "json"
environment["TIMER_MAX_ACTIVE"] = "1000000"
process.environment = environment
let output = Pipe()
process.standardOutput = output
let scheduled = Mutex<Int?>(nil)
output.fileHandleForReading.readabilityHandler = { handle in
    let text = String(decoding: handle.availableData, as: UTF8.self)
    for line in text.split(separator: "\n") where line.contains("\"timers loaded\"") {
        FileHandle.standardError.write(Data("# \(line)\n".utf8))
        if let object = try? JSONValue.parse(Data(line.utf8)).objectValue, let value = object["scheduled"]?.stringValue {
            scheduled.withLock { $0 = Int(value) }
        }
    }
}
let launched = ContinuousClock.now
let launchedMs = Date().unixMilliseconds
try process.run()
while true {
    if (try? await bus.call(Reserved.health("timer-ticker"), Empty(), options: CallOptions(timeout: .milliseconds(200)))) != nil { break }
    if ContinuousClock.now - launched > .seconds(120) {
        print("timer-ticker did not become ready in 120 s")
        process.terminate()
        exit(1)
    }
    try await Task.sleep(for: .milliseconds(2))
}
let ready = ContinuousClock.now - launched
report("restart_ready_ms", Double(ready.wholeMicroseconds) / 1000, "ms")
try await Task.sleep(for: .milliseconds(300))
report("active_timers", Double(scheduled.withLock { $0 } ?? -1), "timers")
report("rss_mb", rssMegabytes(pid: process.processIdentifier), "MB")

let lastEnd = Date(unixMilliseconds: latenessStartMs + Int64(latenessCount))
while lateness.withLock({ $0.count }) < latenessCount && Date() < lastEnd.addingTimeInterval(30) {
    try await Task.sleep(for: .milliseconds(50))
}
let measured = lateness.withLock { $0 }
if launchedMs + Int64(ready.wholeMicroseconds / 1000) > latenessStartMs {
    print("# note: the service was not ready before the first lateness timer ended")
}
report("fire_lateness_ms_p50", percentile(measured, 0.50), "ms")
report("fire_lateness_ms_p99", percentile(measured, 0.99), "ms")
report("fire_lateness_received", Double(measured.count), "events")
report("fire_engine_ms_p99", percentile(engineLateness.withLock { $0 }, 0.99), "ms")
report("fire_pipeline_ms_p99", percentile(pipelineLateness.withLock { $0 }, 0.99), "ms")
report("fire_writer_ms_p99", percentile(writerLateness.withLock { $0 }, 0.99), "ms")
report("fire_publish_ms_p99", percentile(publishLateness.withLock { $0 }, 0.99), "ms")
report("rss_mb_after_burst", rssMegabytes(pid: process.processIdentifier), "MB")

process.terminate()
process.waitUntilExit()
listener.cancel()
await bus.shutdown()
await broker.stop()
