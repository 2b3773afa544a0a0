import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import Storage
import Wire

/// `deliveries.list`: the caller's deliveries, newest first, with how their attempts went.
struct DeliveryMethods: Sendable {
    let database: ServiceDatabase

    static func register(_ handlers: Handlers<NotifierService>) {
        handlers.handle(Notifier.deliveriesList) { service, request, context in
            try await service.deliveries.list(request, user: try context.requireUser())
        }
    }

    func list(_ request: DeliveriesListRequest, user: String) async throws -> DeliveryPage {
        let limit = try Field.int(request.limit, "limit", in: 1...200, default: 50)
        var filter = "user_id = ?"
        var arguments: [DatabaseValue] = [user.databaseValue]
        if let notificationId = request.notificationId {
            filter += " AND notification_id = ?"
            arguments.append(notificationId.databaseValue)
        }
        if let state = request.state {
            filter += " AND state = ?"
            arguments.append(state.rawValue.databaseValue)
        }
        if let token = request.pageToken {
            guard let seq = try PageToken.decode(token, count: 1)[0].intValue else { throw PageToken.invalid }
            filter += " AND seq < ?"
            arguments.append(seq.databaseValue)
        }
        let sql = "SELECT * FROM delivery WHERE \(filter) ORDER BY seq DESC LIMIT ?"
        let values = arguments + [(limit + 1).databaseValue]
        let rows = try await database.pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { (delivery: Delivery(row: $0), seq: $0["seq"] as Int64) }
        }
        let page = Array(rows.prefix(limit))
        let next = rows.count > limit ? page.last.map { PageToken.encode([.int($0.seq)]) } : nil
        return DeliveryPage(deliveries: page.map(\.delivery), nextPageToken: next)
    }
}
