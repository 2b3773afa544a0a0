import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// `inbox.list` and `inbox.markRead`: the caller's released notifications, unread first.
struct InboxMethods: Sendable {
    let database: ServiceDatabase
    let clock: any WallClock

    static func register(_ handlers: Handlers<NotifierService>) {
        handlers.handle(Notifier.inboxList) { service, request, context in try await service.inbox.list(request, user: try context.requireUser()) }
        handlers.handle(Notifier.inboxMarkRead) { service, request, context in
            try await service.inbox.markRead(request, user: try context.requireUser())
        }
    }

    func list(_ request: InboxListRequest, user: String) async throws -> InboxPage {
        let limit = try Field.int(request.limit, "limit", in: 1...100, default: 20)
        var filter = "user_id = ? AND state = 'released'"
        var arguments: [DatabaseValue] = [user.databaseValue]
        if request.unreadOnly == true { filter += " AND read_at IS NULL" }
        if let token = request.pageToken {
            let key = try PageToken.decode(token, count: 3)
            guard let read = key[0].intValue, let released = key[1].intValue, let seq = key[2].intValue else { throw PageToken.invalid }
            filter += " AND ((read_at IS NOT NULL) > ? OR ((read_at IS NOT NULL) = ? AND (released_at < ? OR (released_at = ? AND seq < ?))))"
            arguments += [read, read, released, released, seq].map(\.databaseValue)
        }
        let sql = """
            SELECT *, (read_at IS NOT NULL) AS is_read FROM notification WHERE \(filter)
            ORDER BY (read_at IS NOT NULL), released_at DESC, seq DESC LIMIT ?
            """
        let values = arguments + [(limit + 1).databaseValue]
        let (rows, unread) = try await database.pool.read { db in
            (try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { row in
                (record: NotificationRecord(row: row), key: [JSONValue.int(row["is_read"]), .int(row["released_at"]), .int(row["seq"])])
            },
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification WHERE user_id = ? AND state = 'released' AND read_at IS NULL",
                              arguments: [user]) ?? 0)
        }
        let page = Array(rows.prefix(limit))
        let next = rows.count > limit ? page.last.map { PageToken.encode($0.key) } : nil
        return InboxPage(items: page.map(\.record), nextPageToken: next, unreadCount: unread)
    }

    func markRead(_ request: MarkReadRequest, user: String) async throws -> MarkReadResponse {
        let now = clock.now().unixMilliseconds
        return try await database.pool.write { db in
            if request.all == true {
                try db.execute(sql: "UPDATE notification SET read_at = ?, updated_at = ? WHERE user_id = ? AND state = 'released' AND read_at IS NULL",
                               arguments: [now, now, user])
            } else if let ids = request.ids, !ids.isEmpty {
                try Field.count(ids, "ids", in: 1...100)
                try db.execute(sql: """
                    UPDATE notification SET read_at = ?, updated_at = ?
                    WHERE user_id = ? AND state = 'released' AND read_at IS NULL AND id IN (\(DeliveryStore.placeholders(ids.count)))
                    """, arguments: [now, now, user] + StatementArguments(ids))
            } else {
                throw Field.invalid("ids", "must hold 1 to 100 ids, or 'all' must be true")
            }
            let updated = db.changesCount
            let unread = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification WHERE user_id = ? AND state = 'released' AND read_at IS NULL",
                                          arguments: [user]) ?? 0
            return MarkReadResponse(updated: updated, unreadCount: unread)
        }
    }
}
