import Bus
import Contracts
import Wire

extension SchedulerService {
    func registerHabits() {
        host.handle(Scheduler.createSystem) { [self] request, context in
            try await write(context) { db, user, now in try HabitBook.createSystem(request, db, user: user, now: now) }
        }
        host.handle(Scheduler.listSystems) { [self] _, context in
            try await read(context) { db, user, _ in HabitSystemList(systems: try HabitBook.systems(db, user: user)) }
        }
        host.handle(Scheduler.deleteSystem) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, _ in try HabitBook.deleteSystem(request.systemId, db, user: user); return Empty() }
        }
        host.handle(Scheduler.createTask) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, now in try HabitBook.createTask(request, db, user: user, now: now) }
        }
        host.handle(Scheduler.updateTask) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, now in try HabitBook.updateTask(request, db, user: user, now: now) }
        }
        host.handle(Scheduler.deleteTask) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, _ in try HabitBook.deleteTask(request.taskId, db, user: user); return Empty() }
        }
        host.handle(Scheduler.checkIn) { [self] request, context in
            try await write(context) { db, user, now in try HabitBook.checkIn(request, db, user: user, now: now) }
        }
        host.handle(Scheduler.undoCheckIn) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, now in try HabitBook.undo(request, db, user: user, now: now) }
        }
        host.handle(Scheduler.habitStats) { [self] request, context in
            try await read(context) { db, user, now in try HabitBook.stats(request, db, user: user, now: now) }
        }
    }

    func registerTests() {
        host.handle(Scheduler.createTest) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, now in try TestBook.create(request, db, user: user, now: now) }
        }
        host.handle(Scheduler.recordTest) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, now in try TestBook.record(request, db, user: user, now: now) }
        }
        host.handle(Scheduler.listTests) { [self] _, context in
            try await read(context) { db, user, _ in PerformanceTestList(tests: try TestBook.list(db, user: user)) }
        }
        host.handle(Scheduler.dueTests) { [self] _, context in
            try await read(context) { db, user, now in PerformanceTestList(tests: try TestBook.due(db, user: user, now: now)) }
        }
        host.handle(Scheduler.deleteTest) { [self] request, context in
            try await writeAffectingReminders(context) { db, user, _ in try TestBook.delete(request.testId, db, user: user); return Empty() }
        }
    }
}
