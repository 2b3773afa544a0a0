import Bus
import Contracts
import Foundation
import Wire

/// A user's daily quiet window in their time zone, as minutes after local midnight.
///
/// `start < end` is a window within one day (13:00–15:00); `start > end` wraps midnight
/// (22:00–07:00); `start == end` is no window. The end is found on the local calendar, so on a
/// DST day 22:00–07:00 lasts 8 or 10 hours, and an end inside a skipped hour moves to the first
/// minute that exists.
struct QuietWindow: Sendable, Equatable {
    var startMinute: Int
    var endMinute: Int
    var timeZone: TimeZone

    /// Parses `HH:mm`.
    /// - Throws: `INVALID_ARGUMENT` naming `field`.
    static func minute(of text: String, field: String) throws(BusError) -> Int {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0...23).contains(hour), (0...59).contains(minute)
        else { throw Field.invalid(field, "must be a 24-hour local time HH:mm (00:00 to 23:59), got '\(text)'") }
        return hour * 60 + minute
    }

    static func format(_ minute: Int) -> String {
        String(format: "%02d:%02d", minute / 60, minute % 60)
    }

    /// When the window that contains `date` ends, or nil when `date` is outside it.
    func end(containing date: Date) -> Date? {
        guard startMinute != endMinute else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let local = calendar.dateComponents([.hour, .minute], from: date)
        let minute = (local.hour ?? 0) * 60 + (local.minute ?? 0)
        let inside = startMinute < endMinute
            ? (minute >= startMinute && minute < endMinute)
            : (minute >= startMinute || minute < endMinute)
        guard inside else { return nil }
        let target = DateComponents(hour: endMinute / 60, minute: endMinute % 60, second: 0)
        return calendar.nextDate(after: date, matching: target, matchingPolicy: .nextTime, direction: .forward)
    }
}
