import Bus
import Contracts
import Wire

/// The `habits.*` methods, mapped to ``HabitBook``.
enum HabitMethods {
    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.createSystem) { scheduler, request, context in
            try await scheduler.write(context, request) { db, user, now in try HabitBook.createSystem(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.updateSystem) { scheduler, request, context in
            try await scheduler.write(context, request) { db, user, now in try HabitBook.updateSystem(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.listSystems) { scheduler, _, context in
            try await scheduler.read(context) { db, user, _ in HabitSystemList(systems: try HabitBook.systems(db, user: user)) }
        }
        handlers.handle(Scheduler.deleteSystem) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, _ in
                try HabitBook.deleteSystem(request.systemId, db, user: user)
                return Empty()
            }
        }
        handlers.handle(Scheduler.createTask) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try HabitBook.createTask(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.updateTask) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try HabitBook.updateTask(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.deleteTask) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, _ in
                try HabitBook.deleteTask(request.taskId, db, user: user)
                return Empty()
            }
        }
        handlers.handle(Scheduler.checkIn) { scheduler, request, context in
            try await scheduler.write(context, request) { db, user, now in try HabitBook.checkIn(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.undoCheckIn) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try HabitBook.undo(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.listCheckIns) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try HabitBook.listCheckIns(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.taskSeries) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try HabitBook.series(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.habitStats) { scheduler, request, context in
            try await scheduler.read(context) { db, user, now in try HabitBook.stats(request, db, user: user, now: now) }
        }
    }
}
