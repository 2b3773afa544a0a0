import Foundation

/// One finished request, as the broker reports it on `bus.rpc` (only while someone listens).
public struct RPCTrace: Codable, Sendable, Equatable {
    public var service: String
    public var method: String
    /// The request header's `id`.
    public var id: String
    /// The reply's status code.
    public var code: Int
    /// From the broker receiving the request to it sending the reply, in microseconds.
    public var latencyUs: Int64
    /// Bytes of the request's header, payload and attachment.
    public var requestBytes: Int
    /// Bytes of the reply's header, payload and attachment.
    public var replyBytes: Int
    /// The request header's `user`, if any.
    public var user: String?
    /// True when the broker answered itself (no responders, deadline in queue, …).
    public var fromBroker: Bool

    public init(service: String, method: String, id: String, code: Int, latencyUs: Int64, requestBytes: Int, replyBytes: Int, user: String?, fromBroker: Bool) {
        self.service = service
        self.method = method
        self.id = id
        self.code = code
        self.latencyUs = latencyUs
        self.requestBytes = requestBytes
        self.replyBytes = replyBytes
        self.user = user
        self.fromBroker = fromBroker
    }
}

/// One service's line in `mmi.services`.
public struct ServiceStatus: Codable, Sendable, Equatable {
    public var name: String
    /// Registered worker connections.
    public var workers: Int
    /// The sum of the workers' credit: requests the service can hold at once.
    public var credit: Int
    /// Requests the workers hold now.
    public var inFlight: Int
    /// Requests waiting in the broker for free credit.
    public var queued: Int
    /// Requests routed to the service since the broker started.
    public var requests: UInt64
    /// Each registered worker (wire protocol, Addition 19); absent from a broker built before it.
    public var instances: [WorkerStatus]?

    public init(name: String, workers: Int, credit: Int, inFlight: Int, queued: Int, requests: UInt64, instances: [WorkerStatus]? = nil) {
        self.name = name
        self.workers = workers
        self.credit = credit
        self.inFlight = inFlight
        self.queued = queued
        self.requests = requests
        self.instances = instances
    }
}

/// One worker connection of a service in `mmi.services` (Addition 19): what the broker holds
/// for it, and what the worker last answered to the broker's own `_health`.
public struct WorkerStatus: Codable, Sendable, Equatable {
    /// The broker's name for the connection: the first 10 hex digits of its routing identity.
    public var id: String
    public var credit: Int
    /// Requests the worker holds now.
    public var inFlight: Int
    /// When the worker sent READY.
    public var since: Date
    /// The build its `_health` named; nil until it answered, or when it names none.
    public var build: BuildStamp?
    /// Its last `_health` status (`SERVING`, `NOT_SERVING`), or the status code name of the error
    /// it answered (`UNIMPLEMENTED`); nil until it answered.
    public var health: String?

    public init(id: String, credit: Int, inFlight: Int, since: Date, build: BuildStamp? = nil, health: String? = nil) {
        self.id = id
        self.credit = credit
        self.inFlight = inFlight
        self.since = since
        self.build = build
        self.health = health
    }
}

/// The broker's own topics and service names (wire protocol §2.6 and §3).
public enum BrokerProtocol {
    /// Call traces, one per finished request.
    public static let rpc = Topic<RPCTrace>(service: serviceName, "bus.rpc", "One event per finished request: service, method, id, code, latency and sizes; no payloads.")
    /// 8/MMI: does a service have workers? Body `200` or `404`.
    public static let mmiService = "mmi.service"
    /// Every service with its worker count, queue depth and request count.
    public static let mmiServices = "mmi.services"
    /// The broker answers `_health` and `_describe` under this service name.
    public static let serviceName = "broker"
    /// `mmi.services` as a typed method (the method frame is ignored).
    public static let services = Method<Empty, [ServiceStatus]>(service: "mmi.services", "list", "Every service with workers, credit, in-flight, queued and request counts.", audience: .operator)
    /// The broker's own view of bus security (Addition 12).
    public static let security = Method<Empty, BrokerSecurityStatus>(
        service: serviceName, "security", "Whether the broker checks keys, its allowlist, and how often it refused a key, by kind.", audience: .operator)
}

/// The broker's `security` answer: whether it checks keys, which allowlist it admits, and how
/// many times it refused a key acting beyond its role, by kind (`connection`, `ready`,
/// `publish`, `subscription`, `call`, `revoked`).
public struct BrokerSecurityStatus: Codable, Sendable, Equatable {
    public struct AllowlistInfo: Codable, Sendable, Equatable {
        public var path: String
        public var keys: Int
        public var loadedAt: Date
        public init(path: String, keys: Int, loadedAt: Date) {
            self.path = path
            self.keys = keys
            self.loadedAt = loadedAt
        }
    }
    /// `on` or `off`.
    public var security: String
    public var allowlist: AllowlistInfo?
    public var refused: [String: Int]
    public init(security: String, allowlist: AllowlistInfo?, refused: [String: Int]) {
        self.security = security
        self.allowlist = allowlist
        self.refused = refused
    }
}
