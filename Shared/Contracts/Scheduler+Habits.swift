import Foundation
import Wire

// Payloads of the scheduler's habit methods (`habits.*`).

/// How often a task is scheduled.
public enum FrequencyKind: String, WireEnum {
    case daily, weekdays
}

/// ISO 8601 weekdays: 1 Monday … 7 Sunday (not `Calendar`'s 1 = Sunday), and their names.
public enum ISOWeekday {
    /// The names, Monday first: `names[n - 1]` is weekday `n`'s.
    public static let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let fullNames = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// The name of ISO weekday `number` (`mon` for 1), nil outside 1...7.
    public static func name(_ number: Int) -> String? {
        (1...7).contains(number) ? names[number - 1] : nil
    }

    /// The ISO number of a day name, `mon` or `monday` in any case; nil for anything else.
    public static func number(_ name: String) -> Int? {
        let lowered = name.lowercased()
        return (names.firstIndex(of: lowered) ?? fullNames.firstIndex(of: lowered)).map { $0 + 1 }
    }
}

/// A task's frequency: every day, or specific ISO weekdays (1 Monday … 7 Sunday).
///
/// `weekdays` reads numbers or day names (`[1, 3]` and `["mon", "wed"]` are the same) and is
/// written as numbers; `weekdayNames` is written beside them so a client that counts from
/// Sunday sees its mistake instead of shifting a habit by a day. It is ignored on input.
public struct HabitFrequency: Codable, Sendable, Equatable {
    public var kind: FrequencyKind
    /// For `weekdays`: ISO 1..7 (or names on input), at least one.
    public var weekdays: [Int]?
    /// The names of `weekdays` (`mon` … `sun`), in the same order; nil when there are none.
    public var weekdayNames: [String]?
    public init(kind: FrequencyKind, weekdays: [Int]? = nil) {
        self.kind = kind
        self.weekdays = weekdays
        weekdayNames = weekdays.map { $0.compactMap(ISOWeekday.name) }
    }
    /// Every day.
    public static let daily = HabitFrequency(kind: .daily)
    /// On the given ISO weekdays.
    public static func on(_ weekdays: [Int]) -> HabitFrequency { HabitFrequency(kind: .weekdays, weekdays: weekdays) }

    private enum CodingKeys: String, CodingKey {
        case kind, weekdays, weekdayNames
    }

    /// Reads `weekdays` as numbers or day names; `weekdayNames` is derived, not read.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        _ = try container.decodeIfPresent([String].self, forKey: .weekdayNames)
        self.init(kind: try container.decode(FrequencyKind.self, forKey: .kind),
                  weekdays: try container.decodeIfPresent([WeekdayInput].self, forKey: .weekdays)?.map(\.number))
    }

    /// One element of `weekdays` on input: an ISO number (checked by the method) or a day name.
    private struct WeekdayInput: Decodable {
        var number: Int
        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if let number = try? value.decode(Int.self) {
                self.number = number
            } else if let name = try? value.decode(String.self), let number = ISOWeekday.number(name) {
                self.number = number
            } else {
                throw DecodingError.dataCorruptedError(
                    in: value, debugDescription: "expected an ISO weekday 1 (Monday) to 7 (Sunday) or a day name mon, tue, wed, thu, fri, sat, sun")
            }
        }
    }
}

/// `habits.systems.create`.
public struct HabitSystemCreate: Codable, Sendable, Equatable {
    /// The new record's id, chosen by the client (offline-first apps): a UUID, in any case
    /// (kept in lower case). Absent: the scheduler makes one.
    public var id: String?
    /// 1..200 characters.
    public var name: String
    /// The identity the system builds ("I am a runner"), up to 500 characters.
    public var identity: String?
    /// Up to 100 characters.
    public var category: String?
    public init(name: String, identity: String? = nil, category: String? = nil, id: String? = nil) {
        self.id = id
        self.name = name
        self.identity = identity
        self.category = category
    }
}

/// `habits.systems.update`: replaces the editable fields (an absent identity or category clears it).
public struct HabitSystemUpdate: Codable, Sendable, Equatable {
    public var systemId: String
    /// 1..200 characters.
    public var name: String
    /// Up to 500 characters.
    public var identity: String?
    /// Up to 100 characters.
    public var category: String?
    public init(systemId: String, name: String, identity: String? = nil, category: String? = nil) {
        self.systemId = systemId
        self.name = name
        self.identity = identity
        self.category = category
    }
}

/// A system id.
public struct HabitSystemID: Codable, Sendable, Equatable {
    public var systemId: String
    public init(systemId: String) { self.systemId = systemId }
}

/// A task id.
public struct HabitTaskID: Codable, Sendable, Equatable {
    public var taskId: String
    public init(taskId: String) { self.taskId = taskId }
}

/// A habit system with its tasks.
public struct HabitSystem: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var name: String
    public var identity: String?
    public var category: String?
    public var tasks: [HabitTask]
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, name: String, identity: String?, category: String?, tasks: [HabitTask], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.name = name
        self.identity = identity
        self.category = category
        self.tasks = tasks
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `habits.systems.list` response.
public struct HabitSystemList: Codable, Sendable, Equatable {
    public var systems: [HabitSystem]
    public init(systems: [HabitSystem]) { self.systems = systems }
}

/// The four laws of behaviour change, each optional (up to 500 characters).
public struct FourLaws: Codable, Sendable, Equatable {
    /// Make it obvious.
    public var cue: String?
    /// Make it attractive.
    public var attractiveness: String?
    /// Make it easy.
    public var ease: String?
    /// Make it satisfying.
    public var reward: String?
    public init(cue: String? = nil, attractiveness: String? = nil, ease: String? = nil, reward: String? = nil) {
        self.cue = cue
        self.attractiveness = attractiveness
        self.ease = ease
        self.reward = reward
    }
}

/// `habits.tasks.create`.
public struct HabitTaskCreate: Codable, Sendable, Equatable {
    /// The new record's id, chosen by the client (offline-first apps): a UUID, in any case
    /// (kept in lower case). Absent: the scheduler makes one.
    public var id: String?
    public var systemId: String
    /// 1..200 characters.
    public var name: String
    /// What doing the task means ("run at least 5 km"), up to 1000 characters.
    public var description: String?
    public var frequency: HabitFrequency
    public var laws: FourLaws?
    /// Local reminder time `HH:MM`; null for none.
    public var reminderTime: String?
    public init(
        systemId: String, name: String, frequency: HabitFrequency, laws: FourLaws? = nil, reminderTime: String? = nil, description: String? = nil,
        id: String? = nil
    ) {
        self.id = id
        self.systemId = systemId
        self.name = name
        self.description = description
        self.frequency = frequency
        self.laws = laws
        self.reminderTime = reminderTime
    }
}

/// `habits.tasks.update`: replaces the editable fields.
public struct HabitTaskUpdate: Codable, Sendable, Equatable {
    public var taskId: String
    public var name: String
    /// Up to 1000 characters; absent clears it.
    public var description: String?
    public var frequency: HabitFrequency
    public var laws: FourLaws?
    public var reminderTime: String?
    public init(
        taskId: String, name: String, frequency: HabitFrequency, laws: FourLaws? = nil, reminderTime: String? = nil, description: String? = nil
    ) {
        self.taskId = taskId
        self.name = name
        self.description = description
        self.frequency = frequency
        self.laws = laws
        self.reminderTime = reminderTime
    }
}

/// A habit task.
public struct HabitTask: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var systemId: String
    public var name: String
    /// What doing the task means; null when not given.
    public var description: String?
    public var frequency: HabitFrequency
    public var laws: FourLaws
    public var reminderTime: String?
    public var createdAt: Date
    public var updatedAt: Date
    public init(
        id: String, userId: String, systemId: String, name: String, frequency: HabitFrequency, laws: FourLaws, reminderTime: String?,
        createdAt: Date, updatedAt: Date, description: String? = nil
    ) {
        self.id = id
        self.userId = userId
        self.systemId = systemId
        self.name = name
        self.description = description
        self.frequency = frequency
        self.laws = laws
        self.reminderTime = reminderTime
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `habits.checkIn`.
public struct CheckInRequest: Codable, Sendable, Equatable {
    /// The check-in's id when it is new, chosen by the client: a UUID (kept in lower case).
    /// Absent: the scheduler makes one. A repeat for a day already checked in keeps that id.
    public var id: String?
    public var taskId: String
    /// Local date `YYYY-MM-DD`, not after the user's today.
    public var date: String
    /// Up to 1000 characters.
    public var note: String?
    public init(taskId: String, date: String, note: String? = nil, id: String? = nil) {
        self.id = id
        self.taskId = taskId
        self.date = date
        self.note = note
    }
}

/// `habits.undo`.
public struct CheckInUndoRequest: Codable, Sendable, Equatable {
    public var taskId: String
    public var date: String
    public init(taskId: String, date: String) {
        self.taskId = taskId
        self.date = date
    }
}

/// A check-in.
public struct CheckIn: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var taskId: String
    public var date: String
    public var note: String?
    public var createdAt: Date
    public var updatedAt: Date
    public init(id: String, userId: String, taskId: String, date: String, note: String?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.userId = userId
        self.taskId = taskId
        self.date = date
        self.note = note
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A range of local dates, `YYYY-MM-DD`, both included, at most 366 days.
/// `to` defaults to the user's today, `from` to 29 days before `to`.
public struct CheckInListRequest: Codable, Sendable, Equatable {
    public var from: String?
    public var to: String?
    /// Only this task's check-ins.
    public var taskId: String?
    /// Only the check-ins of this system's tasks.
    public var systemId: String?
    public init(from: String? = nil, to: String? = nil, taskId: String? = nil, systemId: String? = nil) {
        self.from = from
        self.to = to
        self.taskId = taskId
        self.systemId = systemId
    }
}

/// `habits.checkIns.list` response: the check-ins by date, then task.
public struct CheckInList: Codable, Sendable, Equatable {
    public var from: String
    public var to: String
    /// The user's zone, whose local dates these are.
    public var timeZone: String
    public var checkIns: [CheckIn]
    public init(from: String, to: String, timeZone: String, checkIns: [CheckIn]) {
        self.from = from
        self.to = to
        self.timeZone = timeZone
        self.checkIns = checkIns
    }
}

/// `habits.tasks.series`: one task over a range of local dates (as `habits.checkIns.list`).
public struct TaskSeriesRequest: Codable, Sendable, Equatable {
    public var taskId: String
    public var from: String?
    public var to: String?
    public init(taskId: String, from: String? = nil, to: String? = nil) {
        self.taskId = taskId
        self.from = from
        self.to = to
    }
}

/// One local day of a task.
public struct TaskDay: Codable, Sendable, Equatable {
    /// `YYYY-MM-DD`.
    public var date: String
    /// ISO weekday name, `mon` … `sun`.
    public var weekday: String
    /// Whether the task was due that day (never before it existed or its first check-in).
    public var scheduled: Bool
    /// Whether it was checked in that day (on an unscheduled day too).
    public var done: Bool
    public init(date: String, weekday: String, scheduled: Bool, done: Bool) {
        self.date = date
        self.weekday = weekday
        self.scheduled = scheduled
        self.done = done
    }
}

/// `habits.tasks.series` response: every day of the range, oldest first.
public struct TaskSeries: Codable, Sendable, Equatable {
    public var taskId: String
    public var from: String
    public var to: String
    public var timeZone: String
    public var days: [TaskDay]
    /// Over the range: scheduled days and the ones done.
    public var completion: CompletionRate
    public init(taskId: String, from: String, to: String, timeZone: String, days: [TaskDay], completion: CompletionRate) {
        self.taskId = taskId
        self.from = from
        self.to = to
        self.timeZone = timeZone
        self.days = days
        self.completion = completion
    }
}

/// Completion over a window: scheduled days and the ones checked in.
public struct CompletionRate: Codable, Sendable, Equatable {
    public var scheduled: Int
    public var completed: Int
    /// completed / scheduled, or null when nothing was scheduled.
    public var rate: Double?
    public init(scheduled: Int, completed: Int) {
        self.scheduled = scheduled
        self.completed = completed
        self.rate = scheduled == 0 ? nil : Double(completed) / Double(scheduled)
    }
}

/// A task's streaks and completion.
public struct HabitTaskStats: Codable, Sendable, Equatable {
    public var taskId: String
    public var name: String
    /// Consecutive scheduled days checked in, ending today (or the last scheduled day before, if today is still open).
    public var currentStreak: Int
    public var bestStreak: Int
    public var scheduledToday: Bool
    public var doneToday: Bool
    public var today: CompletionRate
    public var last7Days: CompletionRate
    public var last30Days: CompletionRate
    public init(taskId: String, name: String, currentStreak: Int, bestStreak: Int, scheduledToday: Bool, doneToday: Bool,
                today: CompletionRate, last7Days: CompletionRate, last30Days: CompletionRate) {
        self.taskId = taskId
        self.name = name
        self.currentStreak = currentStreak
        self.bestStreak = bestStreak
        self.scheduledToday = scheduledToday
        self.doneToday = doneToday
        self.today = today
        self.last7Days = last7Days
        self.last30Days = last30Days
    }
}

/// `habits.checkIn` response.
public struct CheckInResult: Codable, Sendable, Equatable {
    public var checkIn: CheckIn
    public var stats: HabitTaskStats
    /// An encouraging line for the app to show.
    public var message: String
    public init(checkIn: CheckIn, stats: HabitTaskStats, message: String) {
        self.checkIn = checkIn
        self.stats = stats
        self.message = message
    }
}

/// `habits.stats`: one system's tasks, or all of the user's when `systemId` is null.
public struct HabitStatsRequest: Codable, Sendable, Equatable {
    public var systemId: String?
    public init(systemId: String? = nil) { self.systemId = systemId }
}

/// A system's completion, summed over its tasks.
public struct HabitSystemStats: Codable, Sendable, Equatable {
    public var systemId: String
    public var name: String
    public var today: CompletionRate
    public var last7Days: CompletionRate
    public var last30Days: CompletionRate
    public var tasks: [HabitTaskStats]
    public init(systemId: String, name: String, today: CompletionRate, last7Days: CompletionRate, last30Days: CompletionRate, tasks: [HabitTaskStats]) {
        self.systemId = systemId
        self.name = name
        self.today = today
        self.last7Days = last7Days
        self.last30Days = last30Days
        self.tasks = tasks
    }
}

/// `habits.stats` response.
public struct HabitStats: Codable, Sendable, Equatable {
    /// The user's local today, `YYYY-MM-DD`.
    public var date: String
    public var timeZone: String
    public var systems: [HabitSystemStats]
    public var message: String
    public init(date: String, timeZone: String, systems: [HabitSystemStats], message: String) {
        self.date = date
        self.timeZone = timeZone
        self.systems = systems
        self.message = message
    }
}
