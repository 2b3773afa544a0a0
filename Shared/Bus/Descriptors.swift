import Foundation

/// A payload type for methods that take or return nothing. Decodes from `{}` or an empty frame.
public struct Empty: Codable, Sendable, Equatable {
    public init() {}
}

/// A service method, declared once in the contracts module and used by both sides:
/// callers pass it to ``Bus/call(_:_:options:)``, the service registers its handler against it.
///
/// ```swift
/// public let getMaterial = Method<MaterialID, Material>("store", "materials.get", "Fetch one material by id.")
/// let material = try await bus.call(Store.getMaterial, MaterialID(id: id), options: .init(user: "u1"))
/// ```
public struct Method<Request: Codable & Sendable, Response: Codable & Sendable>: MethodDescriptor {
    public let service: String
    public let name: String
    public let summary: String

    public init(_ service: String, _ name: String, _ summary: String) {
        self.service = service
        self.name = name
        self.summary = summary
    }

    public var requestShape: JSONValue { JSONShape.of(Request.self) }
    public var responseShape: JSONValue { JSONShape.of(Response.self) }
}

/// What `_describe` and busctl need to know about a method, whatever its types.
public protocol MethodDescriptor: Sendable {
    var service: String { get }
    var name: String { get }
    var summary: String { get }
    /// The JSON shape of the request payload.
    var requestShape: JSONValue { get }
    /// The JSON shape of the response payload.
    var responseShape: JSONValue { get }
}

/// An event topic and its payload type, declared once in the contracts module.
public struct Topic<Payload: Codable & Sendable>: TopicDescriptor {
    public let name: String
    public let summary: String

    public init(_ name: String, _ summary: String) {
        self.name = name
        self.summary = summary
    }

    public var payloadShape: JSONValue { JSONShape.of(Payload.self) }
}

/// What `_describe` and busctl need to know about an event topic.
public protocol TopicDescriptor: Sendable {
    var name: String { get }
    var summary: String { get }
    var payloadShape: JSONValue { get }
}

/// A service's declarations: its name, and its methods and topics as stored properties.
///
/// The lists of methods and topics are read from the properties themselves (by reflection), so
/// there is no second, hand-kept list to forget to update.
public protocol ServiceContract: Sendable {
    /// The service name callers address, e.g. `store`.
    static var serviceName: String { get }
}

extension ServiceContract {
    /// Every method declared as a property of the contract, in declaration order.
    public var methods: [any MethodDescriptor] {
        Mirror(reflecting: self).children.compactMap { $0.value as? any MethodDescriptor }
    }

    /// Every event topic declared as a property of the contract, in declaration order.
    public var topics: [any TopicDescriptor] {
        Mirror(reflecting: self).children.compactMap { $0.value as? any TopicDescriptor }
    }

    /// The declared method called `name`, if any.
    public func method(named name: String) -> (any MethodDescriptor)? {
        methods.first { $0.name == name }
    }
}

/// A string enum that appears in payloads; its cases show up in `_describe` as `a|b|c`.
public protocol WireEnum: CaseIterable, RawRepresentable, Codable, Sendable where RawValue == String {}

extension WireEnum {
    /// The raw values of every case, as they appear on the wire.
    public static var wireValues: [String] { allCases.map(\.rawValue) }

    /// Some case, for placeholders.
    static var anyCase: Self { Array(allCases)[0] }
}

// MARK: - Reserved methods every service answers (wire protocol §2.6 and §3)

/// `_health` response, as grpc.health.v1.
public struct HealthStatus: Codable, Sendable, Equatable {
    public enum Status: String, WireEnum { case serving = "SERVING", notServing = "NOT_SERVING" }
    public var status: Status
    public init(status: Status) { self.status = status }
}

/// `_describe` response: what a service serves and publishes.
public struct ServiceDescription: Codable, Sendable {
    public struct MethodInfo: Codable, Sendable {
        public var name: String
        public var summary: String
        public var request: JSONValue
        public var response: JSONValue
    }
    public struct EventInfo: Codable, Sendable {
        public var topic: String
        public var summary: String
        public var payload: JSONValue
    }
    public var service: String
    public var methods: [MethodInfo]
    public var events: [EventInfo]

    public init(service: String, methods: [any MethodDescriptor], topics: [any TopicDescriptor]) {
        self.service = service
        self.methods = methods.map {
            MethodInfo(name: $0.name, summary: $0.summary, request: $0.requestShape, response: $0.responseShape)
        }
        self.events = topics.map { EventInfo(topic: $0.name, summary: $0.summary, payload: $0.payloadShape) }
    }
}

/// `_events.replay` request: the events of the service's durable stream after `after`.
public struct ReplayRequest: Codable, Sendable, Equatable {
    public var after: Int64
    public var limit: Int?
    public init(after: Int64, limit: Int? = nil) {
        self.after = after
        self.limit = limit
    }
}

/// One stored event as `_events.replay` returns it: exactly what was published.
public struct StoredEvent: Codable, Sendable, Equatable {
    public var topic: String
    public var header: EventHeader
    public var payload: JSONValue
    public init(topic: String, header: EventHeader, payload: JSONValue) {
        self.topic = topic
        self.header = header
        self.payload = payload
    }
}

/// `_events.replay` response: stored events in `seq` order, and the newest `seq` there is.
public struct ReplayResponse: Codable, Sendable, Equatable {
    public var events: [StoredEvent]
    /// The highest `seq` of the stream; a consumer is caught up when it has handled it.
    public var lastSeq: Int64
    /// The stream's `instance`, so a consumer knows which of its cursors `after` refers to.
    public var instance: String?
    public init(events: [StoredEvent], lastSeq: Int64, instance: String?) {
        self.events = events
        self.lastSeq = lastSeq
        self.instance = instance
    }
}

/// `_backup` response: what the attachment frame holds, an online copy of the service's SQLite file.
public struct BackupInfo: Codable, Sendable, Equatable {
    /// The service that made it.
    public var service: String
    /// The database's file name in the service's `DATA_DIR`, e.g. `store.sqlite`.
    public var file: String
    /// The attachment's size in bytes.
    public var bytes: Int64
    /// The attachment's SHA-256, lowercase hex.
    public var sha256: String
    /// The migrations applied to the copy, in the order they ran; the newest is last.
    public var migrations: [String]
    /// When the copy was taken.
    public var takenAt: Date

    public init(service: String, file: String, bytes: Int64, sha256: String, migrations: [String], takenAt: Date) {
        self.service = service
        self.file = file
        self.bytes = bytes
        self.sha256 = sha256
        self.migrations = migrations
        self.takenAt = takenAt
    }
}

extension EventHeader: Codable {
    private enum CodingKeys: String, CodingKey { case id, source, instance, seq, ts, user, meta }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(String.self, forKey: .id),
            source: try container.decode(String.self, forKey: .source),
            instance: try container.decode(String.self, forKey: .instance),
            seq: try container.decode(Int64.self, forKey: .seq),
            ts: try container.decode(Int64.self, forKey: .ts),
            user: try container.decodeIfPresent(String.self, forKey: .user),
            meta: try container.decodeIfPresent([String: String].self, forKey: .meta) ?? [:]
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(source, forKey: .source)
        try container.encode(instance, forKey: .instance)
        try container.encode(seq, forKey: .seq)
        try container.encode(ts, forKey: .ts)
        try container.encodeIfPresent(user, forKey: .user)
        if !meta.isEmpty { try container.encode(meta, forKey: .meta) }
    }
}

/// The reserved methods of wire protocol §2.6 and §3, for any service, and our `_backup`.
public enum Reserved {
    /// `_health`: `{"status":"SERVING"}` or `NOT_SERVING`.
    public static func health(_ service: String) -> Method<Empty, HealthStatus> {
        Method(service, "_health", "Whether the service is serving (grpc.health.v1 style).")
    }

    /// `_describe`: the service's methods and events with their JSON shapes.
    public static func describe(_ service: String) -> Method<Empty, ServiceDescription> {
        Method(service, "_describe", "The service's methods and events, with request, response and payload shapes.")
    }

    /// `_events.replay`: the stored events of the service's durable stream after a `seq`.
    public static func eventsReplay(_ service: String) -> Method<ReplayRequest, ReplayResponse> {
        Method(service, "_events.replay", "Stored events after a seq, in order, to fill gaps or catch up.")
    }

    /// `_backup` (a StudyBus extension, not in the wire protocol): an online copy of the service's
    /// SQLite file in the attachment frame. Only services that own a database answer it.
    public static func backup(_ service: String) -> Method<Empty, BackupInfo> {
        Method(service, "_backup", "An online copy of the service's SQLite file, in the attachment frame, with its size, SHA-256 and migrations.")
    }
}
