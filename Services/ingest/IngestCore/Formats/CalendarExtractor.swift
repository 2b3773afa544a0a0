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

    static func extract(_ text: String, fileName: String) throws(BusError) -> ExtractedDocument {
        let lines = ICalendar.contentLines(text)
        guard lines.contains(where: { $0.uppercased() == "BEGIN:VCALENDAR" }) else {
            throw .invalidArgument("'\(fileName)' is not an iCalendar file: it has no BEGIN:VCALENDAR")
        }
        var builder = DocumentBuilder()
        var entry: (component: String, properties: [String: ICalendar.Property])?
        var nesting: [String] = []
        for line in lines {
            guard let property = ICalendar.Property(line) else { continue }
            switch property.name {
            case "BEGIN":
                let component = property.value.uppercased()
                nesting.append(component)
                if entry == nil, component == "VEVENT" || component == "VTODO" { entry = (component, [:]) }
            case "END":
                let component = nesting.popLast()
                if let current = entry, component == current.component {
                    try add(current.component, current.properties, to: &builder, fileName: fileName)
                    entry = nil
                }
            case "X-WR-CALNAME" where entry == nil:
                builder.document.title = property.text
            default:
                // Only the entry's own properties: not those of its alarms.
                guard entry != nil, nesting.last == entry?.component else { continue }
                if property.name == "CATEGORIES", let earlier = entry?.properties["CATEGORIES"] {
                    entry?.properties["CATEGORIES"] = ICalendar.Property(name: "CATEGORIES", parameters: [:], value: earlier.value + "," + property.value)
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

    private static func add(_ component: String, _ properties: [String: ICalendar.Property], to builder: inout DocumentBuilder, fileName: String) throws(BusError) {
        guard builder.document.calendar.count < maximumEntries else {
            throw .invalidArgument("the calendar '\(fileName)' has more than \(maximumEntries) events and to-dos; split it into smaller files")
        }
        let summary = properties["SUMMARY"]?.text.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let title = (summary.isEmpty ? (component == "VTODO" ? "To-do" : "Event") : summary).clipped(toScalars: StoreLimits.titleLength)
        let start = properties["DTSTART"].flatMap(ICalendar.date)
        var end = properties["DTEND"].flatMap(ICalendar.date)
        if end == nil, let start, let duration = properties["DURATION"].flatMap({ ICalendar.duration($0.value) }) { end = start + duration }
        let categories = properties["CATEGORIES"]?.text.lowercased() ?? ""
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

    /// "Study", "Studying", "Studio" (Italian) as a category, or a summary starting with them
    /// or saying "study session".
    private static func isStudy(summary: String, categories: String) -> Bool {
        let words = ["study", "studying", "studio", "revision"]
        let categoryWords = categories.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return categoryWords.contains { words.contains($0) } || words.contains { summary.hasPrefix($0) } || summary.contains("study session")
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

        var timeZone: TimeZone? {
            if value.hasSuffix("Z") { return TimeZone(identifier: "UTC") }
            return parameters["TZID"].flatMap { TimeZone(identifier: $0) }
        }
    }

    /// The logical lines: physical lines joined where the next starts with a space or tab.
    static func contentLines(_ text: String) -> [String] {
        var lines: [String] = []
        for line in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            if let first = line.first, first == " " || first == "\t", !lines.isEmpty {
                lines[lines.count - 1] += line.dropFirst()
            } else {
                lines.append(String(line))
            }
        }
        return lines
    }

    /// A DATE-TIME (`20261122T100000Z`, or local with TZID, or floating: UTC) or DATE
    /// (`20261122`: midnight UTC).
    static func date(_ property: Property) -> Date? {
        let digits = property.value.filter { $0.isNumber }
        guard digits.count == 8 || digits.count == 14 else { return nil }
        let numbers = Array(digits).map { Int(String($0))! }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + numbers[$1] } }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = property.timeZone ?? TimeZone(identifier: "UTC")!
        var components = DateComponents(year: number(0..<4), month: number(4..<6), day: number(6..<8))
        if digits.count == 14 {
            components.hour = number(8..<10)
            components.minute = number(10..<12)
            components.second = number(12..<14)
        }
        return calendar.date(from: components)
    }

    /// `P1DT2H30M`, `PT45M`, `P1W` (a leading `-` is ignored: end before start makes no sense);
    /// nil for one longer than any span the wire's dates can express (``WireLimits/maximumSeconds``).
    static func duration(_ text: String) -> TimeInterval? {
        var total = 0.0, number = "", inTime = false
        for character in text.uppercased().drop(while: { $0 == "-" || $0 == "+" }) {
            switch character {
            case "P": continue
            case "T": inTime = true
            case "0"..."9": number.append(character)
            default:
                guard let value = Double(number) else { return nil }
                number = ""
                switch (character, inTime) {
                case ("W", false): total += value * 604_800
                case ("D", false): total += value * 86_400
                case ("H", true): total += value * 3600
                case ("M", true): total += value * 60
                case ("S", true): total += value
                default: return nil
                }
            }
        }
        return total <= WireLimits.maximumSeconds ? total : nil
    }

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
