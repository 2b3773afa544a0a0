import Bus
import Contracts
import Wire

/// The `tests.*` methods (performance tests), mapped to ``TestBook``. Every write goes through
/// ``HabitChanges`` (change log, tombstones, `habit.*` events).
enum TestMethods {
    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.createTest) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try TestBook.create(request, changes) }
        }
        handlers.handle(Scheduler.recordTest) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try TestBook.record(request, changes) }
        }
        handlers.handle(Scheduler.updateTest) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try TestBook.update(request, changes) }
        }
        handlers.handle(Scheduler.deleteTestEntry) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try TestBook.deleteEntry(request, changes) }
        }
        handlers.handle(Scheduler.listTests) { scheduler, _, context in
            try await scheduler.read(context) { db, user, _ in PerformanceTestList(tests: try TestBook.list(db, user: user)) }
        }
        handlers.handle(Scheduler.dueTests) { scheduler, _, context in
            try await scheduler.read(context) { db, user, now in PerformanceTestList(tests: try TestBook.due(db, user: user, now: now)) }
        }
        handlers.handle(Scheduler.deleteTest) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in
                try TestBook.delete(request.testId, changes)
                return Empty()
            }
        }
    }
}
