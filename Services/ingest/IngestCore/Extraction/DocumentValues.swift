import Foundation

/// Numbers read from documents, kept to what the store and the wire can carry: a hostile file
/// may say anything (a DURATION of 10^20 weeks, a DTSTART in year 99999, a cue at 10^300 s), and
/// Swift traps where such a number meets an integer (a date's milliseconds on the wire).
enum DocumentValues {
    /// 0001-01-01T00:00:00Z, the first instant the wire's date form (four-digit years) writes.
    static let earliestDate = Date(timeIntervalSince1970: -62_135_596_800)
    /// 9999-12-31T23:59:59.999Z, the last.
    static let latestDate = Date(timeIntervalSince1970: 253_402_300_799.999)

    /// `date` clamped to years 0001–9999; nil if it is not a number at all.
    static func clamped(_ date: Date) -> Date? {
        guard date.timeIntervalSince1970.isFinite else { return nil }
        return min(max(date, earliestDate), latestDate)
    }

    /// `date + seconds`, clamped to years 0001–9999 (a duration beyond them ends at the last instant).
    static func adding(_ seconds: TimeInterval, to date: Date) -> Date {
        guard seconds.isFinite else { return seconds > 0 ? latestDate : date }
        return clamped(date.addingTimeInterval(seconds)) ?? date
    }

    /// The longest recording a time in subtitles or a transcript may point into: 1,000 hours.
    static let maximumMediaSeconds: Double = 3_600_000

    /// A time in a recording, 0…``maximumMediaSeconds``; nil for one that is not a number.
    static func mediaSeconds(_ seconds: Double) -> Double? {
        guard seconds.isFinite else { return nil }
        return min(max(seconds, 0), maximumMediaSeconds)
    }
}
