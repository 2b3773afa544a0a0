import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Storage

/// Keeps review state in step with store's flashcards: consumes store's durable
/// `flashcard.created` (new card, due now), `flashcard.updated` (set or subject moved) and
/// `flashcard.deleted` (state and log dropped) exactly once, in the same transaction as the
/// cursor.
enum StoreCards {
    static let created = "flashcard.created"
    static let updated = "flashcard.updated"
    static let deleted = "flashcard.deleted"

    /// The fields of store's flashcard events the scheduler needs.
    struct Flashcard: Decodable {
        var id: String
        var userId: String?
        var setId: String?
        var subjectId: String?
    }

    static func consumer(bus: Bus, database: ServiceDatabase, clock: any WallClock, catchUpInterval: Duration, logger: Logger) -> DurableConsumer {
        DurableConsumer(name: "scheduler", bus: bus, database: database, sources: [.init(service: "store", topics: ["flashcard."])],
                        catchUpInterval: catchUpInterval, logger: logger) { event, db in
            guard [created, updated, deleted].contains(event.topic) else { return }
            let card = try WireCoding.decode(Flashcard.self, from: event.payload)
            guard let user = card.userId ?? event.header.user else {
                throw BusError.invalidArgument("\(event.topic) \(card.id) names no user")
            }
            let reference = ReviewCardAdd(cardId: card.id, setId: card.setId, subjectId: card.subjectId)
            switch event.topic {
            case created: _ = try ReviewBook.add([reference], db, user: user, now: clock.now())
            case updated: try ReviewBook.move(reference, db, user: user, now: clock.now())
            default: _ = try ReviewBook.remove([card.id], db, user: user)
            }
        }
    }
}
