import Foundation

// The reserved methods every service answers (wire protocol §2.6 and §3), their payloads, and our `_backup`.

/// `_health` response, as grpc.health.v1.
public struct HealthStatus: Codable, Sendable, Equatable {
    public enum Status: String, WireEnum { case serving = "SERVING", notServing = "NOT_SERVING" }
    public var status: Status
    /// The build of the instance that answered (wire protocol, Addition 17); absent from one
    /// built before it.
    public var build: BuildStamp?
    public init(status: Status, build: BuildStamp? = nil) {
        self.status = status
        self.build = build
    }
}

/// Which build of a program answers: its release version and the git commit it was built from
/// (`unknown` when the build was not stamped). Addition 17 of the wire protocol.
public struct BuildStamp: Codable, Sendable, Equatable, CustomStringConvertible {
    public var version: String
    public var commit: String
    public init(version: String, commit: String) {
        self.version = version
        self.commit = commit
    }

    public var description: String { "\(version) (commit \(commit))" }
}

/// `_describe` response: what a service serves and publishes.
public struct ServiceDescription: Codable, Sendable {
    public struct MethodInfo: Codable, Sendable {
        public var name: String
        public var summary: String
        /// Who may call it: `any`, `app`, `service` or `operator` (wire protocol, Addition 11);
        /// absent from a service built before the mark existed.
        public var audience: Audience?
        public var request: JSONValue
        public var response: JSONValue
    }
    public struct EventInfo: Codable, Sendable {
        public var topic: String
        public var summary: String
        public var payload: JSONValue
    }
    public var service: String
    /// The build of the instance that answered (Addition 17); absent from one built before it.
    public var build: BuildStamp?
    public var methods: [MethodInfo]
    public var events: [EventInfo]

    public init(service: String, methods: [any MethodDescriptor], topics: [any TopicDescriptor], build: BuildStamp? = nil) {
        self.service = service
        self.build = build
        self.methods = methods.map {
            MethodInfo(name: $0.name, summary: $0.summary, audience: $0.audience, request: $0.requestShape, response: $0.responseShape)
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

/// The reserved methods of wire protocol §2.6 and §3, for any service, and our `_backup`.
public enum Reserved {
    /// `_health`: `{"status":"SERVING"}` or `NOT_SERVING`.
    public static func health(_ service: String) -> Method<Empty, HealthStatus> {
        Method(service: service, "_health", "Whether the service is serving (grpc.health.v1 style).", audience: .any)
    }

    /// `_describe`: the service's methods and events with their JSON shapes.
    public static func describe(_ service: String) -> Method<Empty, ServiceDescription> {
        Method(service: service, "_describe", "The service's methods and events, with request, response and payload shapes.", audience: .any)
    }

    /// `_events.replay`: the stored events of the service's durable stream after a `seq`.
    /// Services and operators read every user's events, or one user's when the header names a
    /// `user`; app callers (the edge, user keys) only their header user's (wire protocol,
    /// Addition 14), so its audience is `.app` and the handler narrows it.
    public static func eventsReplay(_ service: String) -> Method<ReplayRequest, ReplayResponse> {
        Method(service: service, "_events.replay", "Stored events after a seq, in order, to fill gaps or catch up; one user's for app callers.", audience: .app)
    }

    /// `_backup` (a StudyBus extension, not in the wire protocol): an online copy of the service's
    /// SQLite file in the attachment frame. Only services that own a database answer it, and
    /// only to operators.
    public static func backup(_ service: String) -> Method<Empty, BackupInfo> {
        Method(service: service, "_backup", "An online copy of the service's SQLite file, in the attachment frame, with its size, SHA-256 and migrations.", audience: .operator)
    }
}
