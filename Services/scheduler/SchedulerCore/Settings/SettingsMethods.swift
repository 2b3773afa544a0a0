import Bus
import Contracts
import Wire

/// The `settings.*` methods and `sets.configure`, mapped to ``UserSettings``.
enum SettingsMethods {
    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.getSettings) { scheduler, _, context in
            try await scheduler.read(context) { db, user, now in try UserSettings.load(db, user: user, now: now).record }
        }
        handlers.handle(Scheduler.updateSettings) { scheduler, request, context in
            try await scheduler.writeAffectingReminders(context, request) { db, user, now in try UserSettings.update(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.configureSet) { scheduler, request, context in
            try await scheduler.write(context, request) { db, user, now in try UserSettings.configure(request, db, user: user, now: now) }
        }
    }
}
