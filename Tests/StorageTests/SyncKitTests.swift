import Contracts
import Foundation
import GRDB
import Storage
import SyncKit
import Testing
import Wire

/// A kind of record for the engine's tests.
enum NoteKind: String, WireEnum {
    case note, folder
}

@Suite("SyncKit: last-write-wins versions, the change log, tombstones and cursor pulls")
struct SyncKitTests {
    @Test("versions: later time, then delete over edit, then the service's tie-break")
    func versions() {
        let edit = SyncVersion(at: 10, deleted: false, device: "b")
        #expect(edit.wins(over: nil, .greaterDevice))
        #expect(SyncVersion(at: 11, deleted: false, device: "a").wins(over: edit, .greaterDevice))
        #expect(!SyncVersion(at: 9, deleted: true, device: "z").wins(over: edit, .laterArrival))
        #expect(SyncVersion(at: 10, deleted: true, device: "a").wins(over: edit, .greaterDevice))
        #expect(!SyncVersion(at: 10, deleted: false, device: "z").wins(over: SyncVersion(at: 10, deleted: true, device: "a"), .laterArrival))
        // Two edits of the same millisecond.
        #expect(!SyncVersion(at: 10, deleted: false, device: "a").wins(over: edit, .greaterDevice))
        #expect(SyncVersion(at: 10, deleted: false, device: "c").wins(over: edit, .greaterDevice))
        #expect(SyncVersion(at: 10, deleted: false, device: "a").wins(over: edit, .laterArrival))
        // API edits never go back in time, nor past the wire's last date.
        let now = Date(unixMilliseconds: 1_000)
        #expect(SyncVersion.apiUpdate(now: now, after: Date(unixMilliseconds: 500)) == now)
        #expect(SyncVersion.apiUpdate(now: now, after: Date(unixMilliseconds: 5_000)) == Date(unixMilliseconds: 5_001))
        let last = Date(unixMilliseconds: SyncVersion.latestWireMilliseconds)
        #expect(SyncVersion.apiUpdate(now: now, after: last) == last)
    }

    @Test("the log keeps each record once, at its latest change; tombstones answer for deleted records; pulls page by cursor")
    func logAndPull() throws {
        let queue = try DatabaseQueue()
        let engine = SyncEngine<NoteKind>(service: "notes", tieBreak: .greaterDevice) { id, field throws(BusError) in try Field.id(id, field) }
        try queue.write { db in
            try db.execute(sql: SyncLog.tables)
            try db.execute(sql: "CREATE TABLE note (id TEXT NOT NULL, user_id TEXT NOT NULL, text TEXT, updated_at INTEGER NOT NULL, device TEXT NOT NULL DEFAULT '')")
            let log = SyncLog(db: db, user: "u1", now: Date(), device: "phone")
            for id in ["n1", "n2", "n3"] {
                try db.execute(sql: "INSERT INTO note VALUES (?, 'u1', ?, 5, 'phone')", arguments: [id, id.uppercased()])
                try log.logChange("note", id)
            }
            try log.logChange("note", "n1")  // changed again: moves to the end
            try db.execute(sql: "DELETE FROM note WHERE id = 'n2'")
            try log.writeTombstone("note", "n2", at: Date(unixMilliseconds: 7))
            #expect(try log.current("note", "n2", table: "note") == SyncVersion(at: 7, deleted: true, device: "phone"))
            #expect(try log.current("note", "n3", table: "note") == SyncVersion(at: 5, deleted: false, device: "phone"))
            #expect(try !log.wins("note", "n2", table: "note", at: Date(unixMilliseconds: 6), deleted: false, .greaterDevice))
            #expect(try SyncLog(db: db, user: "u2", now: Date(), device: "x").current("note", "n3", table: "note") == nil)
            try SyncLog(db: db, user: "u2", now: Date(), device: "x").logChange("note", "theirs")
        }
        try queue.read { db in
            func current(_ kind: NoteKind, _ id: String) throws -> SyncChangeOf<NoteKind>? {
                try String.fetchOne(db, sql: "SELECT text FROM note WHERE id = ?", arguments: [id])
                    .map { SyncChangeOf(kind: kind, id: id, updatedAt: Date(unixMilliseconds: 5), record: .string($0)) }
            }
            // n1 changed again after n3, and n2's delete came last.
            let first = try engine.pull(SyncPullRequestOf(limit: 2), db, user: "u1", current: current)
            #expect(first.changes.map(\.id) == ["n3", "n1"] && first.hasMore && first.changes[1].record == .string("N1"))
            let second = try engine.pull(SyncPullRequestOf(cursor: first.cursor, limit: 2), db, user: "u1", current: current)
            #expect(second.changes.map(\.id) == ["n2"] && !second.hasMore && second.changes[0].deleted && second.changes[0].deviceId == "phone")
            #expect(second.changes[0].updatedAt == Date(unixMilliseconds: 7) && second.changes[0].record == nil)
            #expect(try engine.pull(SyncPullRequestOf(kinds: [.folder]), db, user: "u1", current: current).changes.isEmpty)
            #expect(throws: BusError.self) { try engine.pull(SyncPullRequestOf(cursor: "x", limit: 2), db, user: "u1", current: current) }
        }
    }

    @Test("a push is checked before its transaction, and an error names its change")
    func pushChecks() throws {
        let engine = SyncEngine<NoteKind>(service: "notes", tieBreak: .laterArrival) { id, field throws(BusError) in try Field.id(id, field) }
        let now = Date(unixMilliseconds: 1_000_000)
        let ahead = SyncChangeOf<NoteKind>(kind: .note, id: "n1", updatedAt: now.addingTimeInterval(61))
        #expect(throws: BusError.self) { try engine.check(SyncPushRequestOf(deviceId: "d", changes: [ahead]), now: now, skew: .seconds(60)) }
        try engine.check(SyncPushRequestOf(deviceId: "d", changes: [ahead]), now: now, skew: .seconds(61))
        #expect(throws: BusError.self) { try engine.check(SyncPushRequestOf(deviceId: "", changes: []), now: now, skew: .seconds(60)) }
        let request = SyncPushRequestOf<NoteKind>(deviceId: "d", changes: [ahead, SyncChangeOf(kind: .folder, id: "f1", updatedAt: now)])
        do {
            _ = try engine.apply(request) { change, _ in
                if change.kind == .folder { throw BusError.notFound("no such folder") }
                return .applied
            }
            Issue.record("the push should fail")
        } catch let error as BusError {
            #expect(error.code == .notFound && error.message == "changes[1]: no such folder")
        }
    }
}
