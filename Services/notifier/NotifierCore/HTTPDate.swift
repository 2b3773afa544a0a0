/// HTTP dates (RFC 9110, 5.6.7) in the three forms a recipient must accept:
/// `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate), `Sunday, 06-Nov-94 08:49:37 GMT` (RFC 850) and
/// `Sun Nov  6 08:49:37 1994` (asctime). Every field is range-checked, so the result is a date
/// of years 1–9999 and computing it cannot overflow.
enum HTTPDate {
    /// Seconds since 1970-01-01T00:00:00Z, or nil when `text` is no HTTP date.
    static func secondsSince1970(_ text: String) -> Int64? {
        let tokens = text.split { $0 == " " || $0 == "," || $0 == "-" }.map(String.init)
        let day: String, month: String, year: String, time: String
        switch tokens.count {
        case 6 where tokens[5] == "GMT":  // IMF-fixdate, RFC 850
            (day, month, year, time) = (tokens[1], tokens[2], tokens[3], tokens[4])
        case 5:  // asctime
            (month, day, time, year) = (tokens[1], tokens[2], tokens[3], tokens[4])
        default:
            return nil
        }
        guard let dayNumber = number(day, digits: 1...2), let monthNumber = months.firstIndex(of: month).map({ $0 + 1 }),
              var yearNumber = number(year, digits: 2...4), year.count != 3
        else { return nil }
        if year.count == 2 { yearNumber += yearNumber < 70 ? 2000 : 1900 }
        let clock = time.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard clock.count == 3, let hour = number(clock[0], digits: 2...2), let minute = number(clock[1], digits: 2...2),
              let second = number(clock[2], digits: 2...2), hour < 24, minute < 60, second <= 60,
              (1...9999).contains(yearNumber), (1...daysIn(month: monthNumber, year: yearNumber)).contains(dayNumber)
        else { return nil }
        let days = daysSince1970(year: yearNumber, month: monthNumber, day: dayNumber)
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func number(_ text: String, digits: ClosedRange<Int>) -> Int64? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(text)
    }

    private static func daysIn(month: Int, year: Int64) -> Int64 {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
    private static func daysSince1970(year: Int64, month: Int, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
