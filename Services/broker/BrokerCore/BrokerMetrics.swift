import CoreMetrics
import ServiceKit
import Wire

/// The broker's metrics: per service its workers, credit, requests in flight and queued
/// (sampled at each heartbeat pass, so at most `BUS_HEARTBEAT_MS` old), requests routed, those
/// the broker answered itself with an error (refused, by status code) and those whose deadline
/// passed before a worker took them (expired); and the events it forwarded.
///
/// Owned by the broker thread, like the routing state it reads: only that thread calls it.
/// Service labels are bounded by `BROKER_MAX_SERVICES`; a request naming a service the broker
/// has no record of is counted under `_unknown`, and a service's series go when its record does.
final class BrokerMetrics {
    private struct ServiceMeters {
        let workers: Meter
        let credit: Meter
        let inFlight: Meter
        let queued: Meter
        let requests: Counter
        var requestsCounted: UInt64 = 0
        let expired: Counter
        var refused: [StatusCode: Counter] = [:]

        init(_ service: String, _ factory: any MetricsFactory) {
            let labels = [("service", service)]
            workers = Meter(label: "studybus_broker_workers", dimensions: labels, factory: factory)
            credit = Meter(label: "studybus_broker_credit", dimensions: labels, factory: factory)
            inFlight = Meter(label: "studybus_broker_in_flight", dimensions: labels, factory: factory)
            queued = Meter(label: "studybus_broker_queued", dimensions: labels, factory: factory)
            requests = Counter(label: "studybus_broker_requests_total", dimensions: labels, factory: factory)
            expired = Counter(label: "studybus_broker_expired_total", dimensions: labels, factory: factory)
        }

        func destroy() {
            for meter in [workers, credit, inFlight, queued] { meter.destroy() }
            requests.destroy()
            expired.destroy()
            for counter in refused.values { counter.destroy() }
        }
    }

    static let unknownService = "_unknown"
    private let factory: any MetricsFactory
    private var services: [String: ServiceMeters] = [:]
    private let events: Counter
    private let serviceCount: Meter

    /// Metrics through `factory`; nil when it is the no-op factory (metrics off).
    static func make(factory: any MetricsFactory) -> BrokerMetrics? {
        factory is NOOPMetricsHandler ? nil : BrokerMetrics(factory: factory)
    }

    private init(factory: any MetricsFactory) {
        self.factory = factory
        events = Counter(label: "studybus_broker_events_total", factory: factory)
        serviceCount = Meter(label: "studybus_broker_services", factory: factory)
    }

    /// The broker answered a request for `service` itself with `code`.
    func answered(service: String, known: Bool, code: StatusCode) {
        let name = known ? service : Self.unknownService
        var meters = services[name] ?? ServiceMeters(name, factory)
        if code == .deadlineExceeded {
            meters.expired.increment()
        } else {
            let counter = meters.refused[code] ?? Counter(
                label: "studybus_broker_refused_total", dimensions: [("service", name), ("code", code.name)], factory: factory)
            meters.refused[code] = counter
            counter.increment()
        }
        services[name] = meters
    }

    /// `count` events went from publishers to subscribers.
    func forwarded(events count: Int) {
        if count > 0 { events.increment(by: count) }
    }

    /// Sets the gauges from the routing table; forgets the series of services it no longer has.
    func sample(_ records: [String: ServiceRecord]) {
        serviceCount.set(records.count)
        for (name, meters) in services where records[name] == nil && name != Self.unknownService {
            meters.destroy()
            services[name] = nil
        }
        for (name, record) in records {
            var meters = services[name] ?? ServiceMeters(name, factory)
            meters.workers.set(record.workers.count)
            meters.credit.set(record.totalCredit)
            meters.inFlight.set(record.inFlight)
            meters.queued.set(record.queue.count)
            if record.requests > meters.requestsCounted {
                meters.requests.increment(by: Int64(clamping: record.requests - meters.requestsCounted))
                meters.requestsCounted = record.requests
            }
            services[name] = meters
        }
    }
}

extension BrokerRunner: ReadinessReporting {
    func readinessProblem() async -> String? {
        broker.isRouting ? nil : "broker: not routing (starting or stopped)"
    }
}
