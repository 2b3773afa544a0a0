import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Storage

/// Keeps review state in step with store's flashcards: consumes store's durable
/// `flashcard.created` (new card, due now) and `flashcard.deleted` (state and log dropped)
/// exactly once, in the same transaction as the cursor.
enum StoreCards {
    static let created = "flashcard.created"
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
            guard event.topic == created || event.topic == deleted else { return }
            let card = try WireCoding.decode(Flashcard.self, from: event.payload)
            guard let user = card.userId ?? event.header.user else {
                throw BusError.invalidArgument("\(event.topic) \(card.id) names no user")
            }
            if event.topic == created {
                _ = try ReviewBook.add([ReviewCardAdd(cardId: card.id, setId: card.setId, subjectId: card.subjectId)], db, user: user, now: clock.now())
            } else {
                _ = try ReviewBook.remove([card.id], db, user: user)
            }
        }
    }
}
