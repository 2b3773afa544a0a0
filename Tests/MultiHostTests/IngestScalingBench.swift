import Foundation
import Glibc
import TestSupport
import Testing

/// `scripts/bench-ingest --hosts`: what a user who scales ingest over hosts sees. The broker,
/// store and ai-gateway each on a host of their own with CPU enough not to be the bound, ingest
/// workers on 1, 2 and 4 hosts of equal quota; IngestBench (the same burst of 200 documents of
/// 100 KB as `scripts/bench-ingest`) runs against each. Prints `name value unit` lines: jobs/s,
/// the ratios to one host, and the cores the broker, store, ai-gateway and the workers used in
/// each burst.
/// Runs only when the script names the release build (`STUDYBUS_INGEST_HOSTS_BIN`); not in CI.
@Suite("Ingest scaling over hosts (scripts/bench-ingest --hosts)", .serialized)
struct IngestScalingBench {
    static let binaries = ProcessInfo.processInfo.environment["STUDYBUS_INGEST_HOSTS_BIN"]

    /// A worker host's share of a core. Per job a worker uses about a seventh of what store and
    /// ai-gateway use together (docs/benchmarks.md), so small worker hosts are what lets four of
    /// them be the bound while store and ai-gateway still fit in the two cores.
    static let workerCores = Double(ProcessInfo.processInfo.environment["BENCH_WORKER_CORES"] ?? "") ?? 0.03
    static let cores: [String: Double] = ["broker": 0.3, "store": 0.6, "ai-gateway": 0.7]
    static let workerHosts = ["worker-1", "worker-2", "worker-3", "worker-4"]

    @Test("jobs/s on 1, 2 and 4 ingest hosts", .enabled(if: binaries != nil))
    func scaling() async throws {
        let binaries = try #require(Self.binaries)
        let network = try VirtualHosts(
            hosts: ["broker", "store", "ai-gateway"] + Self.workerHosts,
            cpuCores: Self.cores.merging(Self.workerHosts.map { ($0, Self.workerCores) }) { $1 })
        let logs = FileManager.default.temporaryDirectory.appending(path: "ingest-hosts-\(getpid())").path
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        try await running(network, stop: { $0.remove() }) { network in
            let broker = network.address("broker")
            let endpoints = ["BUS_RPC": "tcp://\(broker):5555", "BUS_PUB": "tcp://\(broker):5556", "BUS_SUB": "tcp://\(broker):5557"]
            let common = endpoints.merging(["BUS_SECURITY": "off", "LOG_LEVEL": "warning"]) { $1 }
            func start(_ service: String, on host: String) throws {
                try network.start(on: host, "\(binaries)/\(service)", environment: common.merging(["DATA_DIR": "\(logs)/\(host)"]) { $1 },
                                  logFile: "\(logs)/\(host).log")
            }
            try network.start(
                on: "broker", "\(binaries)/broker",
                environment: common.merging(["BUS_RPC_BIND": endpoints["BUS_RPC"]!, "BUS_PUB_BIND": endpoints["BUS_PUB"]!, "BUS_SUB_BIND": endpoints["BUS_SUB"]!]) { $1 },
                logFile: "\(logs)/broker.log")
            try start("store", on: "store")
            try start("ai-gateway", on: "ai-gateway")

            for name in ["broker", "store", "ai-gateway"] { print("\(name.replacingOccurrences(of: "-", with: "_"))_quota_cores \(Self.cores[name]!) cores") }
            print("worker_host_quota_cores \(Self.workerCores) cores")
            var started = 0
            var jobsPerSecond: [Int: Double] = [:]
            for (run, hostCount) in [1, 2, 4].enumerated() {
                while started < hostCount {
                    started += 1
                    try start("ingest", on: "worker-\(started)")
                }
                let hosts = Array(Self.workerHosts.prefix(hostCount))
                let measured = ["broker", "store", "ai-gateway"] + hosts
                let before = try measured.map { try network.cpu($0)!.usage() }
                let label = "\(hostCount)_host\(hostCount == 1 ? "" : "s")"
                let (rate, seconds) = try await Self.burst(label: label, workers: hostCount, seed: 10 + run, binaries: binaries, environment: common, logs: logs)
                let used = try zip(measured, before).map { try network.cpu($0.0)!.usage() - $0.1 }
                jobsPerSecond[hostCount] = rate
                print("jobs_per_s_\(label) \(String(format: "%.1f", rate)) jobs/s")
                func cores(_ duration: Duration) -> String { String(format: "%.2f", duration / .seconds(seconds)) }
                print("broker_cpu_cores_\(label) \(cores(used[0])) cores")
                print("store_cpu_cores_\(label) \(cores(used[1])) cores")
                print("ai_gateway_cpu_cores_\(label) \(cores(used[2])) cores")
                print("ingest_cpu_cores_per_host_\(label) \(cores(used[3...].reduce(.zero, +) / hostCount)) cores")
            }
            let one = try #require(jobsPerSecond[1])
            print("jobs_per_s_2_hosts_over_1 \(String(format: "%.2f", jobsPerSecond[2]! / one)) x")
            print("jobs_per_s_4_hosts_over_1 \(String(format: "%.2f", jobsPerSecond[4]! / one)) x")
        }
        try? FileManager.default.removeItem(atPath: logs)
    }

    /// Runs IngestBench's burst (from the test's own address on the network); its jobs/s and
    /// the burst's length in seconds.
    static func burst(label: String, workers: Int, seed: Int, binaries: String, environment: [String: String], logs: String) async throws -> (Double, Double) {
        let bench = try ChildProcess(
            executable: "\(binaries)/IngestBench", arguments: ["burst", label, String(workers)],
            environment: environment.merging(["INGEST_BENCH_SEED": String(seed)]) { $1 }, captureOutput: true, logFile: "\(logs)/bench.log")
        let line = await bench.readLine(timeout: .seconds(900))
        let status = await bench.waitForExit(timeout: .seconds(10))
        let fields = line?.split(separator: " ") ?? []
        guard status == 0, fields.count == 3, fields[0] == "jobs_per_s_\(label)", let rate = Double(fields[1]), rate > 0 else {
            bench.send(SIGKILL)
            let said = (try? String(contentsOfFile: "\(logs)/bench.log", encoding: .utf8)) ?? ""
            Issue.record("IngestBench burst failed (status \(status.map(String.init) ?? "running")): \(line ?? "no output") \(said)")
            throw BenchFailed()
        }
        // IngestBench submits 200 documents (INGEST_BENCH_BURST).
        let count = Double(ProcessInfo.processInfo.environment["INGEST_BENCH_BURST"] ?? "") ?? 200
        return (rate, count / rate)
    }

    struct BenchFailed: Error {}
}
