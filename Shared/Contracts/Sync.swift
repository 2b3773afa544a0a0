import Foundation
import Wire

// The multi-device sync contract, one for every service that syncs records (store's
// `sync.push`/`sync.pull`, the scheduler's of the same names): the same payloads, told apart
// only by their record kinds. A client writes one sync loop and points it at each service.
// The services' own files say which kinds they carry and how ties are broken.

/// One change of one record, pushed by a device or pulled from a service.
///
/// On push, `record` is the kind's create payload (its `id` may be omitted) for an upsert, and
/// absent when `deleted`. `updatedAt` is the device's time of the change. On pull, `record` is
/// the stored record and a delete comes as a tombstone (`deleted: true`, no record).
public struct SyncChangeOf<Kind: WireEnum & Hashable>: Codable, Sendable, Equatable {
    public var kind: Kind
    public var id: String
    public var updatedAt: Date
    public var deleted: Bool
    public var record: JSONValue?
    /// The device that made the change (pull only; empty for changes made through the API).
    public var deviceId: String?
    public init(kind: Kind, id: String, updatedAt: Date, deleted: Bool = false, record: JSONValue? = nil, deviceId: String? = nil) {
        self.kind = kind
        self.id = id
        self.updatedAt = updatedAt
        self.deleted = deleted
        self.record = record
        self.deviceId = deviceId
    }
}

/// `sync.push`: a device's changes, applied last-write-wins in one transaction, in order.
public struct SyncPushRequestOf<Kind: WireEnum & Hashable>: Codable, Sendable, Equatable {
    /// 1…64 characters.
    public var deviceId: String
    /// At most 500.
    public var changes: [SyncChangeOf<Kind>]
    public init(deviceId: String, changes: [SyncChangeOf<Kind>]) {
        self.deviceId = deviceId
        self.changes = changes
    }
}

/// What happened to one pushed change.
public enum SyncOutcome: String, WireEnum {
    case applied
    /// The service had a newer (or tie-winning) version; pull to get it.
    case superseded
}

/// The outcome of one pushed change, in push order.
public struct SyncPushResultOf<Kind: WireEnum & Hashable>: Codable, Sendable, Equatable {
    public var kind: Kind
    public var id: String
    public var outcome: SyncOutcome
    public init(kind: Kind, id: String, outcome: SyncOutcome) {
        self.kind = kind
        self.id = id
        self.outcome = outcome
    }
}

/// `sync.push` response.
public struct SyncPushResponseOf<Kind: WireEnum & Hashable>: Codable, Sendable, Equatable {
    public var results: [SyncPushResultOf<Kind>]
    public init(results: [SyncPushResultOf<Kind>]) { self.results = results }
}

/// `sync.pull`: every change since `cursor` (absent: from the beginning), each record once in
/// its latest state, in the order of the changes.
public struct SyncPullRequestOf<Kind: WireEnum & Hashable>: Codable, Sendable, Equatable {
    public var cursor: String?
    /// 1…500, default 200.
    public var limit: Int?
    /// Only these kinds; a cursor belongs to the filter it was returned for.
    public var kinds: [Kind]?
    public init(cursor: String? = nil, limit: Int? = nil, kinds: [Kind]? = nil) {
        self.cursor = cursor
        self.limit = limit
        self.kinds = kinds
    }
}

/// `sync.pull` response.
public struct SyncPullResponseOf<Kind: WireEnum & Hashable>: Codable, Sendable, Equatable {
    public var changes: [SyncChangeOf<Kind>]
    /// Where to continue: pass it on the next pull (also when `hasMore` is false, to get later changes).
    public var cursor: String
    public var hasMore: Bool
    public init(changes: [SyncChangeOf<Kind>], cursor: String, hasMore: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
    }
}
