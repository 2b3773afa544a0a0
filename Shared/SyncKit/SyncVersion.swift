import Foundation
import Wire

/// A version of a synced record, as last-write-wins orders them: the later `updatedAt` wins;
/// at the same millisecond a delete beats an edit; between two edits (or two deletes) of the
/// same millisecond the service's ``SyncTieBreak`` decides.
public struct SyncVersion: Sendable, Equatable {
    /// `updatedAt` (a tombstone's `deletedAt`) in Unix milliseconds.
    public var at: Int64
    public var deleted: Bool
    /// Who wrote it: the device id, "" for the service's own API.
    public var device: String

    public init(at: Int64, deleted: Bool, device: String) {
        self.at = at
        self.deleted = deleted
        self.device = device
    }

    /// Whether this (incoming) version replaces `current` (nil: there is none).
    public func wins(over current: SyncVersion?, _ tieBreak: SyncTieBreak) -> Bool {
        guard let current else { return true }
        let mine = (at, deleted ? 1 : 0), theirs = (current.at, current.deleted ? 1 : 0)
        guard mine == theirs else { return mine > theirs }
        switch tieBreak {
        case .greaterDevice: return device > current.device
        case .laterArrival: return true
        }
    }
}

/// How two versions of the same millisecond and the same kind (two edits, two deletes) are ordered.
public enum SyncTieBreak: Sendable {
    /// The greater device id wins, whatever order the pushes arrive in (store).
    case greaterDevice
    /// The service's clock decides: the version it receives later wins (scheduler).
    case laterArrival
}

extension SyncVersion {
    /// The `updatedAt` of an edit made through a service's API at `now`: now, or just after the
    /// stored version if a device's clock put that in the future — an edit applied here must win
    /// over what it replaced. Never past 9999-12-31T23:59:59.999Z, the last time the wire's dates
    /// carry (a record a device stamped that late keeps that time).
    public static func apiUpdate(now: Date, after previous: Date) -> Date {
        guard now <= previous else { return now }
        return Date(unixMilliseconds: min(previous.unixMilliseconds + 1, latestWireMilliseconds))
    }

    /// 9999-12-31T23:59:59.999Z in Unix milliseconds.
    public static let latestWireMilliseconds: Int64 = 253_402_300_799_999
}
