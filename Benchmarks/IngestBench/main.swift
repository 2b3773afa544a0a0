// Drives a running StudyBus (broker, store, ai-gateway with its local provider, ingest workers;
// scripts/bench-ingest starts them) through the bus and prints `name value unit` lines:
//
//   IngestBench latency          ingest_10kb_ms, ingest_100kb_ms, ingest_1mb_ms (Markdown),
//                                ingest_pdf_50pages_ms: submit with wait, median, end to end
//   IngestBench burst LABEL N    jobs_per_s_LABEL: 200 documents of 100 KB submitted at once,
//                                once N ingest workers are registered
//   IngestBench lecture FILE LABEL
//                                lecture_LABEL_seconds until the recording FILE is ready,
//                                lecture_LABEL_audio_seconds its length, and
//                                lecture_LABEL_realtime_factor the one over the other
//
// Every document is new (a seed of its own), so neither the store's content addressing nor
// ai-gateway's cache short-cuts the work. The bus endpoints come from BUS_RPC/BUS_PUB/BUS_SUB.
import Bus
import Contracts
import Foundation
import Logging
import Wire

let arguments = Array(CommandLine.arguments.dropFirst())
let logger = Logger(label: "ingest-bench") { _ in SwiftLogNoOpLogHandler() }
let bus = try Bus(configuration: .fromEnvironment(service: "ingest-bench"), logger: logger)
let clock = ContinuousClock()
/// Seeds differ between runs against the same store (`INGEST_BENCH_SEED`), so documents do too.
let seedBase = UInt64(ProcessInfo.processInfo.environment["INGEST_BENCH_SEED"] ?? "") ?? 1

func milliseconds(_ duration: Duration) -> Double { Double(duration.wholeMicroseconds) / 1000 }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// Submits a file and waits for the material to be ready.
func submit(_ data: Data, fileName: String) async throws -> Duration {
    let started = clock.now
    let result = try await bus.call(
        Ingest.submit, IngestSubmit(fileName: fileName), options: CallOptions(user: "bench", timeout: .seconds(600), attachment: data))
    guard result.material.status == .ready, !result.duplicate else {
        throw BusError.internal("\(fileName) ended \(result.material.status.rawValue)\(result.duplicate ? " (duplicate)" : "")")
    }
    return clock.now - started
}

/// The median time of `runs` submits (after one to warm up) of the documents `make(seed)` gives.
@MainActor
func latency(_ name: String, runs: Int, fileName: String, _ make: (UInt64) -> Data) async throws {
    var times: [Double] = []
    for run in 0...runs {
        let data = make(seedBase &* 1_000_003 &+ UInt64(run) &+ UInt64(name.utf8.count) << 20)
        let time = try await submit(data, fileName: fileName)
        if run > 0 { times.append(milliseconds(time)) }
    }
    print("\(name) \(String(format: "%.1f", median(times))) ms")
}

for service in ["store", "ai-gateway", "ingest"] {
    while (try? await bus.call(Reserved.health(service), Empty(), options: CallOptions(timeout: .seconds(1)))) == nil {
        try await Task.sleep(for: .milliseconds(50))
    }
}

switch arguments.first {
case "latency":
    try await latency("ingest_10kb_ms", runs: 9, fileName: "notes.md") { Data(BenchDocuments.markdown(bytes: 10 * 1024, seed: $0).utf8) }
    try await latency("ingest_100kb_ms", runs: 7, fileName: "notes.md") { Data(BenchDocuments.markdown(bytes: 100 * 1024, seed: $0).utf8) }
    try await latency("ingest_1mb_ms", runs: 5, fileName: "notes.md") { Data(BenchDocuments.markdown(bytes: 1024 * 1024, seed: $0).utf8) }
    try await latency("ingest_pdf_50pages_ms", runs: 5, fileName: "lecture.pdf") { seed in
        BenchPDF.make(pages: (0..<50).map { BenchDocuments.page(lines: 45, seed: seed &* 64 &+ UInt64($0)) })
    }
case "burst":
    let label = arguments.count > 1 ? arguments[1] : "burst"
    let workers = arguments.count > 2 ? Int(arguments[2]) ?? 1 : 1
    let count = Int(ProcessInfo.processInfo.environment["INGEST_BENCH_BURST"] ?? "") ?? 200
    while true {
        let reply = try? await bus.callRaw(service: BrokerProtocol.mmiServices, method: "list", payload: Data())
        let services = reply.flatMap { try? WireCoding.decode([ServiceStatus].self, from: $0.payload) }
        if (services?.first { $0.name == "ingest" }?.workers ?? 0) >= workers { break }
        try await Task.sleep(for: .milliseconds(50))
    }
    let documents = (0..<count).map { index in
        Data(BenchDocuments.markdown(bytes: 100 * 1024, seed: seedBase &* 1_000_003 &+ 500_000 &+ UInt64(index)).utf8)
    }
    let started = clock.now
    try await withThrowingTaskGroup(of: Duration.self) { group in
        for (index, document) in documents.enumerated() {
            group.addTask { try await submit(document, fileName: "burst-\(index).md") }
        }
        for try await _ in group {}
    }
    let seconds = milliseconds(clock.now - started) / 1000
    print("jobs_per_s_\(label) \(String(format: "%.1f", Double(count) / seconds)) jobs/s")
case "lecture" where arguments.count == 3:
    let file = URL(filePath: arguments[1]), label = arguments[2]
    let data = try Data(contentsOf: file)
    let started = clock.now
    let submitted = try await bus.call(
        Ingest.submit, IngestSubmit(fileName: file.lastPathComponent, wait: false), options: CallOptions(user: "bench", attachment: data))
    var material = submitted.material
    while material.status == .processing {
        try await Task.sleep(for: .milliseconds(100))
        material = try await bus.call(Store.getMaterial, RecordID(id: material.id), options: CallOptions(user: "bench"))
    }
    let seconds = milliseconds(clock.now - started) / 1000
    guard material.status == .ready else { throw BusError.internal("\(file.lastPathComponent) ended \(material.status.rawValue): \(material.failureReason ?? "")") }
    let documents = try await bus.call(Store.listSourceDocuments, SourceDocumentList(materialId: material.id), options: CallOptions(user: "bench"))
    let audio = documents.items.first?.durationSeconds ?? 0
    print("lecture_\(label)_seconds \(String(format: "%.1f", seconds)) s")
    print("lecture_\(label)_audio_seconds \(String(format: "%.1f", audio)) s")
    print("lecture_\(label)_realtime_factor \(String(format: "%.4f", audio > 0 ? seconds / audio : 0)) x")
default:
    FileHandle.standardError.write(Data("usage: IngestBench latency | burst LABEL [WORKERS] | lecture FILE LABEL\n".utf8))
    exit(2)
}
await bus.shutdown()
