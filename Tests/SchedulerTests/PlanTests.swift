import Bus
import Contracts
import Foundation
import SchedulerCore
import ServiceKit
import TestSupport
import Testing
import Wire

/// What Reference/parse_ics.py reports of a calendar parsed by the `icalendar` package.
struct ParsedCalendar: Decodable {
    struct Event: Decodable {
        var uid, start, end, summary, description: String
    }
    var version, prodid, name: String
    var events: [Event]
}

@Suite("Study plans and their calendar")
struct PlanTests {
    @Test("plan.create spreads a set's new cards until the target date, keeping the daily workload level")
    func levelledPlan() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T09:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "Europe/Rome"))
            // Ten older cards are overdue today; 40 new cards in set "bio".
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (1...10).map { ReviewCardAdd(cardId: "old\($0)", setId: "old") }))
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (1...40).map { ReviewCardAdd(cardId: "bio\($0)", setId: "bio") }))
            let plan = try await world.call(Scheduler.createPlan, PlanCreateRequest(setId: "bio", targetDate: "2026-12-05", sessionTime: "18:30", title: "Biology exam"))
            #expect(plan.days.count == 14 && plan.days.first?.date == "2026-11-22" && plan.days.last?.date == "2026-12-05")
            #expect(plan.newCards == 40 && plan.days.reduce(0) { $0 + $1.newCards } == 40)
            let loads = plan.days.map { $0.newCards + $0.expectedReviews }
            // Today already has 10 overdue reviews: it gets the fewest new cards; the other days stay
            // within a few reviews of each other (an even 40/14 split would load today with 13).
            #expect(plan.days[0].expectedReviews == 10 && plan.days.dropFirst().allSatisfy { $0.newCards >= plan.days[0].newCards })
            #expect(loads[0] <= 11 && loads.dropFirst().max()! - loads.dropFirst().min()! <= 4, "daily loads \(loads)")
            #expect(plan.days[0].sessionStart == instant("2026-11-22T17:30:00Z"))  // 18:30 in Rome
            // New cards now wait for their session: none of "bio" is due before 18:30 today.
            let dueNow = try await world.call(Scheduler.dueCards, DueRequest(setId: "bio"))
            #expect(dueNow.cards.isEmpty)
            world.clock.set(instant("2026-11-22T17:30:00Z"))
            #expect(try await world.call(Scheduler.dueCards, DueRequest(setId: "bio")).cards.count == plan.days[0].newCards)
            #expect(try await world.call(Scheduler.getPlan, StudyPlanID(planId: plan.id)) == plan)
            let late = await world.failure(Scheduler.createPlan, PlanCreateRequest(setId: "bio", targetDate: "2026-11-21"))
            #expect(late?.isInvalid("targetDate") == true)
        }
    }

    @Test("plan.ics is an RFC 5545 calendar that the icalendar package parses: one session per day with work, in UTC")
    func calendarFile() async throws {
        try await withWorld(SchedulerWorld.start(at: instant("2026-11-22T09:00:00Z"))) { world in
            try await world.settings(SettingsUpdate(timeZone: "America/New_York"))
            _ = try await world.call(Scheduler.addCards, CardsAddRequest(cards: (1...12).map { ReviewCardAdd(cardId: "c\($0)", setId: "hist") }))
            let title = "History: wars, treaties; and the long peace — a title long enough to need folding past 75 octets"
            let plan = try await world.call(Scheduler.createPlan, PlanCreateRequest(setId: "hist", targetDate: "2026-11-28", sessionTime: "07:15",
                                                                                    sessionMinutes: 45, title: title))
            let (calendar, attachment) = try await world.client.callWithAttachment(Scheduler.planCalendar, StudyPlanID(planId: plan.id),
                                                                                    options: CallOptions(user: "u1"))
            let file = try #require(attachment)
            #expect(calendar.contentType.hasPrefix("text/calendar") && calendar.fileName.hasSuffix(".ics"))
            let text = String(decoding: file, as: UTF8.self)
            #expect(text.hasPrefix("BEGIN:VCALENDAR\r\n") && text.hasSuffix("END:VCALENDAR\r\n"))
            #expect(text.split(separator: "\r\n").allSatisfy { $0.utf8.count <= 75 })
            let parsed = try JSONDecoder().decode(ParsedCalendar.self, from: try await runPython([ReferenceRun.scriptPath("parse_ics.py")], input: file))
            #expect(parsed.version == "2.0" && parsed.name.hasPrefix("History: wars\\, treaties\\;"))
            let working = plan.days.filter { $0.newCards + $0.expectedReviews > 0 }
            #expect(parsed.events.count == working.count && calendar.events == working.count)
            let first = try #require(parsed.events.first)
            #expect(first.start == "2026-11-22T12:15:00+00:00" && first.end == "2026-11-22T13:00:00+00:00")  // 07:15 EST, 45 minutes
            #expect(first.summary == "Study: " + title && first.description.contains("new card"))
            #expect(Set(parsed.events.map(\.uid)).count == parsed.events.count)
            let other = await world.failure(Scheduler.planCalendar, StudyPlanID(planId: plan.id), user: "u2")
            #expect(other?.code == .notFound)
        }
    }
}
