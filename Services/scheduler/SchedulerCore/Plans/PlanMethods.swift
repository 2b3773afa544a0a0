import Bus
import Contracts
import Foundation
import Wire

/// The `plan.*` methods, mapped to ``PlanBook`` and ``ICalendar``.
enum PlanMethods {
    static func register(_ handlers: Handlers<SchedulerService>) {
        handlers.handle(Scheduler.createPlan) { scheduler, request, context in
            try await scheduler.write(context, request) { db, user, now in try PlanBook.create(request, db, user: user, now: now) }
        }
        handlers.handle(Scheduler.getPlan) { scheduler, request, context in
            try await scheduler.read(context) { db, user, _ in try PlanBook.get(request.planId, db, user: user) }
        }
        handlers.handle(Scheduler.planCalendar, withAttachment: { scheduler, request, context in
            let plan = try await scheduler.read(context) { db, user, _ in try PlanBook.get(request.planId, db, user: user) }
            let calendar = PlanCalendar(planId: plan.id, contentType: "text/calendar; charset=utf-8", fileName: "study-plan-\(plan.id).ics",
                                        events: ICalendar.eventCount(plan))
            return (calendar, Data(ICalendar.document(for: plan).utf8))
        })
    }
}
