import Foundation
import Wire

// Multi-device sync of the scheduler's habit data: `sync.push` and `sync.pull`, the payloads of
// store's methods of the same names (Sync.swift) with the scheduler's kinds, and the `habit.*`
// events that tell a user's other devices of each change.

/// The kinds of record the scheduler's sync carries. Their ids are UUIDs.
public enum HabitSyncKind: String, WireEnum {
    /// A habit system; pushed as `HabitSystemCreate`, pulled as `HabitSystem` (`tasks` empty).
    case system
    /// A task of a system; `HabitTaskCreate`, pulled as `HabitTask`.
    case task
    /// One task's check-in for one local date; `CheckInRequest`, pulled as `CheckIn`.
    case checkin
    /// A performance test; `PerformanceTestCreate`, pulled as `PerformanceTest` (`entries` empty).
    case test
    /// One result of a test; `TestEntryCreate`, pulled as `PerformanceTestEntry`.
    case entry
}

/// One change of one habit record (``SyncChangeOf``): on push, `record` is the kind's create
/// payload; on pull and in `habit.*` events, the record as the scheduler keeps it, or a
/// tombstone (`deleted: true`, no record). Children travel as their own changes: a pulled
/// system's `tasks` and a test's `entries` are always empty.
public typealias HabitSyncChange = SyncChangeOf<HabitSyncKind>

/// `sync.push` on the scheduler: a device's habit changes, applied last-write-wins in one
/// transaction. The later `updatedAt` wins; at the same millisecond a delete beats an edit, and
/// otherwise the change the scheduler receives later wins (its clock breaks the tie).
public typealias HabitSyncPushRequest = SyncPushRequestOf<HabitSyncKind>

/// `sync.push` response: one result per change, in push order, with the id as kept (lower case).
public typealias HabitSyncPushResponse = SyncPushResponseOf<HabitSyncKind>

/// `sync.pull` on the scheduler.
public typealias HabitSyncPullRequest = SyncPullRequestOf<HabitSyncKind>

/// `sync.pull` response.
public typealias HabitSyncPullResponse = SyncPullResponseOf<HabitSyncKind>

/// The `habit.*` topics of one kind: created, updated and deleted.
public struct HabitChangeTopics: Sendable {
    public let created: Topic<HabitSyncChange>
    public let updated: Topic<HabitSyncChange>
    public let deleted: Topic<HabitSyncChange>
}

extension SchedulerContract {
    /// The topics of `kind`'s changes (`habit.task.created`, …).
    public func topics(of kind: HabitSyncKind) -> HabitChangeTopics {
        switch kind {
        case .system: HabitChangeTopics(created: systemCreated, updated: systemUpdated, deleted: systemDeleted)
        case .task: HabitChangeTopics(created: taskCreated, updated: taskUpdated, deleted: taskDeleted)
        case .checkin: HabitChangeTopics(created: checkInCreated, updated: checkInUpdated, deleted: checkInDeleted)
        case .test: HabitChangeTopics(created: testCreated, updated: testUpdated, deleted: testDeleted)
        case .entry: HabitChangeTopics(created: entryCreated, updated: entryUpdated, deleted: entryDeleted)
        }
    }
}
