import Bus
import Contracts
import Foundation
import Logging
import Wire

/// Google Calendar into the store: each event a task due at its start, or a study session when
/// ``CalendarEntryRule`` says it is studying (as ingest does with an uploaded `.ics`).
///
/// Incremental with `syncToken`: the first sync lists every event (pages of 250), and its last
/// page's `nextSyncToken` is kept; later syncs list only what changed since, cancelled events
/// included (their records are deleted). A 410 GONE drops the token and lists everything again:
/// record ids come from the account, calendar and event, so nothing is duplicated, and events no
/// longer listed by the full sync are deleted. A sync reads at most `CONNECTORS_MAX_PAGES` pages
/// and keeps the page token to go on from next time.
struct CalendarSync {
    let context: SyncContext

    /// Items one page may hold (Google's maximum for maxResults is 2,500).
    static let maximumItemsPerPage = 2500

    func run() async throws(BusError) -> SourceOutcome {
        var outcome = SourceOutcome()
        for calendar in context.account.calendarIds {
            try await sync(calendar: calendar, outcome: &outcome)
        }
        return outcome
    }

    private func sync(calendar: String, outcome: inout SourceOutcome) async throws(BusError) {
        var cursor = try await context.cursor(.calendar, key: calendar)
        var restarted = false
        var pages = 0
        while true {
            let full = cursor.token == nil
            // A full sync numbers itself, so what it did not see can be found at its end.
            let epoch: Int64
            if let saved = cursor.epoch { epoch = saved } else { epoch = try await context.nextEpoch(.calendar, key: calendar) }
            let base = "\(context.configuration.apiURL)/calendar/v3/calendars/\(GoogleHTTP.escape(calendar))/events"
            let url = GoogleHTTP.url(base, [
                ("maxResults", "250"), ("syncToken", cursor.token), ("pageToken", cursor.pageToken), ("showDeleted", full ? nil : "true"),
            ])
            let page: [String: JSONValue]
            do throws(GoogleError) {
                page = try await context.google.json(url, accessToken: context.accessToken, bucket: context.syncer.calendarBucket)
            } catch .gone where !restarted {
                // The sync token expired (410): list everything again, once per sync.
                context.syncer.logger.notice("calendar sync token expired; full sync", metadata: ["account": "\(context.account.id)"])
                restarted = true
                cursor = (nil, nil, nil)
                try await context.saveCursor(.calendar, key: calendar, token: nil, pageToken: nil, epoch: nil)
                continue
            } catch {
                throw error.busError
            }
            pages += 1
            let items = page["items"]?.arrayValue ?? []
            guard items.count <= Self.maximumItemsPerPage else {
                throw BusError.internal("Google's answer is malformed: a calendar page of \(items.count) events (at most \(Self.maximumItemsPerPage))")
            }
            var ids: [String] = []
            for item in items {
                do throws(GoogleError) { ids.append(try GoogleJSON.id(item["id"], "an event's id")) } catch { throw error.busError }
            }
            let known = try await context.entries(.calendar, key: calendar, items: ids)
            var changes: [EntryChange] = []
            for (item, id) in zip(items, ids) {
                if let change = try await apply(item, id: id, existing: known[id], calendar: calendar, full: full, outcome: &outcome) {
                    changes.append(change)
                }
            }
            let next: String?, nextSync: String?
            do throws(GoogleError) {
                next = try GoogleJSON.token(page["nextPageToken"], "nextPageToken")
                nextSync = try GoogleJSON.token(page["nextSyncToken"], "nextSyncToken")
            } catch {
                throw error.busError
            }
            if let next {
                cursor = (cursor.token, next, full ? epoch : nil)
                try await context.commit(.calendar, key: calendar, changes: changes, epoch: epoch, cursor: cursor)
                if pages >= context.configuration.maximumPages { return }
                continue
            }
            guard let nextSync else {
                throw BusError.internal("Google's answer is malformed: the last page of events has no nextSyncToken")
            }
            try await context.commit(.calendar, key: calendar, changes: changes, epoch: epoch, cursor: nil)
            if full {
                for gone in try await context.unseen(.calendar, key: calendar, before: epoch) {
                    try await context.deleteRecord(kind: gone.kind, id: gone.recordID)
                    try await context.deleteEntry(.calendar, key: calendar, item: gone.item)
                    outcome.removed += 1
                }
            }
            try await context.saveCursor(.calendar, key: calendar, token: nextSync, pageToken: nil, epoch: nil)
            return
        }
    }

    /// One event: cancelled removes its record; otherwise its task or session is written
    /// (created, or updated when Google's `updated` changed). Returns the change to its entry.
    private func apply(
        _ item: JSONValue, id eventID: String, existing: KnownEntry?, calendar: String, full: Bool, outcome: inout SourceOutcome
    ) async throws(BusError) -> EntryChange? {
        if GoogleJSON.string(item["status"], maximum: 32) == "cancelled" {
            guard let existing else { return nil }
            try await context.deleteRecord(kind: existing.kind, id: existing.recordID)
            outcome.removed += 1
            return .delete(eventID)
        }
        let version = GoogleJSON.string(item["updated"], maximum: 64) ?? GoogleJSON.string(item["etag"], maximum: 128)
        if let existing, existing.version == version, version != nil {
            return full ? .seen(eventID) : nil
        }
        let summary = (GoogleJSON.string(item["summary"], maximum: 8192) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let title = (summary.isEmpty ? "Event" : summary).clippedScalars(StoreLimits.titleLength)
        let start = GoogleJSON.date(GoogleJSON.string(item["start"]?["dateTime"]) ?? GoogleJSON.string(item["start"]?["date"]))
        let end = GoogleJSON.date(GoogleJSON.string(item["end"]?["dateTime"]) ?? GoogleJSON.string(item["end"]?["date"]))
        let kind: String
        kind = start != nil && CalendarEntryRule.isStudy(summary: summary, categories: "") ? "session" : "task"
        let recordID = Syncer.recordID(prefix: "gcal-", context.account.id, calendar, eventID)
        if let existing, existing.kind != kind {
            try await context.deleteRecord(kind: existing.kind, id: existing.recordID)
        }
        // A new entry is created first (an update first when it is known), and the other call
        // follows only when the store disagrees: one call per event in the common cases.
        let isNew = existing == nil || existing?.kind != kind
        if kind == "session", let start {
            let endedAt = end.map { max($0, start) }
            let create = StudySessionCreate(id: recordID, startedAt: start, endedAt: endedAt)
            let update = StudySessionUpdate(id: recordID, startedAt: start, endedAt: endedAt)
            try await upsert(isNew: isNew, create: { () async throws(BusError) in _ = try await context.call(Store.createSession, create) },
                             update: { () async throws(BusError) in _ = try await context.call(Store.updateSession, update) })
        } else {
            let create = StudyTaskCreate(id: recordID, title: title, dueAt: start)
            let update = StudyTaskUpdate(id: recordID, title: title, dueAt: start, clearDueAt: start == nil ? true : nil)
            try await upsert(isNew: isNew, create: { () async throws(BusError) in _ = try await context.call(Store.createTask, create) },
                             update: { () async throws(BusError) in _ = try await context.call(Store.updateTask, update) })
        }
        if existing == nil { outcome.added += 1 } else { outcome.updated += 1 }
        return .save(item: eventID, kind: kind, recordID: recordID, version: version)
    }

    /// Creates, or updates when the record exists (ALREADY_EXISTS); updates, or creates when it
    /// is gone (NOT_FOUND: the user deleted it in the app, or a restore).
    private func upsert(isNew: Bool, create: () async throws(BusError) -> Void, update: () async throws(BusError) -> Void) async throws(BusError) {
        if isNew {
            do throws(BusError) {
                try await create()
            } catch where error.code == .alreadyExists {
                try await update()
            }
        } else {
            do throws(BusError) {
                try await update()
            } catch where error.code == .notFound {
                try await create()
            }
        }
    }
}
