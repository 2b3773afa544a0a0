import Bus
import Contracts
import Foundation
import SchedulerCore
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("Weekdays: ISO numbers or day names in, numbers and names out")
struct WeekdayTests {
    @Test("day names and numbers are read alike, and responses carry the names beside the numbers")
    func names() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Strength"))
            let payload = #"{"systemId":"\#(system.id)","name":"Lift","frequency":{"kind":"weekdays","weekdays":["mon","Wednesday",5]}}"#
            let reply = try await world.client.callRaw(service: "scheduler", method: "habits.tasks.create", payload: Data(payload.utf8),
                                                       options: CallOptions(user: "u1"))
            let created = try JSONValue.parse(reply.payload)
            #expect(created["frequency"]?["weekdays"] == .array([.int(1), .int(3), .int(5)]))
            #expect(created["frequency"]?["weekdayNames"] == .array([.string("mon"), .string("wed"), .string("fri")]))
            let task = try #require(try await world.call(Scheduler.listSystems, Empty()).systems[0].tasks.first)
            #expect(task.frequency == .on([1, 3, 5]) && task.frequency.weekdayNames == ["mon", "wed", "fri"])
            #expect(HabitFrequency.daily.weekdayNames == nil)
        }
    }

    @Test("an unknown day name is INVALID_ARGUMENT naming frequency.weekdays; 0 and 8 are refused by number")
    func badNames() async throws {
        try await withWorld(SchedulerWorld.start()) { world in
            let system = try await world.call(Scheduler.createSystem, HabitSystemCreate(name: "Strength"))
            let payload = #"{"systemId":"\#(system.id)","name":"Lift","frequency":{"kind":"weekdays","weekdays":["mon","funday"]}}"#
            let error = await #expect(throws: BusError.self) {
                _ = try await world.client.callRaw(service: "scheduler", method: "habits.tasks.create", payload: Data(payload.utf8),
                                                   options: CallOptions(user: "u1"))
            }
            #expect(error?.code == .invalidArgument && error?.message.contains("frequency.weekdays") == true && error?.message.contains("mon") == true)
            let zero = await world.failure(Scheduler.createTask, HabitTaskCreate(systemId: system.id, name: "Lift", frequency: .on([0])))
            #expect(zero?.isInvalid("frequency.weekdays") == true && zero?.message.contains("1 (Monday) to 7 (Sunday)") == true)
            #expect(ISOWeekday.number("SUN") == 7 && ISOWeekday.number("sunday") == 7 && ISOWeekday.number("so") == nil && ISOWeekday.name(1) == "mon")
        }
    }
}
