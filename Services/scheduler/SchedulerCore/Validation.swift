import Bus
import Foundation
import Wire

/// Checks of request fields; each failure is `INVALID_ARGUMENT` naming the field and the limit.
enum Validate {
    /// Longest id accepted (card, set, subject, …).
    static let maximumIDLength = 128

    static func id(_ value: String, _ field: String) throws(BusError) -> String {
        guard !value.isEmpty, value.count <= maximumIDLength else {
            throw .invalidArgument("field '\(field)' must be 1 to \(maximumIDLength) characters")
        }
        return value
    }

    static func optionalID(_ value: String?, _ field: String) throws(BusError) -> String? {
        guard let value else { return nil }
        return try id(value, field)
    }

    /// Trimmed text of 1...`maximum` characters.
    static func text(_ value: String, _ field: String, maximum: Int) throws(BusError) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= maximum else {
            throw .invalidArgument("field '\(field)' must be 1 to \(maximum) characters")
        }
        return trimmed
    }

    /// Optional trimmed text of at most `maximum` characters; empty becomes null.
    static func optionalText(_ value: String?, _ field: String, maximum: Int) throws(BusError) -> String? {
        guard let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        guard trimmed.count <= maximum else { throw .invalidArgument("field '\(field)' must be at most \(maximum) characters") }
        return trimmed
    }

    static func date(_ value: String, _ field: String) throws(BusError) -> LocalDate {
        guard let date = LocalDate(value) else {
            throw .invalidArgument("field '\(field)' must be a calendar date YYYY-MM-DD (years 1900-2999), got '\(value)'")
        }
        return date
    }

    static func time(_ value: String, _ field: String) throws(BusError) -> LocalTime {
        guard let time = LocalTime(value) else {
            throw .invalidArgument("field '\(field)' must be a 24-hour time HH:MM, got '\(value)'")
        }
        return time
    }

    static func zone(_ value: String, _ field: String) throws(BusError) -> Zone {
        guard let zone = Zone(value) else {
            throw .invalidArgument("field '\(field)' must be an IANA time zone such as Europe/Rome or UTC, got '\(value)'")
        }
        return zone
    }

    static func int(_ value: Int, _ field: String, in range: ClosedRange<Int>) throws(BusError) -> Int {
        guard range.contains(value) else {
            throw .invalidArgument("field '\(field)' must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
        return value
    }

    static func retention(_ value: Double, _ field: String) throws(BusError) -> Double {
        guard value.isFinite, (0.7...0.99).contains(value) else {
            throw .invalidArgument("field '\(field)' must be between 0.7 and 0.99, got \(value)")
        }
        return value
    }

    static func count<T>(_ items: [T], _ field: String, maximum: Int) throws(BusError) {
        guard !items.isEmpty, items.count <= maximum else {
            throw .invalidArgument("field '\(field)' must hold 1 to \(maximum) items, got \(items.count)")
        }
    }
}
