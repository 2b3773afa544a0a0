import Bus
import CMalloc
import CoreMetrics
import Foundation
import Logging
import Prometheus
import Synchronization
import Wire

/// A process's monitoring: its metrics registry, what runs on each scrape, and what decides
/// whether it is ready, served over HTTP by ``MonitoringServer`` at `METRICS_ADDRESS`.
///
/// With no address, monitoring is off: ``factory`` is swift-metrics' no-op factory, so the
/// service host and everything else record nothing and pay (almost) nothing.
///
/// ```swift
/// context.monitoring.onScrape { activeTimers.set(await engine.activeCount()) }
/// ```
public final class Monitoring: Sendable {
    /// Where the monitoring port listens: `host:port`, `[v6]:port`, or `:port` for every interface.
    public struct Address: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Reads `host:port`; nil when it is not one.
        public init?(_ text: String) {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
                return nil
            }
            var host = String(text[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            if host.isEmpty { host = "0.0.0.0" }
            guard !host.contains(where: { $0 == " " || $0 == "/" }) else { return nil }
            self.host = host
            self.port = port
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Where ``MonitoringServer`` listens; nil when monitoring is off.
    public let address: Address?
    /// The metrics of this process, in Prometheus's text format by ``exposition()``.
    public let registry = PrometheusCollectorRegistry()
    /// What to make metrics with: the registry's, with each metric's help text, or the no-op
    /// factory when monitoring is off.
    public let factory: any MetricsFactory
    /// The name of the process's service, the `service` label of its own metrics.
    public let service: String
    private let collectors = Mutex<[@Sendable () async -> Void]>([])
    private let readinessChecks = Mutex<[any ReadinessReporting]>([])
    /// Paths added with ``serve(_:_:)``, each with its handler.
    let routes = Mutex<[(path: String, handler: MonitoringHandler)]>([])
    private let listening = Mutex<(port: Int?, waiters: [CheckedContinuation<Int, Never>])>((nil, []))

    /// Monitoring of `service` served at `address`; off when it is nil.
    public init(service: String, address: Address?) {
        self.service = service
        self.address = address
        factory = address == nil ? NOOPMetricsHandler.instance : CatalogedPrometheusFactory(registry: registry)
        if address != nil {
            registry.makeGauge(descriptor: MetricsCatalog.descriptor(MetricsCatalog.buildInfo),
                               labels: [("service", service), ("version", BuildInfo.version), ("commit", BuildInfo.commit)]).set(to: 1)
            registry.makeGauge(descriptor: MetricsCatalog.descriptor(MetricsCatalog.startTime))
                .set(to: Date().timeIntervalSince1970)
            watchHeap()
        }
    }

    /// The heap in use and what the allocator holds free, read on each scrape: resident memory
    /// that grows while the heap in use stays flat is the allocator's, not a leak.
    private func watchHeap() {
        let inUse = registry.makeGauge(descriptor: MetricsCatalog.descriptor(MetricsCatalog.heapInUse))
        let free = registry.makeGauge(descriptor: MetricsCatalog.descriptor(MetricsCatalog.heapFree))
        onScrape {
            let heap = mallinfo2()
            inUse.set(to: Double(heap.uordblks + heap.hblkhd))
            free.set(to: Double(heap.fordblks))
        }
    }

    /// Monitoring as `METRICS_ADDRESS` says (unset or empty: off).
    /// - Throws: `INVALID_ARGUMENT` when it is not `host:port`.
    public static func fromEnvironment(service: String, _ environment: Environment) throws(BusError) -> Monitoring {
        guard let text = environment.optionalString("METRICS_ADDRESS") else { return Monitoring(service: service, address: nil) }
        guard let address = Address(text) else {
            throw .invalidArgument("environment variable METRICS_ADDRESS must be host:port (e.g. 127.0.0.1:9464, :9464 for every interface), got '\(text)'")
        }
        return Monitoring(service: service, address: address)
    }

    public var isEnabled: Bool { address != nil }

    /// Runs `collect` before each scrape: for gauges read from state that is not updated as it
    /// changes (a table's row count, a file's size). Keep it short: scrapes wait for it.
    public func onScrape(_ collect: @escaping @Sendable () async -> Void) {
        guard isEnabled else { return }
        collectors.withLock { $0.append(collect) }
    }

    /// Adds the parts whose state `/readyz` reports (a service host, a database, the broker).
    public func watchReadiness(of parts: [any ReadinessReporting]) {
        readinessChecks.withLock { $0.append(contentsOf: parts) }
    }

    /// Every metric in Prometheus's text exposition format, after running the scrape collectors.
    public func exposition() async -> [UInt8] {
        for collect in collectors.withLock({ $0 }) { await collect() }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16_384)
        registry.emit(into: &buffer)
        return buffer
    }

    /// Why the process is not ready, one line per part that is not; empty when it is ready.
    public func readinessProblems() async -> [String] {
        var problems: [String] = []
        for part in readinessChecks.withLock({ $0 }) {
            if let problem = await part.readinessProblem() { problems.append(problem) }
        }
        return problems
    }

    /// The port the server listens on, once it does (for address port 0: the one chosen).
    public func listeningPort() async -> Int {
        await withCheckedContinuation { continuation in
            let port = listening.withLock { state -> Int? in
                if state.port == nil { state.waiters.append(continuation) }
                return state.port
            }
            if let port { continuation.resume(returning: port) }
        }
    }

    func listening(on port: Int) {
        let waiters = listening.withLock { state in
            state.port = port
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }
}

/// A part of a process whose state decides whether it is ready (`/readyz`).
public protocol ReadinessReporting: Sendable {
    /// Why it is not ready (`"draining"`, `"the broker has not answered"`), or nil when it is.
    func readinessProblem() async -> String?
}

extension ServiceHost: ReadinessReporting {
    public func readinessProblem() async -> String? {
        if !isServing { return "\(service): draining" }
        if !isRegistered { return "\(service): not registered with the broker at \(busEndpoint) (no heartbeat yet)" }
        return nil
    }
}
