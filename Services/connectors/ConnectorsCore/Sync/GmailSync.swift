import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import Wire

/// Gmail into materials: each message fetched whole (`messages.get` with `format=raw`) and
/// submitted to ingest as the `.eml` file it is, exactly as an uploaded `.eml`.
///
/// With labels and no query, incremental with `historyId`: the first sync lists the newest
/// messages with the labels (`messages.list`, up to `CONNECTORS_MAX_ITEMS`) and keeps the
/// mailbox's `historyId` (`users.getProfile`); later syncs read `users.history.list` from it
/// (`historyTypes=messageAdded`, `labelId`) and keep the new one. A 404 on the history (the id
/// is too old) starts over from the listing; messages already taken are known and skipped. With
/// a query, each sync lists the query's messages newest first and stops at the first page that
/// holds a message already taken.
///
/// Quota units (Gmail's table): getProfile 1, history.list 2, messages.list 5, messages.get 5;
/// each request takes its units from the user's bucket first.
struct GmailSync {
    let context: SyncContext

    static let maximumIDsPerPage = 1000

    private var base: String { "\(context.configuration.apiURL)/gmail/v1/users/me" }
    private var bucket: TokenBucket { context.syncer.gmailBucket(context.user) }

    func run() async throws(BusError) -> SourceOutcome {
        do throws(GoogleError) {
            return try await sync()
        } catch {
            throw error.busError
        }
    }

    private func sync() async throws(GoogleError) -> SourceOutcome {
        let cursor: (token: String?, pageToken: String?, epoch: Int64?)
        do { cursor = try await context.cursor(.gmail, key: "") } catch { throw .bus(error) }
        var newIDs: [String] = []
        var historyID: String?
        let labels = context.account.gmailLabelIds
        if let start = cursor.token, context.account.gmailQuery == nil {
            do throws(GoogleError) {
                (newIDs, historyID) = try await history(from: start, label: labels.first)
            } catch .http(let status, _, _) where status == 404 {
                context.syncer.logger.notice("gmail history id expired; listing again", metadata: ["account": "\(context.account.id)"])
                (newIDs, historyID) = try await listing()
            } catch .gone {
                (newIDs, historyID) = try await listing()
            }
        } else {
            (newIDs, historyID) = try await listing()
        }
        var outcome = SourceOutcome()
        // Oldest first, so a sync cut short keeps the order of the mailbox.
        for id in newIDs.reversed().prefix(context.configuration.maximumItems) {
            try await take(id, outcome: &outcome)
        }
        do {
            try await context.saveCursor(.gmail, key: "", token: historyID ?? cursor.token, pageToken: nil, epoch: nil)
        } catch {
            throw .bus(error)
        }
        return outcome
    }

    /// The messages of the labels or query, newest first, that are not taken yet; and the
    /// mailbox's current history id (read before listing, so nothing falls between).
    private func listing() async throws(GoogleError) -> ([String], String?) {
        let profile = try await context.google.json("\(base)/profile", accessToken: context.accessToken, bucket: bucket, units: 1)
        let historyID = try Self.historyID(profile["historyId"])
        var ids: [String] = []
        var pageToken: String?
        var pages = 0
        pageLoop: repeat {
            var query: [(String, String?)] = [("maxResults", "100"), ("q", context.account.gmailQuery), ("pageToken", pageToken)]
            for label in context.account.gmailLabelIds { query.append(("labelIds", label)) }
            let page = try await context.google.json(GoogleHTTP.url("\(base)/messages", query), accessToken: context.accessToken, bucket: bucket, units: 5)
            pages += 1
            let messages = page["messages"]?.arrayValue ?? []
            guard messages.count <= Self.maximumIDsPerPage else { throw .malformed("a page of \(messages.count) messages") }
            var sawKnown = false
            for message in messages {
                let id = try GoogleJSON.id(message["id"], "a message id")
                if try await known(id) { sawKnown = true; continue }
                if !ids.contains(id) { ids.append(id) }
                if ids.count >= context.configuration.maximumItems { break pageLoop }
            }
            if sawKnown { break }
            pageToken = try GoogleJSON.token(page["nextPageToken"], "nextPageToken")
        } while pageToken != nil && pages < context.configuration.maximumPages
        return (ids, historyID)
    }

    /// Messages added since `start` (with `label`), newest last as the history runs; and the new history id.
    private func history(from start: String, label: String?) async throws(GoogleError) -> ([String], String?) {
        var ids: [String] = []
        var pageToken: String?
        var pages = 0
        var latest: String?
        repeat {
            let url = GoogleHTTP.url("\(base)/history", [
                ("startHistoryId", start), ("historyTypes", "messageAdded"), ("labelId", label), ("maxResults", "500"), ("pageToken", pageToken),
            ])
            let page = try await context.google.json(url, accessToken: context.accessToken, bucket: bucket, units: 2)
            pages += 1
            latest = try Self.historyID(page["historyId"])
            let records = page["history"]?.arrayValue ?? []
            guard records.count <= Self.maximumIDsPerPage else { throw .malformed("a page of \(records.count) history records") }
            for record in records {
                for added in record["messagesAdded"]?.arrayValue?.prefix(Self.maximumIDsPerPage) ?? [] {
                    let id = try GoogleJSON.id(added["message"]?["id"], "a message id")
                    let labelIDs = added["message"]?["labelIds"]?.arrayValue?.compactMap { $0.stringValue } ?? []
                    let wanted = context.account.gmailLabelIds
                    // Labels mean what messages.list's labelIds mean: every one of them.
                    if !wanted.isEmpty, !labelIDs.isEmpty, !wanted.allSatisfy(labelIDs.contains) { continue }
                    if ids.contains(id) { continue }
                    if try await known(id) { continue }
                    ids.append(id)
                }
            }
            pageToken = try GoogleJSON.token(page["nextPageToken"], "nextPageToken")
        } while pageToken != nil && pages < context.configuration.maximumPages && ids.count < context.configuration.maximumItems
        // History runs oldest to newest; `sync` takes the list newest first.
        return (ids.reversed(), latest)
    }

    private func known(_ id: String) async throws(GoogleError) -> Bool {
        do {
            return try await context.entry(.gmail, key: "", item: id) != nil
        } catch {
            throw .bus(error)
        }
    }

    /// Fetches one message raw and submits it to ingest as `gmail-<id>.eml`.
    private func take(_ id: String, outcome: inout SourceOutcome) async throws(GoogleError) {
        let limit = context.configuration.maximumFileBytes
        // base64url is 4/3 of the bytes; the JSON around it is small.
        let response = try await context.google.send(
            GoogleHTTP.url("\(base)/messages/\(GoogleHTTP.escape(id))", [("format", "raw")]), accessToken: context.accessToken,
            bucket: bucket, units: 5, maximumBytes: limit / 3 * 4 + 65_536)
        let message = try GoogleHTTP.object(response.body)
        guard let raw = message["raw"]?.stringValue, let bytes = GoogleOAuth.base64URL(raw) else {
            throw .malformed("message \(id) has no base64url 'raw'")
        }
        let epoch = context.syncer.now.unixMilliseconds
        guard !bytes.isEmpty, bytes.count <= limit else {
            try? await context.saveEntry(.gmail, key: "", item: id, kind: "skipped", recordID: "", version: "too large", epoch: epoch)
            context.syncer.logger.notice("gmail message skipped", metadata: ["bytes": "\(bytes.count)", "limit": "\(limit)"])
            return
        }
        do throws(BusError) {
            let result = try await context.call(
                Ingest.submit, IngestSubmit(fileName: "gmail-\(id).eml", mimeType: "message/rfc822", wait: false), attachment: bytes)
            try await context.saveEntry(.gmail, key: "", item: id, kind: "material", recordID: result.materialId, version: nil, epoch: epoch)
            outcome.added += 1
        } catch where error.code == .invalidArgument {
            // ingest will not take it (no text, a format it refuses): remember it, do not ask again.
            try? await context.saveEntry(.gmail, key: "", item: id, kind: "skipped", recordID: "", version: String(error.message.prefix(200)), epoch: epoch)
        } catch {
            throw .bus(BusError(error.code, "ingest could not take message \(id): \(error.message)"))
        }
    }

    /// A history id: 1...20 decimal digits (an unsigned 64-bit number).
    static func historyID(_ value: JSONValue?) throws(GoogleError) -> String? {
        guard let value, value != .null else { return nil }
        let text: String
        switch value {
        case .string(let string): text = string
        case .int(let number) where number > 0: text = String(number)
        default: throw .malformed("historyId is not a number")
        }
        guard (1...20).contains(text.utf8.count), text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), UInt64(text) != nil else {
            throw .malformed("historyId is not a 64-bit number")
        }
        return text
    }
}
