import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// `notify.send`, a notification from any service for the caller's user, and `notify.ack`, which
/// stops a timer's alarm or marks a notification read. Another user's notification is NOT_FOUND.
struct NotificationMethods: Sendable {
    let database: ServiceDatabase
    let clock: any WallClock
    let dispatcher: Dispatcher

    static func register(_ handlers: Handlers<NotifierService>) {
        handlers.handle(Notifier.send) { service, request, context in try await service.notifications.send(request, context) }
        handlers.handle(Notifier.ack) { service, request, context in try await service.notifications.ack(request, user: try context.requireUser()) }
    }

    func send(_ request: SendNotificationRequest, _ context: RequestContext) async throws -> NotificationRecord {
        let user = try context.requireUser()
        let title = try Field.text(request.title, "title", maximum: 200, trimming: true)
        try Field.length(request.body, "body", maximum: 4000)
        let kind = request.kind ?? .message
        // Alarms and system notices are the notifier's own.
        _ = try Field.oneOf(kind.rawValue, "kind", [NotificationKind.reminder, .material, .message].map(\.rawValue))
        let priority = try Field.int(request.priority, "priority", in: 1...5, default: 3)
        if let url = request.url { try Field.httpURL(url, "url") }
        let tags = request.tags ?? []
        try Field.count(tags, "tags", in: 0...5)
        for (index, tag) in tags.enumerated() {
            guard !tag.isEmpty else { throw Field.invalid("tags[\(index)]", "must not be empty") }
            try Field.length(tag, "tags[\(index)]", maximum: 40)
        }
        let now = clock.now().unixMilliseconds
        let key = try Idempotency.Key(context.idempotencyKey, method: context.method, request: request)
        let record = try await database.pool.write { db in
            try Idempotency.once(db, user: user, key: key) {
                let id = "send-\(UUID().uuidString.lowercased())_0"
                try NotificationWrites.insert(db, NewNotification(
                    id: id, userId: user, kind: kind, title: title, body: request.body, url: request.url, tags: tags, priority: priority,
                    urgent: request.urgent ?? false, sourceEventId: nil, notBefore: max(now, request.deliverAt?.unixMilliseconds ?? now)), now: now)
                return NotificationRecord(row: try Row.fetchOne(db, sql: "SELECT * FROM notification WHERE id = ?", arguments: [id])!)
            }
        }
        dispatcher.wake()
        return record
    }

    func ack(_ request: AckRequest, user: String) async throws -> AckResponse {
        let now = clock.now().unixMilliseconds
        switch (request.timerId, request.notificationId) {
        case (let timerId?, nil):
            return AckResponse(cancelled: try await database.pool.write { db in
                try NotificationWrites.cancelTimer(db, timerId: timerId, userId: user, now: now)
            })
        case (nil, let notificationId?):
            try await database.pool.write { db in
                try db.execute(sql: "UPDATE notification SET read_at = COALESCE(read_at, ?), updated_at = ? WHERE id = ? AND user_id = ?",
                               arguments: [now, now, notificationId, user])
                if db.changesCount == 0 { throw BusError.notFound("notification \(notificationId) not found") }
            }
            return AckResponse(cancelled: 0)
        default:
            throw Field.invalid("timerId", "or 'notificationId' is required, exactly one of them")
        }
    }
}
