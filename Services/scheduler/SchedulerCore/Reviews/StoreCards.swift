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
        var routes = EventRoutes()
        routes.on(Store.flashcardCreated) { card, _, db in
            _ = try ReviewBook.add([reference(card)], db, user: card.userId, now: clock.now())
        }
        routes.on(Store.flashcardUpdated) { card, _, db in
            try ReviewBook.move(reference(card), db, user: card.userId, now: clock.now())
        }
        routes.on(Store.flashcardDeleted) { card, _, db in
            _ = try ReviewBook.remove([card.id], db, user: card.userId)
        }
        return DurableConsumer(name: "scheduler", bus: bus, database: database, routes: routes, catchUpInterval: catchUpInterval, logger: logger)
    }

    private static func reference(_ card: Flashcard) -> ReviewCardAdd {
        ReviewCardAdd(cardId: card.id, setId: card.setId, subjectId: card.subjectId)
    }
}
