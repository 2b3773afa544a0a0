import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

extension SystemTests {
    @Test("a real Prometheus scrapes every process; promtool accepts every endpoint and the alert rules")
    func prometheusScrapesEveryProcess() async throws {
        try await DevSystem.run { system in
            // Traffic for the series to show: a material (store, ingest, ai-gateway, then the
            // scheduler's consumer) and a timer.
            let user = "monitored"
            let submitted = try await system.call(
                Ingest.submit, IngestSubmit(fileName: "cells.md", wait: true), user: user,
                attachment: Data("# Cells\n\nA cell is the smallest unit of life. Cells divide.\n".utf8), timeout: .seconds(60))
            _ = try await system.call(
                TimerTicker.createTimer, CreateTimerRequest(label: "watched", minutes: 5), user: user)

            let targets = try await system.dev(["targets"]).split(separator: "\n").map(String.init).filter { $0.hasPrefix("127.0.0.1:") }
            #expect(targets.count == SystemTests.services.count + 2, "one per process (two ingest workers and the broker): \(targets)")
            for target in targets {
                let port = Int(target.split(separator: ":").last!)!
                let ready = try await httpGet(port: port, "/readyz")
                #expect(ready.status == 200, "\(target) /readyz: \(ready.body)")
                let metrics = try await httpGet(port: port, "/metrics")
                #expect(metrics.status == 200)
                let check = try await runTool("/usr/bin/promtool", ["check", "metrics"], input: metrics.body, in: system.data)
                #expect(check.status == 0, "promtool check metrics on \(target): \(check.output)")
            }
            let rules = try await runTool("/usr/bin/promtool", ["check", "rules", DevSystem.repository.appending(path: "monitoring/alerts.yml").path], in: system.data)
            #expect(rules.status == 0, "\(rules.output)")

            let prometheus = try await Prometheus.start(scraping: targets, in: system.data)
            defer { prometheus.process.send(SIGKILL) }
            try await eventually("every target up", timeout: .seconds(60)) {
                try await prometheus.query("sum(up)") == Double(targets.count)
            }
            // Each query a series only one of the processes has, so every kind of process is heard.
            let expectations: [(String, (Double) -> Bool)] = [
                (#"sum(studybus_requests_total{service="ingest",method="ingest.submit",code="OK"})"#, { $0 >= 1 }),
                (#"sum(studybus_broker_workers{service="ingest"})"#, { $0 == 2 }),
                (#"sum(studybus_timers_active{state="running"})"#, { $0 >= 1 }),
                (#"count(studybus_consumer_lag_events{consumer="scheduler",source="store"})"#, { $0 == 1 }),
                ("count(studybus_database_wal_bytes)", { $0 == 6 }),
                (#"min(studybus_sqlite_memory_bytes)"#, { $0 > 0 }),
                ("count(studybus_outbox_backlog_events)", { $0 == 4 }),
                ("count(studybus_build_info)", { $0 == Double(targets.count) }),
                // Every process reports its heap (its runtime alone takes more than 100 kB).
                ("count(studybus_heap_in_use_bytes > 1e5)", { $0 == Double(targets.count) }),
                ("count(studybus_heap_free_bytes)", { $0 == Double(targets.count) }),
            ]
            for (expression, holds) in expectations {
                try await eventually(expression, timeout: .seconds(30)) { try await prometheus.query(expression).map(holds) ?? false }
            }
            #expect(submitted.materialId.isEmpty == false)
            await prometheus.process.terminate()
        }
    }
}

/// Runs `tool` with `input` on its standard input; returns its exit status and output.
private func runTool(_ tool: String, _ arguments: [String], input: String = "", in folder: URL) async throws -> (status: Int32?, output: String) {
    let name = UUID().uuidString.prefix(8)
    let inputFile = folder.appending(path: "\(name).in"), log = folder.appending(path: "\(name).out")
    try input.write(to: inputFile, atomically: true, encoding: .utf8)
    let process = try ChildProcess(
        executable: "/bin/sh", arguments: ["-c", "exec \"$0\" \"$@\" < \"$STUDYBUS_TOOL_INPUT\"", tool] + arguments,
        environment: ["STUDYBUS_TOOL_INPUT": inputFile.path], logFile: log.path)
    let status = await process.waitForExit(timeout: .seconds(30))
    return (status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
}

/// A Prometheus server (Debian's `prometheus`) scraping `targets` every second, with its data
/// in a folder of the system's.
private struct Prometheus {
    let process: ChildProcess
    let port: Int

    static func start(scraping targets: [String], in folder: URL) async throws -> Prometheus {
        let port = try freePort()
        let config = folder.appending(path: "prometheus.yml")
        let list = targets.map { "\"\($0)\"" }.joined(separator: ", ")
        try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: studybus
                static_configs:
                  - targets: [\(list)]
            """.write(to: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            executable: "/usr/bin/prometheus",
            arguments: [
                "--config.file=\(config.path)", "--storage.tsdb.path=\(folder.appending(path: "prometheus-data").path)",
                "--web.listen-address=127.0.0.1:\(port)",
            ],
            logFile: folder.appending(path: "prometheus.log").path)
        return Prometheus(process: process, port: port)
    }

    /// The single value of an instant query, or nil when it has none (yet).
    func query(_ expression: String) async throws -> Double? {
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
        guard let response = try? await httpGet(port: port, "/api/v1/query?query=\(encoded)"), response.status == 200,
              let json = try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any],
              let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
              let value = result.first?["value"] as? [Any], let text = value.last as? String
        else { return nil }
        return Double(text)
    }
}

extension SystemTests {
    @Test("one traceparent follows an upload from ingest.submit into the store's events; with no OTLP endpoint nothing is exported")
    func traceFollowsAnUpload() async throws {
        // swift-otel's default endpoint: an exporter started without one would send here.
        let defaultPort = try? OTLPCollector(port: 4318)
        defer { defaultPort?.stop() }
        // Every tracing setting but the endpoint, so that only its absence keeps tracing off.
        let settings = ["OTEL_TRACES_SAMPLER": "always_on", "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "untraced"]
        try await DevSystem.run(settings: settings) { system in
            let trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            let user = "traced"
            let submitted = try await system.client.call(
                Ingest.submit, IngestSubmit(fileName: "cells.md", wait: true),
                options: CallOptions(user: user, timeout: .seconds(60), meta: [TraceParent.key: trace],
                                     attachment: Data("# Cells\n\nA cell is the smallest unit of life. Cells divide into two.\n".utf8)))
            let events = try await system.client.call(Reserved.eventsReplay("store"), ReplayRequest(after: 0)).events
                .filter { $0.header.user == user }
            let ingested = events.filter { $0.topic == Store.materialIngested.name }
            let cards = events.filter { $0.topic == Store.flashcardCreated.name }
            #expect(ingested.count == 1 && !cards.isEmpty, "events: \(events.map(\.topic))")
            #expect((ingested + cards).allSatisfy { $0.header.meta[TraceParent.key] == trace })
            #expect(ingested.first?.payload.objectValue?["material"]?.objectValue?["id"] == .string(submitted.materialId))
            // Off, the traceparent is passed on unchanged (no span of any service in between),
            // no process bootstrapped swift-otel, and nothing was sent anywhere.
            #expect(events.allSatisfy { $0.header.meta[TraceParent.key] == trace || $0.header.meta[TraceParent.key] == nil })
            for instance in ["broker-1", "store-1", "ai-gateway-1", "scheduler-1", "timer-ticker-1", "notifier-1", "ingest-1", "ingest-2"] {
                let log = system.log(instance)
                #expect(log.contains("tracing=off"), "\(instance) logs tracing=off")
                #expect(!log.contains("Bootstrapping instrumentation system"), "\(instance) started no exporter")
            }
            try await Task.sleep(for: .milliseconds(500))
            if let defaultPort { #expect(defaultPort.connections == 0 && defaultPort.spans.isEmpty) }
        }
    }
}
