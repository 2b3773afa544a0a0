import Foundation
import Logging
import OTel
import ServiceLifecycle
import Traces
import Wire

/// A process's tracing, read from the standard OpenTelemetry variables: off unless an OTLP
/// endpoint is set (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`).
///
/// Off, nothing is bootstrapped: the tracer is swift-distributed-tracing's no-op one, no
/// exporter, HTTP client or batch processor exists, and ``Spans/isEnabled`` stays false, so the
/// bus makes no span at all. On, ``bootstrap(logger:)`` hands the rest of the `OTEL_*`
/// variables (sampler, batch processor, headers, timeout, compression, resource attributes) to
/// swift-otel, which exports the spans over OTLP/HTTP (docs/operations.md, "Tracing").
public struct TracingSettings: Sendable, Equatable {
    /// Where spans go; nil when tracing is off.
    public let endpoint: String?
    /// The spans' `service.name`: `OTEL_SERVICE_NAME`, else the service's own name.
    public let serviceName: String
    /// The environment swift-otel reads, less the variables StudyBus decides itself.
    let otelEnvironment: [String: String]

    /// Whether the process traces.
    public var isEnabled: Bool { endpoint != nil }

    /// Tracing off.
    public static func off(service: String) -> TracingSettings {
        TracingSettings(endpoint: nil, serviceName: service, otelEnvironment: [:])
    }

    /// The samplers swift-otel has (`OTEL_TRACES_SAMPLER`); it traps on the others.
    static let samplers: Set<String> = [
        "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio",
    ]

    /// The settings the environment gives the process of `service`.
    /// - Throws: `INVALID_ARGUMENT` naming the variable for an endpoint that is not an http(s)
    ///   URL, a traces exporter other than `otlp` or `none`, a protocol other than
    ///   `http/protobuf` or `http/json` (this build has no gRPC exporter), or a sampler (or its
    ///   ratio) swift-otel does not have.
    public static func fromEnvironment(service: String, _ environment: Environment) throws(BusError) -> TracingSettings {
        if environment.optionalString("OTEL_SDK_DISABLED")?.lowercased() == "true" { return .off(service: service) }
        switch environment.optionalString("OTEL_TRACES_EXPORTER")?.lowercased() {
        case nil, "otlp": break
        case "none": return .off(service: service)
        case let other?:
            throw .invalidArgument("environment variable OTEL_TRACES_EXPORTER must be otlp or none, got '\(other)'")
        }
        let endpoint: (variable: String, value: String)
        if let traces = environment.optionalString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces)
        } else if let shared = environment.optionalString("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", shared)
        } else {
            return .off(service: service)
        }
        guard let url = URL(string: endpoint.value), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw .invalidArgument("environment variable \(endpoint.variable) must be an http:// or https:// URL (OTLP/HTTP, e.g. http://otel-collector:4318), got '\(Self.redacted(endpoint.value))'")
        }
        let shared = environment.string("OTEL_EXPORTER_OTLP_PROTOCOL", default: "http/protobuf")
        let traces = environment.optionalString("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        let (variable, value) = traces.map { ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", $0) } ?? ("OTEL_EXPORTER_OTLP_PROTOCOL", shared)
        if value != "http/protobuf" && value != "http/json" {
            throw .invalidArgument("environment variable \(variable) must be http/protobuf or http/json (this build exports OTLP over HTTP only), got '\(value)'")
        }
        let sampler = environment.string("OTEL_TRACES_SAMPLER", default: "parentbased_always_on")
        guard samplers.contains(sampler) else {
            throw .invalidArgument("environment variable OTEL_TRACES_SAMPLER must be one of \(samplers.sorted().joined(separator: ", ")), got '\(sampler)'")
        }
        if let ratio = environment.optionalString("OTEL_TRACES_SAMPLER_ARG"), sampler.hasSuffix("traceidratio") {
            guard let value = Double(ratio), (0...1).contains(value) else {
                throw .invalidArgument("environment variable OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 for \(sampler), got '\(ratio)'")
            }
        }
        // The bus carries W3C traceparent and nothing else, so that is the propagator; and
        // swift-otel must never turn on its logs or metrics (OTEL_SDK_DISABLED=false would):
        // logging and metrics are bootstrapped already, and a second bootstrap would trap.
        // Empty values count as unset, as everywhere in StudyBus (compose passes them so).
        let otelEnvironment = environment.values.filter { key, value in
            key.hasPrefix("OTEL_") && !value.isEmpty && key != "OTEL_SDK_DISABLED" && key != "OTEL_PROPAGATORS"
        }
        return TracingSettings(
            endpoint: endpoint.value, serviceName: environment.optionalString("OTEL_SERVICE_NAME") ?? service, otelEnvironment: otelEnvironment)
    }

    /// The endpoint for logs: scheme, host, port and path, without user information or query.
    public var endpointForLogs: String { endpoint.map(Self.redacted) ?? "off" }

    private static func redacted(_ endpoint: String) -> String {
        guard var parts = URLComponents(string: endpoint) else { return "(not a URL)" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? "(not a URL)"
    }

    /// Bootstraps the process's tracer (`InstrumentationSystem`) with swift-otel's OTLP/HTTP
    /// exporter and turns ``Spans`` on; returns the exporter's service, to run before (and so
    /// stop after) everything that makes spans. Off, it does nothing and returns nil.
    /// - Throws: `FAILED_PRECONDITION` when swift-otel cannot start with the settings.
    public func bootstrap(logger: Logger) throws(BusError) -> (any Service)? {
        guard endpoint != nil else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.propagators = [.traceContext]
        var diagnostics = logger
        diagnostics[metadataKey: "component"] = "otel"
        configuration.diagnosticLogger = .custom(diagnostics)
        let service: any Service
        do {
            service = try OTel.bootstrap(configuration: configuration, environment: otelEnvironment)
        } catch {
            throw .failedPrecondition("cannot start tracing with the OTEL_* settings: \(error)")
        }
        Spans.enable()
        return service
    }
}
