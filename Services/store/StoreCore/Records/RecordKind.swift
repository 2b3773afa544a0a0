import Bus
import Contracts
import Foundation
import GRDB
import Wire

/// A create request: the new record's fields and, optionally, its id.
protocol CreateRequest: Codable, Sendable {
    var id: String? { get set }
}

/// An update request: the record's id and the fields to change.
protocol UpdateRequest: Codable, Sendable {
    var id: String { get }
}

/// What one kind of record does on create, update, delete and list; the generic handlers of
/// ``RecordMethods`` do the rest (user scoping, transaction, idempotency).
protocol RecordKind: SendableMetatype {
    associatedtype Record: StoredRecord
    associatedtype Create: CreateRequest
    associatedtype Update: UpdateRequest
    associatedtype List: Codable & Sendable & PagedRequest
    associatedtype Delete: DeleteRequest = RecordID

    /// Validates `request` and builds the new record (reading references; writing nothing).
    static func make(_ request: Create, _ changes: Changes) throws -> Record
    /// Validates `request` and returns `record` changed by it (`updatedAt` is set by the caller).
    static func apply(_ request: Update, to record: Record, _ changes: Changes) throws -> Record
    /// Deletes `record` with what depends on it.
    static func remove(_ record: Record, _ changes: Changes) throws
    /// Deletes `record` as the delete method's `request` asks (options such as a cascade).
    static func remove(_ record: Record, as request: Delete, _ changes: Changes) throws
    /// The list's filters and order.
    static func query(_ request: List) throws -> ListQuery
    /// The record `request` describes in full, replacing `existing` (a sync edit): by default the
    /// new record as `make` builds it, keeping the existing creation time.
    static func replace(_ existing: Record, with request: Create, _ changes: Changes) throws -> Record
}

/// A delete method's request: the record's id, and any options of the kind's delete.
protocol DeleteRequest: Codable, Sendable {
    var id: String { get }
}

extension RecordID: DeleteRequest {}
extension SubjectDelete: DeleteRequest {}

extension RecordKind where Delete == RecordID {
    static func remove(_ record: Record, as request: RecordID, _ changes: Changes) throws {
        try remove(record, changes)
    }
}

extension RecordKind {
    static func replace(_ existing: Record, with request: Create, _ changes: Changes) throws -> Record {
        var request = request
        request.id = existing.id
        return try make(request, changes).keepingCreation(of: existing)
    }

    static func remove(_ record: Record, _ changes: Changes) throws {
        try changes.delete(record)
    }
}

extension StoredRecord {
    /// This record with `other`'s creation time (a replacement of it).
    func keepingCreation(of other: Self) -> Self {
        var copy = self
        copy.createdAt = other.createdAt
        return copy
    }
}
