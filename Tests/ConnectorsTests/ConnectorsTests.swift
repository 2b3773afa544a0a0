import Bus
import ConnectorsCore
import Contracts
import Foundation
import HTTPClient
import ServiceKit
import TestSupport
import Testing
import Wire

/// Every stored event of connectors' durable stream.
func replayConnectors(_ bus: Bus) async throws -> [StoredEvent] {
    try await bus.call(Reserved.eventsReplay("connectors"), ReplayRequest(after: 0, limit: 1000)).events
}

@Suite("connectors: linking and tokens", .serialized)
struct LinkTests {
    @Test("link exchanges the code, keeps the refresh token sealed at rest and never returns it")
    func linkSealsTheRefreshToken() async throws {
        try await ConnectorsWorld.with { world in
            let secret = "1//refresh-secret-PLAINTEXT-\(UUID().uuidString)"
            let account = try await world.link(refresh: secret)
            #expect(account.state == .active)
            #expect(account.email == "student@example.org")
            #expect(account.calendarIds == ["primary"])
            #expect(!account.scopes.isEmpty)
            let listed = try await world.call(Connectors.list, Empty())
            #expect(listed.accounts.map(\.id) == [account.id])
            #expect(!String(decoding: try WireCoding.encode(listed), as: UTF8.self).contains(secret))
            // The database file (and its write-ahead log) hold no plaintext token.
            for suffix in ["", "-wal"] {
                let bytes = (try? Data(contentsOf: URL(fileURLWithPath: world.databaseURL.path + suffix))) ?? Data()
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "connectors.sqlite\(suffix) holds the refresh token in plaintext")
                #expect(bytes.range(of: Data("ya29.access".utf8)) == nil, "connectors.sqlite\(suffix) holds an access token")
            }
            // Linking the same Google account again replaces its tokens, not a second account.
            let again = try await world.link(code: "4/code-2", refresh: "1//refresh-2")
            #expect(again.id == account.id)
            // Another user sees nothing of it.
            #expect(try await world.call(Connectors.list, Empty(), user: "u2").accounts.isEmpty)
            #expect(await world.failure(Connectors.status, ConnectorRef(accountId: account.id), user: "u2")?.code == .notFound)
            // Unlink revokes at Google and forgets the account.
            _ = try await world.call(Connectors.unlink, ConnectorRef(accountId: account.id))
            #expect(try await world.google.revoked() == ["1//refresh-2"])
            #expect(try await world.call(Connectors.list, Empty()).accounts.isEmpty)
        }
    }

    @Test("a refused or malformed code, bad fields and a missing user are clear errors")
    func linkErrors() async throws {
        try await ConnectorsWorld.with { world in
            let refused = await world.failure(Connectors.link, ConnectorLinkRequest(code: "4/never-issued", redirectUri: "app:/cb"))
            #expect(refused?.code == .invalidArgument)
            #expect(refused?.message.contains("invalid_grant") == true)
            #expect(await world.failure(Connectors.link, ConnectorLinkRequest(code: "", redirectUri: "app:/cb"))?.code == .invalidArgument)
            let long = ConnectorLinkRequest(code: String(repeating: "x", count: 5000), redirectUri: "app:/cb")
            #expect(await world.failure(Connectors.link, long)?.code == .invalidArgument)
            let badVerifier = ConnectorLinkRequest(code: "4/x", redirectUri: "app:/cb", codeVerifier: "short")
            #expect(await world.failure(Connectors.link, badVerifier)?.code == .invalidArgument)
            do throws(BusError) {
                _ = try await world.client.call(Connectors.list, Empty())
                Issue.record("a call without a user must fail")
            } catch {
                #expect(error.code == .invalidArgument)
            }
            let account = try await world.link()
            let tooMany = ConnectorConfigureRequest(accountId: account.id, calendarIds: (0..<21).map { "c\($0)" })
            #expect(await world.failure(Connectors.configure, tooMany)?.code == .invalidArgument)
            #expect(await world.failure(Connectors.configure, ConnectorConfigureRequest(accountId: account.id, driveFolderIds: ["a b"]))?.code == .invalidArgument)
            // An absurd token answer (expires_in of 10^30) is refused, not trusted.
            try await world.google.control("hostile", ["path": .string("^/token$"), "kind": .string("absurd")])
            try await world.google.control("code", ["code": .string("4/absurd"), "refresh": .string("r")])
            let absurd = await world.failure(Connectors.link, ConnectorLinkRequest(code: "4/absurd", redirectUri: "app:/cb"))
            #expect(absurd?.code == .internal)
            #expect(absurd?.message.contains("expires_in") == true)
        }
    }

    @Test("the access token is refreshed before it expires, and only then")
    func refreshBeforeExpiry() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            _ = try await world.call(Connectors.sync, ref)
            #expect(world.service.tokenRefreshes == 0, "the exchange's access token is good for an hour")
            world.clock.advance(by: 3000)
            _ = try await world.call(Connectors.sync, ref)
            #expect(world.service.tokenRefreshes == 0, "ten minutes left: more than the margin")
            world.clock.advance(by: 400)
            _ = try await world.call(Connectors.sync, ref)
            #expect(world.service.tokenRefreshes == 1, "less than five minutes left: refreshed before expiry")
            _ = try await world.call(Connectors.sync, ref)
            #expect(world.service.tokenRefreshes == 1)
            let refreshes = try await world.google.log().filter { $0.path == "/token" }.count
            #expect(refreshes == 2, "one code exchange, one refresh")
        }
    }

    @Test("a token endpoint that fails is the sync's error: UNAVAILABLE, recorded, connector.failed without reauth")
    func tokenEndpointDown() async throws {
        try await ConnectorsWorld.with({ $0.retry.maxRetries = 1 }) { world in
            let account = try await world.link()
            world.clock.advance(by: 3500)
            try await world.google.control("fail", ["path": .string("^/token$"), "status": .int(503), "reason": .string("backendError"), "count": .int(5)])
            let failure = await world.failure(Connectors.sync, ConnectorRef(accountId: account.id))
            #expect(failure?.code == .unavailable)
            let status = try await world.call(Connectors.status, ConnectorRef(accountId: account.id))
            #expect(status.state == .active && status.lastError?.contains("503") == true)
            let failed = try await replayConnectors(world.client).filter { $0.topic == Connectors.failed.name }
            #expect(failed.count == 1)
            #expect(try failed.first.map { try WireCoding.decode(ConnectorFailed.self, from: $0.payload.jsonData).needsReauth } == false)
        }
    }

    @Test("invalid_grant on refresh marks the account needsReauth and publishes connector.failed")
    func revokedRefreshToken() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link(refresh: "1//to-be-revoked")
            try await world.google.control("revoke_refresh", ["refresh": .string("1//to-be-revoked")])
            world.clock.advance(by: 3500)
            let failure = await world.failure(Connectors.sync, ConnectorRef(accountId: account.id))
            #expect(failure?.code == .failedPrecondition)
            #expect(failure?.details?["needsReauth"] == .bool(true))
            let listed = try await world.call(Connectors.list, Empty())
            #expect(listed.accounts.first?.state == .needsReauth)
            let events = try await replayConnectors(world.client)
            let failed = try #require(events.first { $0.topic == Connectors.failed.name })
            let payload = try WireCoding.decode(ConnectorFailed.self, from: failed.payload.jsonData)
            #expect(payload.needsReauth && payload.accountId == account.id && failed.header.user == "u1")
            // No more refreshes are tried until the user links again.
            #expect(await world.failure(Connectors.sync, ConnectorRef(accountId: account.id))?.code == .failedPrecondition)
            #expect(try await world.google.log().filter { $0.path == "/token" }.count == 2)
            let relinked = try await world.link(code: "4/again", refresh: "1//new")
            #expect(relinked.id == account.id && relinked.state == .active)
        }
    }
}

@Suite("connectors: Google Calendar", .serialized)
struct CalendarTests {
    @Test("after a restart the sealed refresh token is opened and used, and syncs go on from their cursors")
    func restart() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            try await world.event("a", summary: "Chemistry exam", start: "2026-12-10T09:00:00Z")
            _ = try await world.call(Connectors.sync, ref)
            await world.stopConnectors()
            try await world.startConnectors()
            try await world.event("b", summary: "Physics exam", start: "2026-12-11T09:00:00Z")
            try await world.google.control("clear_log")
            let status = try await world.call(Connectors.sync, ref)
            #expect(status.lastError == nil)
            let log = try await world.google.log()
            #expect(log.filter { $0.path == "/token" }.count == 1, "access tokens live in memory only: one refresh after the restart")
            #expect(log.first { $0.path.hasPrefix("/calendar/") }?.query["syncToken"] != nil)
            #expect(Set(try await world.tasks().map(\.title)) == ["Chemistry exam", "Physics exam"])
        }
    }

    /// `STUDYBUS_BENCH_CONNECTORS=N` (scripts/bench-connectors): a first sync of N events, timed.
    @Test("benchmark: the first sync of many calendar events", .enabled(if: ProcessInfo.processInfo.environment["STUDYBUS_BENCH_CONNECTORS"] != nil))
    func benchmarkCalendar() async throws {
        let count = Int(ProcessInfo.processInfo.environment["STUDYBUS_BENCH_CONNECTORS"] ?? "") ?? 2000
        try await ConnectorsWorld.with({ $0.maximumPages = 1000 }) { world in
            let account = try await world.link()
            try await world.google.control("events_bulk", ["count": .int(Int64(count))])
            let started = ContinuousClock.now
            let status = try await world.call(Connectors.sync, ConnectorRef(accountId: account.id))
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            #expect(status.sources.first?.added == count)
            print("connectors_calendar_events_per_s \(Int(Double(count) / seconds)) events/s")
            print("connectors_calendar_first_sync_ms \(Int(seconds * 1000)) ms")
        }
    }

    @Test("events become tasks and study sessions; later syncs use nextSyncToken; cancelled events are removed")
    func incrementalCalendar() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            try await world.event("exam1", summary: "Biology exam", start: "2026-12-10T09:00:00Z", end: "2026-12-10T11:00:00Z")
            try await world.event("study1", summary: "Study session: cells", start: "2026-12-05T15:00:00+01:00", end: "2026-12-05T16:30:00+01:00")
            try await world.google.control("page_size", ["size": .int(1)])
            let first = try await world.call(Connectors.sync, ref)
            #expect(first.sources.first { $0.source == .calendar }?.added == 2)
            #expect(try await world.tasks().map(\.title) == ["Biology exam"])
            let sessions = try await world.sessions()
            #expect(sessions.count == 1)
            #expect(sessions.first?.startedAt == ISO8601DateFormatter().date(from: "2026-12-05T14:00:00Z"))

            try await world.google.control("clear_log")
            try await world.event("exam1", summary: "Biology exam (room 4)", start: "2026-12-10T09:00:00Z")
            try await world.event("hw", summary: "Homework due", start: "2026-12-08T08:00:00Z")
            try await world.event("study1", summary: "Study session: cells", start: "2026-12-05T15:00:00+01:00", status: "cancelled")
            let second = try await world.call(Connectors.sync, ref)
            let calendar = try #require(second.sources.first { $0.source == .calendar })
            #expect((calendar.added, calendar.updated, calendar.removed) == (1, 1, 1))
            #expect(calendar.items == 2)
            let requests = try await world.google.log().filter { $0.path.hasPrefix("/calendar/") }
            #expect(requests.first?.query["syncToken"] != nil, "an incremental sync sends the nextSyncToken")
            #expect(Set(try await world.tasks().map(\.title)) == ["Biology exam (room 4)", "Homework due"])
            #expect(try await world.sessions().isEmpty)
        }
    }

    @Test("410 GONE resets the sync token: a full sync without duplicates, dropping what vanished")
    func goneResync() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            for index in 0..<3 { try await world.event("e\(index)", summary: "Lecture \(index)", start: "2026-12-0\(index + 1)T10:00:00Z") }
            _ = try await world.call(Connectors.sync, ref)
            #expect(try await world.tasks().count == 3)
            // While the token is invalid, e1 is deleted (the full listing no longer has it).
            try await world.event("e1", summary: "Lecture 1", start: "2026-12-02T10:00:00Z", status: "cancelled")
            try await world.google.control("reset_sync_tokens")
            try await world.google.control("clear_log")
            let status = try await world.call(Connectors.sync, ref)
            let calls = try await world.google.log().filter { $0.path.hasPrefix("/calendar/") }
            #expect(calls.count == 2, "the 410, then the full listing")
            #expect(calls.last?.query["syncToken"] == nil)
            #expect(status.sources.first { $0.source == .calendar }?.lastError == nil)
            #expect(Set(try await world.tasks().map(\.title)) == ["Lecture 0", "Lecture 2"])
            // And incremental again afterwards.
            try await world.event("e3", summary: "Lecture 3", start: "2026-12-04T10:00:00Z")
            _ = try await world.call(Connectors.sync, ref)
            #expect(try await world.tasks().count == 3)
        }
    }

    @Test("429 and 403 rateLimitExceeded with Retry-After are waited out, then the sync succeeds")
    func backOff() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link()
            try await world.event("a", summary: "Exam", start: "2026-12-10T09:00:00Z")
            try await world.google.control("fail", ["path": .string("/calendar/"), "status": .int(429), "retry_after": .int(1), "count": .int(1)])
            try await world.google.control("fail", ["path": .string("/calendar/"), "status": .int(403), "reason": .string("userRateLimitExceeded"), "count": .int(1)])
            try await world.google.control("clear_log")
            let status = try await world.call(Connectors.sync, ConnectorRef(accountId: account.id))
            #expect(status.sources.first { $0.source == .calendar }?.lastError == nil)
            #expect(try await world.tasks().count == 1)
            let calls = try await world.google.log().filter { $0.path.hasPrefix("/calendar/") }
            #expect(calls.count == 3)
            if calls.count == 3 { #expect(calls[1].time - calls[0].time >= 0.95, "Retry-After: 1 was honoured") }
            // A 403 that is not a rate error is not retried.
            try await world.google.control("fail", ["path": .string("/calendar/"), "status": .int(403), "reason": .string("forbidden"), "count": .int(1)])
            let failed = try await world.call(Connectors.sync, ConnectorRef(accountId: account.id))
            #expect(failed.sources.first { $0.source == .calendar }?.lastError?.contains("403") == true)
        }
    }

    @Test("hostile answers (huge, malformed, wrong types) fail the source with a clear error, not the process")
    func hostileAnswers() async throws {
        try await ConnectorsWorld.with({ $0.maximumResponseBytes = 1 << 20 }) { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            for (kind, words) in [("huge", "too large"), ("garbage", "not JSON"), ("badtoken", "nextSyncToken")] {
                try await world.google.control("hostile", ["path": .string("/calendar/"), "kind": .string(kind)])
                let status = try await world.call(Connectors.sync, ref)
                let error = status.sources.first { $0.source == .calendar }?.lastError ?? ""
                #expect(error.contains(words), "\(kind): \(error)")
                #expect(status.lastError?.contains("calendar") == true)
                try await world.google.control("clear_hostile")
            }
            try await world.event("ok", summary: "Exam", start: "2026-12-10T09:00:00Z")
            let healed = try await world.call(Connectors.sync, ref)
            #expect(healed.lastError == nil)
            let events = try await replayConnectors(world.client)
            #expect(events.filter { $0.topic == Connectors.synced.name }.count == 4)
        }
    }
}

@Suite("connectors: Gmail and Drive", .serialized)
struct MailAndDriveTests {
    static func mail(_ subject: String) -> String {
        "From: Teacher <teacher@school.example>\r\nTo: student@example.org\r\nSubject: \(subject)\r\nDate: Tue, 1 Dec 2026 10:00:00 +0000\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\n\r\nPlease read chapter \(subject) about photosynthesis and cells.\r\n"
    }

    @Test("Gmail: labelled messages become materials; later syncs read users.history from historyId; an expired id lists again without duplicates")
    func gmailIncremental() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            _ = try await world.call(Connectors.configure, ConnectorConfigureRequest(accountId: account.id, calendarIds: [], gmailLabelIds: ["Label_school"]))
            try await world.google.control("message", ["id": .string("m1"), "raw": .string(Self.mail("one")), "labels": .array([.string("Label_school")])])
            try await world.google.control("message", ["id": .string("m2"), "raw": .string(Self.mail("two")), "labels": .array([.string("INBOX")])])
            let first = try await world.call(Connectors.sync, ref)
            #expect(first.sources.map(\.source) == [.gmail])
            #expect(first.sources.first?.added == 1)
            #expect(try await world.materials().count == 1)

            try await world.google.control("message", ["id": .string("m3"), "raw": .string(Self.mail("three")), "labels": .array([.string("Label_school")])])
            try await world.google.control("clear_log")
            let second = try await world.call(Connectors.sync, ref)
            #expect(second.sources.first?.added == 1)
            let paths = try await world.google.log().map(\.path)
            #expect(paths.contains("/gmail/v1/users/me/history"))
            #expect(!paths.contains("/gmail/v1/users/me/messages"), "no listing once there is a historyId")
            #expect(paths.filter { $0.hasPrefix("/gmail/v1/users/me/messages/") } == ["/gmail/v1/users/me/messages/m3"])
            #expect(try await world.materials().count == 2)

            try await world.google.control("message", ["id": .string("m4"), "raw": .string(Self.mail("four")), "labels": .array([.string("Label_school")])])
            try await world.google.control("history_floor")
            let third = try await world.call(Connectors.sync, ref)
            #expect(third.sources.first?.lastError == nil)
            #expect(third.sources.first?.added == 1, "only m4 is new after listing again")
            #expect(third.sources.first?.items == 3)
            #expect(try await world.materials().count == 3)
        }
    }

    @Test("Gmail's quota is paced per user: a burst of messages.get waits for the bucket")
    func gmailPacing() async throws {
        try await ConnectorsWorld.with({ $0.gmailUnitsPerSecond = 25 }) { world in
            let account = try await world.link()
            _ = try await world.call(Connectors.configure, ConnectorConfigureRequest(accountId: account.id, calendarIds: [], gmailQuery: "photosynthesis"))
            for index in 0..<10 {
                try await world.google.control("message", ["id": .string("p\(index)"), "raw": .string(Self.mail("p\(index)"))])
            }
            try await world.google.control("clear_log")
            let status = try await world.call(Connectors.sync, ConnectorRef(accountId: account.id))
            #expect(status.sources.first?.added == 10)
            let times = try await world.google.log().filter { $0.path.hasPrefix("/gmail/") }.map(\.time)
            // 1 (profile) + 5 (list) + 10 × 5 (get) = 56 units at 25 a second, 25 at once: ≥ 1.24 s.
            #expect(times.count == 12)
            #expect((times.last ?? 0) - (times.first ?? 0) >= 1.1, "paced: \((times.last ?? 0) - (times.first ?? 0)) s")
        }
    }

    @Test("Drive: a file over the size limit is skipped unread; a second sync at once joins the first")
    func driveLimitsAndJoinedSyncs() async throws {
        try await ConnectorsWorld.with({ $0.maximumFileBytes = 2048 }) { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            _ = try await world.call(Connectors.configure, ConnectorConfigureRequest(accountId: account.id, calendarIds: [], driveFolderIds: ["f"]))
            let big = String(repeating: "Photosynthesis makes sugar. ", count: 200)
            try await world.google.control("file", ["file": .object([
                "id": .string("big"), "name": .string("big.txt"), "mimeType": .string("text/plain"), "parents": .array([.string("f")]),
                "modifiedTime": .string("2026-12-01T10:00:00.000Z"), "content": .string(big)])])
            try await world.google.control("file", ["file": .object([
                "id": .string("small"), "name": .string("small.txt"), "mimeType": .string("text/plain"), "parents": .array([.string("f")]),
                "modifiedTime": .string("2026-12-01T10:00:00.000Z"), "content": .string("Chlorophyll is green.")])])
            try await world.google.control("clear_log")
            async let first = world.call(Connectors.sync, ref)
            async let second = world.call(Connectors.sync, ref)
            let (a, b) = try await (first, second)
            #expect(a == b, "the second call joined the running sync")
            let log = try await world.google.log()
            #expect(log.filter { $0.path == "/drive/v3/files" }.count == 1, "one listing for both calls")
            #expect(!log.contains { $0.path == "/drive/v3/files/big" }, "too large by its listed size: not downloaded")
            #expect(a.sources.first { $0.source == .drive }?.items == 1)
            #expect(try await world.materials().count == 1)
        }
    }

    @Test("Drive: a folder's files and exported Google Docs become materials; changes replace them, removals delete them")
    func driveFolder() async throws {
        try await ConnectorsWorld.with { world in
            let account = try await world.link()
            let ref = ConnectorRef(accountId: account.id)
            _ = try await world.call(Connectors.configure, ConnectorConfigureRequest(accountId: account.id, calendarIds: [], driveFolderIds: ["folder1"]))
            func file(_ id: String, _ name: String, _ mime: String, _ content: String, modified: String = "2026-12-01T10:00:00.000Z", parent: String = "folder1") -> JSONValue {
                .object(["id": .string(id), "name": .string(name), "mimeType": .string(mime), "parents": .array([.string(parent)]),
                         "modifiedTime": .string(modified), "content": .string(content)])
            }
            try await world.google.control("file", ["file": file("f1", "notes.txt", "text/plain", "Mitochondria are the powerhouse of the cell.")])
            try await world.google.control("file", ["file": file("d1", "Essay", "application/vnd.google-apps.document", "An essay about chloroplasts.")])
            try await world.google.control("file", ["file": file("s1", "Grades", "application/vnd.google-apps.spreadsheet", "")])
            try await world.google.control("file", ["file": file("x1", "other.txt", "text/plain", "Not in the folder.", parent: "folder2")])
            let first = try await world.call(Connectors.sync, ref)
            let drive = try #require(first.sources.first { $0.source == .drive })
            #expect(drive.added == 2 && drive.items == 2)
            let log = try await world.google.log()
            #expect(log.contains { $0.path == "/drive/v3/files/d1/export" && $0.query["mimeType"] == ["text/plain"] })
            #expect(log.contains { $0.path == "/drive/v3/files/f1" && $0.query["alt"] == ["media"] })
            #expect(!log.contains { $0.path.hasPrefix("/drive/v3/files/s1") })
            #expect(try await world.materials().count == 2)

            // Unchanged: nothing downloaded again.
            try await world.google.control("clear_log")
            _ = try await world.call(Connectors.sync, ref)
            #expect(try await world.google.log().filter { $0.path.hasPrefix("/drive/v3/files/") }.isEmpty)

            // Changed and removed.
            try await world.google.control("file", ["file": file("f1", "notes.txt", "text/plain", "Ribosomes make proteins.", modified: "2026-12-02T10:00:00.000Z")])
            try await world.google.control("remove_file", ["id": .string("d1")])
            let third = try await world.call(Connectors.sync, ref)
            let changed = try #require(third.sources.first { $0.source == .drive })
            #expect((changed.added, changed.updated, changed.removed) == (0, 1, 1))
            #expect(try await world.materials().count == 1)
        }
    }
}
