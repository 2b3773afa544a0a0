import Synchronization
import Tracing
import Wire

/// The spans StudyBus makes for its work — a server span per request a host serves, a client
/// span per bus call, a producer span per event written to an outbox, a consumer span per event
/// a durable consumer applies — through the swift-distributed-tracing API, each parented by the
/// W3C `traceparent` the bus carries (wire protocol, Addition 18).
///
/// Off until ``enable()``, which ServiceKit calls once it has bootstrapped a real tracer (only
/// when an OTLP endpoint is configured). While off, every caller checks ``isEnabled`` — one
/// relaxed atomic load — and takes its untraced path: no span, no context, no allocation.
///
/// While a span runs, ``TraceParent/current`` is the span's own `traceparent`
/// (``traceparent(of:)``), so the calls, events and outbox rows it causes name it as their
/// parent: the traceparent the bus sends is always the active span's.
public enum Spans {
    private static let enabled = Atomic<Bool>(false)

    /// Whether this process makes spans.
    @inline(__always)
    public static var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Turns spans on; call once the process's tracer is bootstrapped
    /// (`InstrumentationSystem.bootstrap`), before any work starts.
    public static func enable() {
        enabled.store(true, ordering: .relaxed)
    }

    /// Starts a span of `kind` as a child of the span that `parent` (a valid `traceparent`)
    /// names, or as the root of a new trace when `parent` is nil. End it with ``end(_:code:message:)``
    /// or `span.end()`.
    public static func start(_ name: String, kind: SpanKind, parent: String?) -> any Span {
        var context = InstrumentationContext.topLevel
        if let parent {
            InstrumentationSystem.instrument.extract([TraceParent.key: parent], into: &context, using: MetaExtractor())
        }
        return InstrumentationSystem.tracer.startSpan(name, context: context, ofKind: kind)
    }

    /// The `traceparent` naming `span` as the parent of the work it causes, or nil when the
    /// tracer gives it none (a span an `always_off` sampler dropped).
    public static func traceparent(of span: any Span) -> String? {
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(span.context, into: &carrier, using: MetaInjector())
        return TraceParent.valid(carrier[TraceParent.key])
    }

    /// Sets the status attributes of a bus reply on `span` — `rpc.response.status_code` (the
    /// code's name, `NOT_FOUND`) and `studybus.status_code` (its number) — and an error status
    /// with `message` unless the code is OK; then ends it.
    public static func end(_ span: any Span, code: StatusCode, message: String?) {
        span.attributes["rpc.response.status_code"] = code.name
        span.attributes["studybus.status_code"] = code.rawValue
        if code != .ok {
            span.setStatus(SpanStatus(code: .error, message: message.map { "\(code.name): \($0)" } ?? code.name))
        }
        span.end()
    }
}

/// Reads `traceparent` (and any other key a propagator asks for) from a `meta` dictionary.
struct MetaExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

/// Writes what a propagator injects into a `meta` dictionary.
struct MetaInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
