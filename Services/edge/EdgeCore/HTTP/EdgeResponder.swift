import Bus
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Wire

/// Answers every HTTP request of the edge but `GET /v1/events` (``EventStreamHandler``'s):
/// the routes, then one access-log line.
///
/// One responder instead of Hummingbird's router, so that every answer — an unknown path
/// included — has the same error body, and the route table comes from the contracts.
struct EdgeResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let bus: Bus
    let configuration: EdgeConfiguration
    let admission: Admission
    let logger: Logger
    let routes: RouteTable
    let hub: EventHub
    /// `/openapi.json`, made once from the route table.
    let openAPI: Data
    let cors: CORS

    init(bus: Bus, configuration: EdgeConfiguration, admission: Admission, routes: RouteTable, cors: CORS, hub: EventHub, logger: Logger) {
        self.hub = hub
        self.bus = bus
        self.configuration = configuration
        self.admission = admission
        self.logger = logger
        self.routes = routes
        openAPI = OpenAPI.document(routes).jsonData
        self.cors = cors
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        var log = AccessLog(method: request.method.rawValue, path: request.uri.path)
        var response = CORS.isPreflight(request) ? cors.preflight(request) : await route(request, log: &log)
        cors.decorate(&response, for: request)
        log.finish(response, started: started, logger: logger)
        return response
    }

    private func route(_ request: Request, log: inout AccessLog) async -> Response {
        let path = request.uri.path
        switch (request.method, path) {
        case (.get, "/healthz"):
            return jsonResponse(Data(#"{"status":"ok"}"#.utf8))
        case (.get, "/readyz"):
            return await readiness()
        case (.get, "/openapi.json"):
            return jsonResponse(openAPI, for: request)
        case (.post, _) where path.hasPrefix("/v1/"):
            return await call(request, log: &log)
        default:
            return errorResponse(.notFound("no route for \(request.method.rawValue) \(path.prefix(200))"))
        }
    }

    // MARK: Calls

    /// `POST /v1/SERVICE/METHOD`: the JSON body as one bus call on behalf of the token's user.
    private func call(_ request: Request, log: inout AccessLog) async -> Response {
        let user: String
        switch await admission.user(authorization: request.headers[.authorization]) {
        case .success(let admitted): user = admitted
        case .failure(let refusal): return errorResponse(refusal)
        }
        log.user = user
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, let method = routes.method(service: segments[2], name: segments[3]) else {
            return errorResponse(.notFound("no app-facing method at \(request.uri.path.prefix(200))"))
        }
        log.route = "\(method.service)/\(method.name)"
        do throws(BusError) {
            var options = try callOptions(request.headers, user: user)
            let payload: Data
            let contentType = request.headers[.contentType] ?? "application/json"
            if contentType.lowercased().hasPrefix("application/json") {
                payload = try await BodyReader.collect(request, limit: configuration.maximumBodyBytes)
            } else {
                let (json, upload) = try await Files.read(request, contentType: contentType, limit: configuration.maximumUploadBytes, shape: method.requestShape)
                payload = json
                options.attachment = upload.data
                log.uploadBytes = upload.data.count
            }
            if options.attachment == nil, ChatStream.wanted(method, payload) {
                let (streamed, requestId) = try ChatStream.prepare(payload)
                log.route = "\(method.service)/\(method.name) (stream)"
                let listener = try hub.listen(user: user)
                return ChatStream(bus: bus, listener: listener, user: user, options: options, payload: streamed, requestId: requestId, logger: logger).response()
            }
            let reply = try await bus.callRaw(service: method.service, method: method.name, payload: payload, options: options)
            if let attachment = reply.attachment { return Files.response(reply: reply.payload, attachment: attachment) }
            return jsonResponse(reply.payload, for: request)
        } catch {
            return errorResponse(error)
        }
    }

    // MARK: Call options

    /// The call's options from the request's headers: the user is the token's, whatever the
    /// request says; `Idempotency-Key`, `traceparent` and `Request-Timeout` as the bus takes them.
    /// - Throws: `INVALID_ARGUMENT` for an `Idempotency-Key` or `Request-Timeout` out of range.
    func callOptions(_ headers: HTTPFields, user: String) throws(BusError) -> CallOptions {
        var options = CallOptions(user: user, timeout: configuration.defaultTimeout)
        if let key = headers[.idempotencyKey] {
            guard (1...128).contains(key.count) else {
                throw .invalidArgument("header 'Idempotency-Key' must be 1 to 128 characters", details: .object(["field": .string("Idempotency-Key")]))
            }
            options.idempotencyKey = key
        }
        if let traceparent = headers[.traceparent], Self.isTraceparent(traceparent) {
            options.meta["traceparent"] = traceparent
        }
        if let text = headers[.requestTimeout] {
            guard let seconds = Double(text), seconds.isFinite, seconds > 0 else {
                throw .invalidArgument("header 'Request-Timeout' must be a positive number of seconds", details: .object(["field": .string("Request-Timeout")]))
            }
            options.timeout = min(configuration.maximumTimeout, .milliseconds(Int64(min(seconds, 1e9) * 1000)))
        }
        return options
    }

    /// W3C Trace Context's form: `00-<32 hex>-<16 hex>-<2 hex>`. Anything else is dropped, as
    /// the recommendation says a malformed `traceparent` is.
    static func isTraceparent(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count == 55 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 2 || index == 35 || index == 52 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) else { return false }
            }
        }
        return true
    }

    // MARK: Health

    /// `/readyz`: 200 when every service the edge routes to answers `_health` with SERVING
    /// within a second, 503 otherwise; the body lists each.
    private func readiness() async -> Response {
        let services = routes.services
        let states = await withTaskGroup(of: (String, String).self) { group in
            for service in services {
                group.addTask {
                    do throws(BusError) {
                        let health = try await bus.call(Reserved.health(service), Empty(), options: CallOptions(timeout: .seconds(1)))
                        return (service, health.status.rawValue)
                    } catch {
                        return (service, error.code.name)
                    }
                }
            }
            var states: [String: JSONValue] = [:]
            for await (service, state) in group { states[service] = .string(state) }
            return states
        }
        let ready = states.values.allSatisfy { $0.stringValue == HealthStatus.Status.serving.rawValue }
        let body: JSONValue = .object(["status": .string(ready ? "ready" : "not ready"), "services": .object(states)])
        return jsonResponse(body.jsonData, status: ready ? .ok : .serviceUnavailable)
    }
}

extension HTTPField.Name {
    static let idempotencyKey = Self("Idempotency-Key")!
    static let traceparent = Self("traceparent")!
    static let requestTimeout = Self("Request-Timeout")!
    static let lastEventID = Self("Last-Event-ID")!
}
