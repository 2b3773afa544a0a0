import Bus
import Contracts
import Wire

/// The `habits.*` methods, mapped to ``HabitBook``. Every write goes through ``HabitChanges``
/// (change log, tombstones, `habit.*` events).
enum HabitMethods {
    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.createSystem) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try HabitBook.createSystem(request, changes) }
        }
        handlers.handle(Scheduler.updateSystem) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try HabitBook.updateSystem(request, changes) }
        }
        handlers.handle(Scheduler.listSystems) { scheduler, _, context in
            try await scheduler.read(context) { db, user, _ in HabitSystemList(systems: try HabitBook.systems(db, user: user)) }
        }
        handlers.handle(Scheduler.deleteSystem) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in
                try HabitBook.deleteSystem(request.systemId, changes)
                return Empty()
            }
        }
        handlers.handle(Scheduler.createTask) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try HabitBook.createTask(request, changes) }
        }
        handlers.handle(Scheduler.updateTask) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try HabitBook.updateTask(request, changes) }
        }
        handlers.handle(Scheduler.deleteTask) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in
                try HabitBook.deleteTask(request.taskId, changes)
                return Empty()
            }
        }
        handlers.handle(Scheduler.checkIn) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try HabitBook.checkIn(request, changes) }
        }
        handlers.handle(Scheduler.undoCheckIn) { scheduler, request, context in
            try await scheduler.writeHabits(context, request) { changes in try HabitBook.undo(request, changes) }
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
