import Bus
import CoreMetrics
import Prometheus

/// Every metric a StudyBus process exposes, with its help text: one list, so that the
/// exposition has a `# HELP` line for each (promtool requires it) and docs/operations.md
/// ("Monitoring") has one place to follow. Names follow Prometheus's conventions: a
/// `studybus_` prefix, `_total` for counters, base units (`_seconds`, `_bytes`).
public enum MetricsCatalog {
    static let buildInfo = "studybus_build_info"
    static let startTime = "process_start_time_seconds"
    static let heapInUse = "studybus_heap_in_use_bytes"
    static let heapFree = "studybus_heap_free_bytes"

    /// Buckets of the latency histograms: 100 µs to 30 s, about 2.5× apart.
    static let latencyBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
    ]

    static let help: [String: String] = [
        buildInfo: "The running binary: version and git commit (always 1).",
        startTime: "When the process started, in seconds since the Unix epoch.",
        heapInUse: "Bytes of the C heap the process has allocated and not freed (glibc mallinfo2: uordblks + hblkhd).",
        heapFree: "Bytes the C allocator holds free in its arenas, resident or not (glibc mallinfo2: fordblks).",
        HostMetricNames.requests: "Requests a service host answered, by method and status code name.",
        HostMetricNames.duration: "Time from reading a request to handing its reply to the bus, by method.",
        HostMetricNames.inFlight: "Requests a service host's handlers are working on.",
        "studybus_outbox_backlog_events": "Events committed to the outbox but not yet published.",
        "studybus_outbox_oldest_unpublished_age_seconds": "How long the oldest unpublished outbox event has waited (0 when none waits).",
        "studybus_consumer_lag_events": "Events a durable consumer has not applied yet, per source, as far as it knows the source's stream.",
        "studybus_database_file_bytes": "Size of the service's SQLite file.",
        "studybus_database_wal_bytes": "Size of the SQLite write-ahead log.",
        "studybus_sqlite_memory_bytes": "Memory SQLite holds in this process: page caches (bounded by cache_size), statements, schema.",
        "studybus_broker_workers": "Workers registered per service.",
        "studybus_broker_credit": "Total credit of a service's workers (requests they take at once).",
        "studybus_broker_in_flight": "Requests held by a service's workers.",
        "studybus_broker_queued": "Requests waiting in the broker for a free worker of a service.",
        "studybus_broker_requests_total": "Requests the broker handed to a service's workers or queued for them.",
        "studybus_broker_refused_total": "Requests the broker answered itself with an error, by service and status code name (expired ones apart).",
        "studybus_broker_expired_total": "Requests whose deadline passed before a worker took them.",
        "studybus_broker_events_total": "Events the broker forwarded from publishers to subscribers.",
        "studybus_broker_services": "Services the broker keeps records of.",
        "studybus_timers_active": "Timers running or paused.",
        "studybus_ingest_jobs": "Ingest jobs in this worker, by state (queued, running).",
        "studybus_ai_tokens_total": "Tokens language-model providers reported, by provider and direction (input, output).",
        "studybus_ai_cost_usd_total": "Estimated cost of provider calls in US dollars, by provider.",
        "studybus_notifier_deliveries_total": "Delivery attempts finished, by channel kind and outcome.",
    ]

    /// The help text of `name`; a name missing from the list still gets one.
    static func help(_ name: String) -> String {
        help[name] ?? "StudyBus metric \(name)."
    }

    /// `name` with its help text, as the registry takes it (the unit is part of the name).
    static func descriptor(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help(name))
    }
}

/// swift-metrics' factory onto a Prometheus registry, like swift-prometheus's own but with each
/// metric's help text from ``MetricsCatalog`` and its latency buckets.
struct CatalogedPrometheusFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: MetricsCatalog.descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: MetricsCatalog.descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: MetricsCatalog.descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: MetricsCatalog.descriptor(label), labels: dimensions, buckets: [0.001, 0.01, 0.1, 1, 10, 100, 1000, 10_000, 100_000])
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: MetricsCatalog.descriptor(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: MetricsCatalog.descriptor(label), labels: dimensions, buckets: MetricsCatalog.latencyBuckets)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
