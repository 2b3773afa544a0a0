import Foundation

/// ISO 8601 date-times in the protocol's form, `2026-11-22T10:00:00.000Z`, without the cost of a
/// `DateFormatter`.
public enum ISO8601 {
    /// Formats `date` in UTC with milliseconds.
    public static func format(_ date: Date) -> String {
        format(unixMilliseconds: date.unixMilliseconds)
    }

    /// Formats a Unix time in milliseconds in UTC with milliseconds.
    public static func format(unixMilliseconds: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        write(unixMilliseconds: unixMilliseconds, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the form of ``format(unixMilliseconds:)`` to `bytes`, digit by digit. An instant
    /// outside years 0001–9999, which the form cannot write, is written as the nearest one in them.
    static func write(unixMilliseconds: Int64, into bytes: inout [UInt8]) {
        let unixMilliseconds = WireLimits.clampedUnixMilliseconds(unixMilliseconds)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var value = value
            if value >= divisor * 10 {
                bytes.append(contentsOf: String(value).utf8)
                return
            }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor))
                value %= divisor
                divisor /= 10
            }
        }
        let millisecond = Int(((unixMilliseconds % 1000) + 1000) % 1000)
        let totalSeconds = (unixMilliseconds - Int64(millisecond)) / 1000
        let days = Int(totalSeconds >= 0 ? totalSeconds / 86_400 : (totalSeconds - 86_399) / 86_400)
        let secondOfDay = Int(totalSeconds - Int64(days) * 86_400)
        let (year, month, day) = civil(fromDays: days)
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        bytes.append(UInt8(ascii: "."))
        digits(millisecond, 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `nil` when it is not one, or when it
    /// names an instant outside years 0001–9999 in UTC (which the form cannot write back).
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Parses the UTF-8 bytes of a date-time as ``parse(_:)`` does.
    static func parse(utf8 bytes: UnsafeRawBufferPointer) -> Date? {
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<digits {
                let byte = bytes[index]
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
                index += 1
            }
            return value
        }
        func expect(_ character: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == character else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect(45), let month = number(2), expect(45), let day = number(2),
              index < bytes.count, bytes[index] == 84 || bytes[index] == 116 || bytes[index] == 32
        else { return nil }
        index += 1
        guard let hour = number(2), expect(58), let minute = number(2), expect(58), let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        // In milliseconds, so that whole milliseconds add up exactly (before 1970 too).
        var fraction = 0.0
        if index < bytes.count && bytes[index] == 46 {
            index += 1
            var scale = 100.0
            let start = index
            while index < bytes.count, bytes[index] >= 48 && bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetSeconds = 0
        guard index < bytes.count else { return nil }
        if bytes[index] == 90 || bytes[index] == 122 {
            index += 1
        } else if bytes[index] == 43 || bytes[index] == 45 {
            let sign = bytes[index] == 45 ? -1 : 1
            index += 1
            guard let offsetHours = number(2) else { return nil }
            _ = expect(58)
            guard let offsetMinutes = number(2) else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let milliseconds = Double(seconds) * 1000 + fraction
        guard milliseconds >= Double(WireLimits.earliestUnixMilliseconds), milliseconds < Double(WireLimits.latestUnixMilliseconds + 1) else { return nil }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Date {
    /// Unix time in milliseconds, rounded to the nearest: `Date` keeps its time from 2001, so
    /// the instant of a whole millisecond reads back a hair below it (1 ms early if floored).
    /// Saturates at the bounds of `Int64` (a date made from outside numbers may lie beyond them).
    public var unixMilliseconds: Int64 { Int64(saturating: (timeIntervalSince1970 * 1000).rounded()) }

    /// The date at a Unix time in milliseconds.
    public init(unixMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000)
    }
}
