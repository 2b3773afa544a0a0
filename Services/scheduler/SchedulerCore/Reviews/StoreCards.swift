import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Storage
import Wire

/// Keeps review state in step with store's flashcards: consumes store's durable
/// `flashcard.created` (new card, due now), `flashcard.updated` (set or subject moved) and
/// `flashcard.deleted` (state and log dropped) exactly once, in the same transaction as the
/// cursor.
enum StoreCards {
    static func consumer(bus: Bus, database: ServiceDatabase, clock: any WallClock, catchUpInterval: Duration, logger: Logger) -> DurableConsumer {
        DurableConsumer(name: "scheduler", bus: bus, database: database, sources: [.init(service: StoreContract.serviceName, topics: ["flashcard."])],
                        catchUpInterval: catchUpInterval, logger: logger) { event, db in
            switch event.topic {
            case Store.flashcardCreated.name:
                let card = try event.decode(Store.flashcardCreated)
                _ = try ReviewBook.add([reference(card)], db, user: card.userId, now: clock.now())
            case Store.flashcardUpdated.name:
                let card = try event.decode(Store.flashcardUpdated)
                try ReviewBook.move(reference(card), db, user: card.userId, now: clock.now())
            case Store.flashcardDeleted.name:
                let card = try event.decode(Store.flashcardDeleted)
                _ = try ReviewBook.remove([card.id], db, user: card.userId)
            default:
                return
            }
        }
    }

    private static func reference(_ card: Flashcard) -> ReviewCardAdd {
        ReviewCardAdd(cardId: card.id, setId: card.setId, subjectId: card.subjectId)
    }
}
