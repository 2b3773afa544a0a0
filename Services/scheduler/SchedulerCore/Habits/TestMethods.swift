import Bus
import Contracts
import Wire

/// The `tests.*` methods (performance tests), mapped to ``TestBook``.
enum TestMethods {
    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.createTest) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try TestBook.create(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.recordTest) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try TestBook.record(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.updateTest) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try TestBook.update(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.deleteTestEntry) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try TestBook.deleteEntry(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.listTests) { scheduler, _, context in
            try await scheduler.read(context) { db, user, _ in PerformanceTestList(tests: try TestBook.list(db, user: user)) }
        }
        handlers.handle(Scheduler.dueTests) { scheduler, _, context in
            try await scheduler.read(context) { db, user, now in PerformanceTestList(tests: try TestBook.due(db, user: user, now: now)) }
        }
        handlers.handle(Scheduler.deleteTest) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, _ in
                try TestBook.delete(request.testId, db, user: user)
                return Empty()
            }
        }
    }
}
