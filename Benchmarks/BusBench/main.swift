import Bus
import Foundation
import Logging
import ServiceKit
import Wire

// bus-bench: the Swift side of scripts/bench-bus. Each mode is one process of the measured
// topology (client, worker, publisher, subscriber); results are `name value unit` lines.

struct BenchBody: Codable, Sendable {
    var n: Int
    var text: String
}

// The same echo twice: answered on the worker's bus I/O thread, and as a task (what a handler
// that awaits I/O costs). Clients pick one with `--method echo|echo.task`.
let echo = Method<BenchBody, BenchBody>(service: "bench", "echo", "Returns the request (on the bus's I/O thread).", audience: .app)
let echoTask = Method<BenchBody, BenchBody>(service: "bench", "echo.task", "Returns the request (as a task).", audience: .app)

struct Options {
    var values: [String: String] = [:]
    init(_ arguments: ArraySlice<String>) {
        var iterator = arguments.makeIterator()
        while let key = iterator.next() {
            guard key.hasPrefix("--") else { continue }
            values[String(key.dropFirst(2))] = iterator.next() ?? ""
        }
    }
    func string(_ key: String, _ fallback: String) -> String { values[key] ?? fallback }
    func int(_ key: String, _ fallback: Int) -> Int { values[key].flatMap(Int.init) ?? fallback }
}

func configuration(_ options: Options, source: String) -> BusConfiguration {
    var configuration = BusConfiguration(source: source)
    configuration.rpcEndpoint = options.string("rpc", "tcp://127.0.0.1:5555")
    configuration.pubEndpoint = options.string("pub", "tcp://127.0.0.1:5556")
    configuration.subEndpoint = options.string("sub", "tcp://127.0.0.1:5557")
    configuration.highWaterMark = Int32(options.int("hwm", 1_000_000))
    configuration.subscriptionBufferLimit = options.int("hwm", 1_000_000)
    // The publisher outruns the subscriber: at shutdown it must flush what is queued rather than
    // drop it after the default half second, or the tail of a run is counted as lost.
    configuration.shutdownLinger = .seconds(60)
    // BUS_SECURITY, BUS_KEY, BUS_BROKER_KEY: scripts/bench-bus's encrypted rounds set them.
    do {
        configuration.security = try BusSecurity.fromEnvironment(ProcessInfo.processInfo.environment)
    } catch {
        print("bus-bench: \(error.message)")
        exit(2)
    }
    return configuration
}

func report(_ name: String, _ value: Double, _ unit: String) {
    print("\(name) \(String(format: "%.1f", value)) \(unit)")
}

func body(size: Int, n: Int) -> BenchBody {
    let overhead = #"{"n":\#(n),"text":""}"#.utf8.count
    return BenchBody(n: n, text: String(repeating: "x", count: max(0, size - overhead)))
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: bus-bench worker|lockstep|pipelined|publish|subscribe|codec [--rpc E] [--pub E] [--sub E] [--calls N] [--count N] [--size B] [--inflight N] [--credit N] [--decode 1] [--method echo|echo.task] [--client blocking|async] [--name N] [--topic T]")
    exit(64)
}
let options = Options(arguments.dropFirst(2))
let logger = Logger(label: "bus-bench")

let method = options.string("method", "echo") == "echo.task" ? echoTask : echo

switch arguments[1] {
case "worker":
    // With METRICS_ADDRESS, as a deployed service: metrics recorded and served.
    let monitoring = try Monitoring.fromEnvironment(service: "bench", Environment())
    let bus = try Bus(configuration: configuration(options, source: "bench"), logger: logger)
    let host = ServiceHost(bus: bus, service: "bench", credit: options.int("credit", 128), logger: logger, metrics: monitoring.factory)
    if monitoring.isEnabled {
        Task { try await MonitoringServer(monitoring: monitoring, logger: logger).run() }
    }
    host.handleOnIOThread(echo) { request, _ in request }
    host.handle(echoTask) { request, _ in request }
    try await host.run()

case "lockstep":
    // `--client blocking` calls through a BlockingClient on this thread, `async` through Bus.
    let calls = options.int("calls", 20_000), size = options.int("size", 200)
    let name = options.string("name", "rpc_lockstep")
    let request = body(size: size, n: 1)
    let configuration = configuration(options, source: "bench-client")
    let call: () async throws -> Void
    let close: () async -> Void
    if options.string("client", "async") == "blocking" {
        let client = try BlockingClient(configuration: configuration)
        call = { _ = try client.call(method, request) }
        close = { client.close() }
    } else {
        let bus = try Bus(configuration: configuration, logger: logger)
        call = { _ = try await bus.call(method, request) }
        close = { await bus.shutdown() }
    }
    for _ in 0..<500 { try await call() }  // warm up
    var latencies: [Double] = []
    latencies.reserveCapacity(calls)
    let clock = ContinuousClock()
    for _ in 0..<calls {
        let started = clock.now
        try await call()
        latencies.append(Double((clock.now - started).wholeMicroseconds))
    }
    latencies.sort()
    report("\(name)_p50_us", percentile(latencies, 0.50), "us")
    report("\(name)_p99_us", percentile(latencies, 0.99), "us")
    await close()

case "pipelined":
    // `--client blocking` pipelines from this thread with BlockingClient.callEach, `async` from
    // `inflight` tasks sharing one Bus.
    let calls = options.int("calls", 200_000), inflight = options.int("inflight", 100)
    let request = body(size: options.int("size", 200), n: 1)
    let name = options.string("name", "rpc_pipelined")
    let configuration = configuration(options, source: "bench-client")
    let seconds: Double
    if options.string("client", "async") == "blocking" {
        let client = try BlockingClient(configuration: configuration)
        var failures = 0
        let count = { (_: Int, outcome: Result<BenchBody, BusError>) in if case .failure = outcome { failures += 1 } }
        try client.callEach(method, repeatElement(request, count: 500), inFlight: inflight, count)
        let started = ContinuousClock.now
        try client.callEach(method, repeatElement(request, count: calls), inFlight: inflight, count)
        seconds = Double((ContinuousClock.now - started).wholeMicroseconds) / 1e6
        client.close()
        guard failures == 0 else { fatalError("\(failures) pipelined calls failed") }
    } else {
        let bus = try Bus(configuration: configuration, logger: logger)
        for _ in 0..<500 { _ = try await bus.call(method, request) }
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<inflight {
                group.addTask {
                    for _ in stride(from: worker, to: calls, by: inflight) { _ = try await bus.call(method, request) }
                }
            }
            try await group.waitForAll()
        }
        seconds = Double((ContinuousClock.now - started).wholeMicroseconds) / 1e6
        await bus.shutdown()
    }
    report("\(name)_rps", Double(calls) / seconds, "req/s")

case "publish":
    let bus = try Bus(configuration: configuration(options, source: "bench-pub"), logger: logger)
    let count = options.int("count", 500_000), size = options.int("size", 100)
    let topic = Topic<BenchBody>(service: "bench", options.string("topic", "bench.event"), "A benchmark event.")
    let payload = body(size: size, n: 0)
    let encoded = try WireCoding.encode(payload)
    for _ in 0..<count { try bus.publish(topic: topic.name, payload: encoded) }
    try await Task.sleep(for: .seconds(1))
    await bus.shutdown()

case "subscribe":
    let bus = try Bus(configuration: configuration(options, source: "bench-sub"), logger: logger)
    let count = options.int("count", 500_000), decode = options.int("decode", 0) == 1
    let name = options.string("name", "pubsub")
    let topic = Topic<BenchBody>(service: "bench", options.string("topic", "bench.event"), "A benchmark event.")
    let subscription = try bus.subscribe([options.values["topic"] ?? "bench."])
    print("READY")
    fflush(nil)
    var received = 0, missed: Int64 = 0, decodeFailures = 0
    var first: ContinuousClock.Instant?
    var last = ContinuousClock.now
    let idle = Task {
        try await Task.sleep(for: .seconds(options.int("idle", 30)))
        await bus.shutdown()
    }
    for await event in subscription {
        if first == nil { first = ContinuousClock.now }
        received += 1
        if let gap = event.gap { missed += gap.missed }
        if decode && (try? event.decode(topic)) == nil { decodeFailures += 1 }
        last = ContinuousClock.now
        if received + Int(missed) >= count { break }
    }
    idle.cancel()
    let seconds = Double(((last - (first ?? last))).wholeMicroseconds) / 1e6
    report("\(name)_msgs_per_s", seconds > 0 ? Double(received - 1) / seconds : 0, "msgs/s")
    report("\(name)_dropped", Double(count - received), "msgs")
    if decodeFailures > 0 { report("\(name)_decode_failures", Double(decodeFailures), "msgs") }
    await bus.shutdown()

case "codec":
    // Payload JSON in-process: the bus's codec and Foundation's, on a small body and on a
    // 1 MB document of 1,000 records.
    struct Record: Codable { var ordinal: Int; var text: String; var page: Int?; var at: Date; var tags: [String] }
    struct Document: Codable { var title: String; var records: [Record] }
    let large = Document(title: "bench", records: (0..<1000).map {
        Record(ordinal: $0, text: String(repeating: "word and / \"more\" ", count: 52), page: $0 / 3, at: Date(), tags: ["a", "b"])
    })
    func time(_ name: String, _ repeats: Int, _ work: () throws -> Void) rethrows {
        let started = ContinuousClock.now
        for _ in 0..<repeats { try work() }
        report(name, Double((ContinuousClock.now - started).wholeMicroseconds) / Double(repeats), "us")
    }
    struct State: Codable {
        var id: String, userId: String, setId: String?, dueAt: Date, reviewCount: Int, lapses: Int, lastReviewedAt: Date?
        var ease: Double, interval: Int, stability: Double?, difficulty: Double?, sm2DueAt: Date, fsrsDueAt: Date, createdAt: Date, updatedAt: Date
    }
    let state = State(id: "card-1", userId: "user-1", setId: "set-1", dueAt: Date(), reviewCount: 3, lapses: 1, lastReviewedAt: Date(),
                      ease: 2.5, interval: 6, stability: 3.2, difficulty: 5.1, sm2DueAt: Date(), fsrsDueAt: Date(), createdAt: Date(), updatedAt: Date())
    let stateData = try WireCoding.encode(state)
    let small = body(size: 200, n: 7)
    let smallData = try WireCoding.encode(small), largeData = try WireCoding.encode(large)
    let foundationEncoder = WireCoding.encoder(), foundationDecoder = WireCoding.decoder()
    try time("codec_small_encode_us", 200_000) { _ = try WireCoding.encode(small) }
    try time("codec_small_encode_foundation_us", 200_000) { _ = try foundationEncoder.encode(small) }
    try time("codec_small_decode_us", 200_000) { _ = try WireCoding.decode(BenchBody.self, from: smallData) }
    try time("codec_small_decode_foundation_us", 200_000) { _ = try foundationDecoder.decode(BenchBody.self, from: smallData) }
    try time("codec_dated_encode_us", 100_000) { _ = try WireCoding.encode(state) }
    try time("codec_dated_encode_foundation_us", 100_000) { _ = try foundationEncoder.encode(state) }
    try time("codec_dated_decode_us", 100_000) { _ = try WireCoding.decode(State.self, from: stateData) }
    try time("codec_dated_decode_foundation_us", 100_000) { _ = try foundationDecoder.decode(State.self, from: stateData) }
    try time("codec_1mb_encode_us", 50) { _ = try WireCoding.encode(large) }
    try time("codec_1mb_encode_foundation_us", 50) { _ = try foundationEncoder.encode(large) }
    try time("codec_1mb_decode_us", 50) { _ = try WireCoding.decode(Document.self, from: largeData) }
    try time("codec_1mb_decode_foundation_us", 50) { _ = try foundationDecoder.decode(Document.self, from: largeData) }

default:
    print("unknown mode \(arguments[1])")
    exit(64)
}
