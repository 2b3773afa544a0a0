import Bus
import Foundation
import Synchronization

/// A calendar day without a time zone, `YYYY-MM-DD`, counted as days since 1970-01-01 so that
/// day arithmetic is integer arithmetic.
public struct LocalDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Days since 1970-01-01.
    public let dayNumber: Int

    public init(dayNumber: Int) { self.dayNumber = dayNumber }

    /// The date of a proleptic Gregorian year, month and day (no validation).
    public init(year: Int, month: Int, day: Int) {
        // Days from civil, after Howard Hinnant's public-domain algorithm.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        dayNumber = era * 146_097 + dayOfEra - 719_468
    }

    /// Parses `YYYY-MM-DD` (a real calendar date between years 1900 and 2999).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1900...2999).contains(year), (1...12).contains(month), day >= 1 else { return nil }
        let date = LocalDate(year: year, month: month, day: day)
        guard date.components == (year, month, day) else { return nil }  // e.g. 2026-02-30
        self = date
    }

    /// Year, month, day.
    public var components: (year: Int, month: Int, day: Int) {
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// ISO weekday: 1 Monday … 7 Sunday.
    public var isoWeekday: Int { ((dayNumber + 3) % 7 + 7) % 7 + 1 }

    /// The date `days` later (earlier when negative).
    public func adding(days: Int) -> LocalDate { LocalDate(dayNumber: dayNumber + days) }

    /// Days from `self` to `other`.
    public func days(to other: LocalDate) -> Int { other.dayNumber - dayNumber }

    public var description: String {
        let (year, month, day) = components
        return String(format: "%04d-%02d-%02d", year, month, day)
    }

    public static func < (lhs: LocalDate, rhs: LocalDate) -> Bool { lhs.dayNumber < rhs.dayNumber }
}

/// A time of day, `HH:MM` in 24 hours.
public struct LocalTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Minutes after midnight, 0..1439.
    public let minuteOfDay: Int

    public init(hour: Int, minute: Int) { minuteOfDay = hour * 60 + minute }

    /// Parses `HH:MM`.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard text.utf8.count == 5, parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        minuteOfDay = hour * 60 + minute
    }

    public var description: String { String(format: "%02d:%02d", minuteOfDay / 60, minuteOfDay % 60) }

    public static func < (lhs: LocalTime, rhs: LocalTime) -> Bool { lhs.minuteOfDay < rhs.minuteOfDay }
}

/// An IANA time zone's rules, turning instants into local dates and local wall times into
/// instants across DST changes.
///
/// A wall time that happens twice (clocks go back) means its first occurrence; one that does
/// not happen (clocks go forward) is moved forward by the gap: 02:30 on a spring-forward night
/// in Europe/Berlin is 03:30 CEST.
public struct Zone: Sendable {
    public let timeZone: TimeZone
    public var identifier: String { timeZone.identifier }

    private static let known: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC"])
    /// Zones made so far: building a `TimeZone` reads the zone database, and every review needs one.
    private static let cache = Mutex<[String: TimeZone]>([:])

    /// The zone named `identifier`, an IANA name such as `Europe/Rome` or `UTC`.
    public init?(_ identifier: String) {
        if let cached = Zone.cache.withLock({ $0[identifier] }) {
            timeZone = cached
            return
        }
        guard Zone.known.contains(identifier), let timeZone = TimeZone(identifier: identifier) else { return nil }
        Zone.cache.withLock { $0[identifier] = timeZone }
        self.timeZone = timeZone
    }

    /// UTC.
    public static let utc = Zone("UTC")!

    /// Offset from UTC in seconds at an instant given in Unix milliseconds.
    func offsetSeconds(atMs ms: Int64) -> Int64 {
        Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000)))
    }

    /// The local date at an instant (Unix milliseconds).
    public func date(atMs ms: Int64) -> LocalDate {
        let localSeconds = floorDiv(ms, 1000) + offsetSeconds(atMs: ms)
        return LocalDate(dayNumber: Int(floorDiv(localSeconds, 86_400)))
    }

    /// The instant (Unix milliseconds) of a local date and time.
    public func instantMs(_ date: LocalDate, _ time: LocalTime = LocalTime(hour: 0, minute: 0)) -> Int64 {
        let wall = Int64(date.dayNumber) * 86_400 + Int64(time.minuteOfDay) * 60
        let before = offsetSeconds(atMs: (wall - 86_400) * 1000)
        let after = offsetSeconds(atMs: (wall + 86_400) * 1000)
        // Larger offset first: its instant is the earlier one, the first occurrence of the wall time.
        for offset in [max(before, after), min(before, after)] {
            let candidate = (wall - offset) * 1000
            if offsetSeconds(atMs: candidate) == offset { return candidate }
        }
        return (wall - before) * 1000  // in the gap: the offset before the change moves it forward
    }

    /// The instants where `date` starts and the next day starts.
    public func bounds(of date: LocalDate) -> (start: Int64, end: Int64) {
        (instantMs(date), instantMs(date.adding(days: 1)))
    }
}

func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    a >= 0 ? a / b : -((-a + b - 1) / b)
}
