import Bus
import Contracts
import Wire

/// The `cards.*`, `review.*` and `stats.*` methods, mapped to ``ReviewBook``.
enum ReviewMethods {
    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.addCards) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in
                CardsAddResponse(added: try ReviewBook.add(request.cards, db, user: user, now: now))
            }
        }
        handlers.handle(Scheduler.removeCards) { scheduler, request, context in
            try await scheduler.write(context, request) { db, user, _ in CardsRemoveResponse(removed: try ReviewBook.remove(request.cardIds, db, user: user)) }
        }
        handlers.handle(Scheduler.cardState) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try ReviewBook.state(cardId: request.cardId, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.recordReview) { scheduler, request, context in
            try await scheduler.write(context, request) { [tally = scheduler.studyTally] db, user, now in
                try ReviewBook.record(request, db, user: user, now: now, tally: tally)
            }
        }
        handlers.handle(Scheduler.undoReview) { scheduler, request, context in
            try await scheduler.write(context, request) { [tally = scheduler.studyTally] db, user, now in
                try ReviewBook.undo(cardId: request.cardId, db, user: user, now: now, tally: tally)
            }
        }
        handlers.handle(Scheduler.dueCards) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try ReviewBook.due(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.forecast) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try ReviewBook.forecast(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.studyStreak) { scheduler, _, context in
            try await scheduler.read(context) { db, user, now in try ReviewBook.streak(db, user: user, now: now) }
        }
        handlers.handle(Scheduler.reviewCount) { scheduler, request, context in
            try await scheduler.read(context) { db, user, _ in try ReviewBook.count(request, db, user: user) }
        }
        handlers.handle(Scheduler.reviewHistory) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try ReviewBook.history(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.importReviews) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { [tally = scheduler.studyTally] db, user, now in
                try ReviewBook.importReviews(request, db, user: user, now: now, tally: tally)
            }
        }
        handlers.handle(Scheduler.setStatistics) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try ReviewBook.setStatistics(setId: request.setId, db, user: user, now: now) }
        }
    }
}
