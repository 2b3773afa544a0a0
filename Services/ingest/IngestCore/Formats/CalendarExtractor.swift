import Bus
import Contracts
import Foundation
import Wire

/// ICS (iCalendar, RFC 5545; MirrorBuddy's calendar source): every to-do becomes a task (due at
/// its DUE, done if COMPLETED), every event marked as studying (a category or a summary that
/// says "study") a study session from DTSTART to DTEND, and every other event (an exam, a
/// lecture) a task due at its start. Each entry is also a paragraph of the material's text.
/// Recurring entries are taken once, at their first occurrence; all-day dates are midnight UTC.
enum CalendarExtractor {
    /// Entries one file may hold.
    static let maximumEntries = 500

    static func extract(_ text: String, fileName: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        let lines = try ICalendar.contentLines(text, budget: budget)
        guard lines.contains(where: { $0.uppercased() == "BEGIN:VCALENDAR" }) else {
            throw .invalidArgument("'\(fileName)' is not an iCalendar file: it has no BEGIN:VCALENDAR")
        }
        var builder = DocumentBuilder()
        var entry: Entry?
        var nesting: [String] = []
        for line in lines {
            try budget.checkpoint()
            guard let property = ICalendar.Property(line) else { continue }
            switch property.name {
            case "BEGIN":
                let component = property.value.uppercased()
                nesting.append(component)
                if entry == nil, component == "VEVENT" || component == "VTODO" { entry = Entry(component: component) }
            case "END":
                let component = nesting.popLast()
                if let current = entry, component == current.component {
                    try add(current, to: &builder, fileName: fileName)
                    entry = nil
                }
            case "X-WR-CALNAME" where entry == nil:
                builder.document.title = property.text
            default:
                // Only the entry's own properties: not those of its alarms.
                guard entry != nil, nesting.last == entry?.component else { continue }
                if property.name == "CATEGORIES" {
                    // Collected, joined once: repeated CATEGORIES lines must not copy what came before each time.
                    entry?.categories.append(property.text)
                } else if entry?.properties[property.name] == nil {
                    entry?.properties[property.name] = property
                }
            }
        }
        guard !builder.document.calendar.isEmpty else {
            throw .invalidArgument("no events or to-dos found in the calendar '\(fileName)'")
        }
        return builder.build()
    }

    /// A VEVENT or VTODO being read: its first value of each property, all its categories.
    private struct Entry {
        var component: String
        var properties: [String: ICalendar.Property] = [:]
        var categories: [String] = []
    }

    private static func add(_ entry: Entry, to builder: inout DocumentBuilder, fileName: String) throws(BusError) {
        let component = entry.component, properties = entry.properties
        guard builder.document.calendar.count < maximumEntries else {
            throw .invalidArgument("the calendar '\(fileName)' has more than \(maximumEntries) events and to-dos; split it into smaller files")
        }
        let summary = properties["SUMMARY"]?.text.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let title = (summary.isEmpty ? (component == "VTODO" ? "To-do" : "Event") : summary).clipped(toScalars: StoreLimits.titleLength)
        let start = properties["DTSTART"].flatMap(ICalendar.date)
        var end = properties["DTEND"].flatMap(ICalendar.date)
        if end == nil, let start, let duration = properties["DURATION"].flatMap({ ICalendar.duration($0.value) }) {
            end = DocumentValues.adding(duration, to: start)
        }
        let categories = entry.categories.joined(separator: ",").lowercased()
        let kind: CalendarItem.Kind
        if component == "VTODO" {
            let done = properties["STATUS"]?.value.uppercased() == "COMPLETED" || properties["COMPLETED"] != nil
            kind = .task(due: properties["DUE"].flatMap(ICalendar.date) ?? start, isDone: done)
        } else if let start, isStudy(summary: summary.lowercased(), categories: categories) {
            kind = .session(start: start, end: end.map { max($0, start) })
        } else {
            kind = .task(due: start, isDone: false)
        }
        let uid = properties["UID"]?.value ?? "entry-\(builder.document.calendar.count)"
        let key = uid + (properties["RECURRENCE-ID"].map { "|" + $0.value } ?? "")
        builder.document.calendar.append(CalendarItem(kind: kind, title: title, key: key))

        var lines = [title]
        if let start { lines.append("When: " + ICalendar.describe(start, end: end, timeZone: properties["DTSTART"]?.timeZone)) }
        if let location = properties["LOCATION"]?.text, !location.isEmpty { lines.append("Where: " + location) }
        if let description = properties["DESCRIPTION"]?.text, !description.isEmpty { lines.append(description) }
        builder.paragraph(lines.joined(separator: "\n"))
    }

    /// The rule every calendar source shares (Contracts' ``CalendarEntryRule``).
    private static func isStudy(summary: String, categories: String) -> Bool {
        CalendarEntryRule.isStudy(summary: summary, categories: categories)
    }
}

/// The parts of RFC 5545 ingest needs: unfolding, properties with parameters, dates, durations.
enum ICalendar {
    struct Property: Equatable {
        var name: String
        var parameters: [String: String]
        var value: String

        init(name: String, parameters: [String: String], value: String) {
            self.name = name
            self.parameters = parameters
            self.value = value
        }

        /// `NAME;PARAM=value;PARAM="v:x":VALUE`.
        init?(_ line: String) {
            var quoted = false
            guard let colon = line.firstIndex(where: { character in
                if character == "\"" { quoted.toggle() }
                return character == ":" && !quoted
            }) else { return nil }
            let head = line[..<colon].split(separator: ";")
            guard let name = head.first else { return nil }
            self.name = name.uppercased()
            var parameters: [String: String] = [:]
            for parameter in head.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { parameters[pair[0].uppercased()] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            }
            self.parameters = parameters
            value = String(line[line.index(after: colon)...])
        }

        /// The value as text: `\n`, `\,`, `\;` and `\\` unescaped.
        var text: String {
            var out = "", escaped = false
            for character in value {
                if escaped {
                    out.append(character == "n" || character == "N" ? "\n" : character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else {
                    out.append(character)
                }
            }
            return out
        }

        /// UTC for a `Z` time, else the TZID's zone if it is a plausible IANA name.
        var timeZone: TimeZone? {
            if value.hasSuffix("Z") { return TimeZone(identifier: "UTC") }
            guard let name = parameters["TZID"], (1...64).contains(name.utf8.count),
                  name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x5C }), !name.contains("..") else { return nil }
            return TimeZone(identifier: name)
        }
    }

    /// The logical lines: physical lines joined where the next starts with a space or tab.
    static func contentLines(_ text: String, budget: ExtractionBudget) throws(BusError) -> [String] {
        var lines: [String] = []
        for (index, line) in TextLines.lines(Array(text.utf8)).enumerated() where !line.isEmpty {
            if index & 0xFFF == 0 { try budget.checkpoint() }
            if line.first == 0x20 || line.first == 0x09, !lines.isEmpty {
                lines[lines.count - 1] += String(decoding: line.dropFirst(), as: UTF8.self)
            } else {
                lines.append(String(decoding: line, as: UTF8.self))
            }
        }
        return lines
    }

    /// A DATE-TIME (`20261122T100000Z`, or local with TZID, or floating: UTC) or DATE
    /// (`20261122`: midnight UTC). Its ASCII digits are read, each field range-checked (years
    /// 0001–9999, months 1–12, …); a zone's offset may carry it past the years, so the result is
    /// clamped to them. Nil for anything else.
    static func date(_ property: Property) -> Date? {
        let digits = property.value.utf8.prefix(64).filter { $0 >= 0x30 && $0 <= 0x39 }.map { Int($0 - 0x30) }
        guard digits.count == 8 || digits.count == 14 else { return nil }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        let (year, month, day) = (number(0..<4), number(4..<6), number(6..<8))
        guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        var components = DateComponents(year: year, month: month, day: day)
        if digits.count == 14 {
            let (hour, minute, second) = (number(8..<10), number(10..<12), number(12..<14))
            guard hour < 24, minute < 60, second <= 60 else { return nil }
            (components.hour, components.minute, components.second) = (hour, minute, second)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = property.timeZone ?? TimeZone(identifier: "UTC")!
        return calendar.date(from: components).flatMap(DocumentValues.clamped)
    }

    /// `P1DT2H30M`, `PT45M`, `P1W` in seconds (a leading `-` is ignored: end before start makes
    /// no sense). Numbers too large for any calendar saturate: the end is clamped to year 9999.
    static func duration(_ text: String) -> TimeInterval? {
        var total = 0.0, number: Double?, inTime = false
        for byte in text.utf8.drop(while: { $0 == 0x2D || $0 == 0x2B }) {
            if byte >= 0x30 && byte <= 0x39 {
                number = min((number ?? 0) * 10 + Double(byte - 0x30), maximumDurationSeconds)
                continue
            }
            switch byte | 0x20 {  // ASCII letters in lower case
            case 0x70: continue  // p
            case 0x74: inTime = true  // t
            default:
                guard let value = number else { return nil }
                number = nil
                switch (byte | 0x20, inTime) {
                case (0x77, false): total += value * 604_800  // w
                case (0x64, false): total += value * 86_400  // d
                case (0x68, true): total += value * 3600  // h
                case (0x6D, true): total += value * 60  // m
                case (0x73, true): total += value  // s
                default: return nil
                }
                total = min(total, maximumDurationSeconds)
            }
        }
        return total
    }

    /// Longer than years 0001–9999 span: a duration is never more.
    static let maximumDurationSeconds = 400_000_000_000.0

    /// "2026-11-23 09:00–11:00 (Europe/Rome)".
    static func describe(_ start: Date, end: Date?, timeZone: TimeZone?) -> String {
        let zone = timeZone ?? TimeZone(identifier: "UTC")!
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        var text = formatter.string(from: start)
        if let end {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            formatter.dateFormat = calendar.isDate(start, inSameDayAs: end) ? "HH:mm" : "yyyy-MM-dd HH:mm"
            text += "–" + formatter.string(from: end)
        }
        return text + " (\(zone.identifier))"
    }
}
