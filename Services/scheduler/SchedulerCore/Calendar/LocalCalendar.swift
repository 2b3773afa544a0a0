import Bus
import Foundation
import Synchronization
import Wire

/// A calendar day without a time zone, `YYYY-MM-DD`, counted as days since 1970-01-01 so that
/// day arithmetic is integer arithmetic. Text goes through the wire format's ISO 8601 code.
struct LocalDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Days since 1970-01-01.
    let dayNumber: Int

    init(dayNumber: Int) { self.dayNumber = dayNumber }

    /// Parses `YYYY-MM-DD` (a real calendar date between years 1900 and 2999).
    init?(_ text: String) {
        guard text.utf8.count == 10, let year = Int(text.prefix(4)), (1900...2999).contains(year),
              let midnight = ISO8601.parse(text + "T00:00:00Z") else { return nil }
        self.init(dayNumber: Int(midnight.unixMilliseconds / 86_400_000))
        guard description == text else { return nil }  // 2026-02-30 reads as March 2nd: not a date
    }

    /// ISO weekday: 1 Monday … 7 Sunday.
    var isoWeekday: Int { ((dayNumber + 3) % 7 + 7) % 7 + 1 }

    /// The date `days` later (earlier when negative).
    func adding(days: Int) -> LocalDate { LocalDate(dayNumber: dayNumber + days) }

    /// Days from `self` to `other`.
    func days(to other: LocalDate) -> Int { other.dayNumber - dayNumber }

    var description: String {
        String(ISO8601.format(unixMilliseconds: Int64(dayNumber) * 86_400_000).prefix(10))
    }

    static func < (lhs: LocalDate, rhs: LocalDate) -> Bool { lhs.dayNumber < rhs.dayNumber }
}

extension LocalDate {
    /// The date a request's field holds, or `INVALID_ARGUMENT` naming the field.
    init(_ text: String, field: @autoclosure () -> String) throws(BusError) {
        guard let date = LocalDate(text) else {
            throw Field.invalid(field(), "must be a calendar date YYYY-MM-DD (years 1900-2999), got '\(text)'")
        }
        self = date
    }
}

/// A time of day, `HH:MM` in 24 hours.
struct LocalTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Minutes after midnight, 0..1439.
    let minuteOfDay: Int

    init(hour: Int, minute: Int) { minuteOfDay = hour * 60 + minute }

    /// Parses `HH:MM`.
    init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard text.utf8.count == 5, parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        minuteOfDay = hour * 60 + minute
    }

    var description: String { String(format: "%02d:%02d", minuteOfDay / 60, minuteOfDay % 60) }

    static func < (lhs: LocalTime, rhs: LocalTime) -> Bool { lhs.minuteOfDay < rhs.minuteOfDay }
}

extension LocalTime {
    /// The time a request's field holds, or `INVALID_ARGUMENT` naming the field.
    init(_ text: String, field: @autoclosure () -> String) throws(BusError) {
        guard let time = LocalTime(text) else { throw Field.invalid(field(), "must be a 24-hour time HH:MM, got '\(text)'") }
        self = time
    }
}

/// An IANA time zone's rules, turning instants into local dates and local wall times into
/// instants across DST changes.
///
/// A wall time that happens twice (clocks go back) means its first occurrence; one that does
/// not happen (clocks go forward) is moved forward by the gap: 02:30 on a spring-forward night
/// in Europe/Berlin is 03:30 CEST.
struct Zone: Sendable {
    let timeZone: TimeZone
    var identifier: String { timeZone.identifier }

    private static let known: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC"])
    /// Zones made so far: building a `TimeZone` reads the zone database, and every review needs one.
    private static let cache = Mutex<[String: TimeZone]>([:])

    /// The zone named `identifier`, an IANA name such as `Europe/Rome` or `UTC`.
    init?(_ identifier: String) {
        if let cached = Zone.cache.withLock({ $0[identifier] }) {
            timeZone = cached
            return
        }
        guard Zone.known.contains(identifier), let timeZone = TimeZone(identifier: identifier) else { return nil }
        Zone.cache.withLock { $0[identifier] = timeZone }
        self.timeZone = timeZone
    }

    /// The zone a request's field names, or `INVALID_ARGUMENT` naming the field.
    init(_ identifier: String, field: @autoclosure () -> String) throws(BusError) {
        guard let zone = Zone(identifier) else {
            throw Field.invalid(field(), "must be an IANA time zone such as Europe/Rome or UTC, got '\(identifier)'")
        }
        self = zone
    }

    /// UTC.
    static let utc = Zone("UTC")!

    /// Offset from UTC in seconds at an instant given in Unix milliseconds.
    func offsetSeconds(atMs ms: Int64) -> Int64 {
        Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000)))
    }

    /// The local date at an instant (Unix milliseconds).
    func date(atMs ms: Int64) -> LocalDate {
        let localSeconds = floorDiv(ms, 1000) + offsetSeconds(atMs: ms)
        return LocalDate(dayNumber: Int(floorDiv(localSeconds, 86_400)))
    }

    /// The instant (Unix milliseconds) of a local date and time.
    func instantMs(_ date: LocalDate, _ time: LocalTime = LocalTime(hour: 0, minute: 0)) -> Int64 {
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
    func bounds(of date: LocalDate) -> (start: Int64, end: Int64) {
        (instantMs(date), instantMs(date.adding(days: 1)))
    }
}

func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    a >= 0 ? a / b : -((-a + b - 1) / b)
}
