import ServiceKit
import TestSupport
import Testing
import Traces
import Wire

/// Which `OTEL_*` settings turn tracing on. Nothing here bootstraps a tracer: the test process
/// stays untraced, as every test that shares it expects.
@Suite("tracing is off unless an OTLP endpoint is set")
struct TracingSettingsTests {
    private func settings(_ values: [String: String]) throws(BusError) -> TracingSettings {
        try TracingSettings.fromEnvironment(service: "store", Environment(values))
    }

    @Test("no endpoint: off, whatever else is set; nothing is bootstrapped and no exporter starts")
    func offWithoutEndpoint() throws {
        for values in [
            [:],
            ["OTEL_SERVICE_NAME": "store", "OTEL_TRACES_SAMPLER": "always_on", "OTEL_BSP_SCHEDULE_DELAY": "100"],
            ["OTEL_EXPORTER_OTLP_ENDPOINT": ""],
            ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"],
            ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"],
        ] {
            let off = try settings(values)
            #expect(!off.isEnabled && off.endpoint == nil && off.endpointForLogs == "off", "\(values)")
            #expect(try off.bootstrap(logger: testLogger("tracing")) == nil, "no exporter service for \(values)")
        }
        #expect(!Spans.isEnabled)
    }

    @Test("an endpoint turns it on; the traces endpoint wins; the service's name is the default service.name")
    func onWithEndpoint() throws {
        let shared = try settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"])
        #expect(shared.isEnabled && shared.endpoint == "http://collector:4318" && shared.serviceName == "store")
        let specific = try settings([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://tempo:4318/v1/traces",
            "OTEL_SERVICE_NAME": "store-eu", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        ])
        #expect(specific.endpoint == "https://tempo:4318/v1/traces" && specific.serviceName == "store-eu")
        // The traces protocol is what counts for traces; a ratio sampler with its ratio.
        let mixed = try settings([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25",
        ])
        #expect(mixed.isEnabled)
    }

    @Test("settings this build cannot honour are configuration errors naming the variable")
    func refusals() {
        let cases: [([String: String], String)] = [
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"], "OTEL_EXPORTER_OTLP_ENDPOINT"),
            (["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://collector:4317"], "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], "OTEL_EXPORTER_OTLP_PROTOCOL"),
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"], "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "zipkin"], "OTEL_TRACES_EXPORTER"),
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_SAMPLER": "jaeger_remote"], "OTEL_TRACES_SAMPLER"),
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"],
             "OTEL_TRACES_SAMPLER_ARG"),
        ]
        for (values, variable) in cases {
            let error = #expect(throws: BusError.self, "\(values)") { try settings(values) }
            #expect(error?.code == .invalidArgument && error?.message.contains(variable) == true, "\(String(describing: error))")
        }
    }

    @Test("the endpoint is logged without credentials")
    func redaction() throws {
        let on = try settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:s3cret@collector:4318/otlp?token=abc"])
        #expect(on.endpointForLogs == "https://collector:4318/otlp")
        let error = #expect(throws: BusError.self) { try settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://user:s3cret@collector"]) }
        #expect(error?.message.contains("s3cret") == false)
    }
}
