import CoreMetrics
import Synchronization
import Wire

/// The names of the metrics every service host records, so that the exposition side
/// (ServiceKit's catalogue) can give each its help text.
public enum HostMetricNames {
    /// Requests answered, by service, method and status code name.
    public static let requests = "studybus_requests_total"
    /// Time from reading a request to its reply being handed to the I/O thread.
    public static let duration = "studybus_request_duration_seconds"
    /// Requests being handled by task handlers right now.
    public static let inFlight = "studybus_requests_in_flight"
    /// The `method` label of a request for a method the host does not serve: the name comes from
    /// the wire, and a label per name would let any caller grow the metrics without bound.
    public static let unknownMethod = "_unknown"
}

/// A host's per-method request metrics: a counter per method and status code, and a latency
/// histogram per method, each made when first needed, so that the exposition shows the methods
/// that were called rather than every method a service has.
///
/// Only registered methods get their own label; everything else is counted under
/// ``HostMetricNames/unknownMethod``, so the series are bounded by the contract.
final class HostMetrics: Sendable {
    /// One method's series: its latency, its OK count (made with it) and its other codes'
    /// counts (made when first needed), found with one lookup per request.
    private final class MethodMeters: Sendable {
        let methodName: String
        let latency: CoreMetrics.Timer
        let ok: Counter
        let others = Mutex<[StatusCode: Counter]>([:])

        init(service: String, method: String, factory: any MetricsFactory) {
            methodName = method
            latency = CoreMetrics.Timer(label: HostMetricNames.duration, dimensions: [("service", service), ("method", method)], factory: factory)
            ok = HostMetrics.counter(service: service, method: method, code: .ok, factory: factory)
        }
    }

    private struct Series {
        var methods: Set<String> = []
        var meters: [String: MethodMeters] = [:]
    }

    private let service: String
    private let factory: any MetricsFactory
    private let series = Mutex(Series())
    let inFlight: Meter

    /// Metrics through `factory`, or nil when it is swift-metrics' no-op factory (metrics off):
    /// then the host does not even read the clock for them.
    static func make(service: String, factory: any MetricsFactory) -> HostMetrics? {
        factory is NOOPMetricsHandler ? nil : HostMetrics(service: service, factory: factory)
    }

    private init(service: String, factory: any MetricsFactory) {
        self.service = service
        self.factory = factory
        inFlight = Meter(label: HostMetricNames.inFlight, dimensions: [("service", service)], factory: factory)
    }

    private static func counter(service: String, method: String, code: StatusCode, factory: any MetricsFactory) -> Counter {
        Counter(label: HostMetricNames.requests, dimensions: [("service", service), ("method", method), ("code", code.name)], factory: factory)
    }

    /// Lets `method` have its own series; called when its handler is registered.
    func register(_ method: String) {
        _ = series.withLock { $0.methods.insert(method) }
    }

    /// Records one answered request.
    func record(_ method: String, _ code: StatusCode, since started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let meters = series.withLock { series in
            if let meters = series.meters[method] { return meters }
            let name = series.methods.contains(method) ? method : HostMetricNames.unknownMethod
            let meters = series.meters[name] ?? MethodMeters(service: service, method: name, factory: factory)
            series.meters[name] = meters
            return meters
        }
        if code == .ok {
            meters.ok.increment()
        } else {
            let counter = meters.others.withLock { others in
                others[code] ?? {
                    let made = Self.counter(service: service, method: meters.methodName, code: code, factory: factory)
                    others[code] = made
                    return made
                }()
            }
            counter.increment()
        }
        meters.latency.recordMicroseconds(elapsed.wholeMicroseconds)
    }
}
