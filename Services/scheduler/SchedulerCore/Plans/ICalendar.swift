import Bus
import Contracts
import Foundation
import Wire

/// Writes a study plan as an iCalendar file (RFC 5545): one VEVENT per study session, times
/// in UTC, text escaped and lines folded at 75 octets with CRLF endings.
enum ICalendar {
    static func document(for plan: StudyPlan) -> String {
        var lines = [
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//StudyBus//scheduler//EN", "CALSCALE:GREGORIAN", "METHOD:PUBLISH",
            "X-WR-CALNAME:" + escape(plan.title), "X-WR-TIMEZONE:" + plan.timeZone,
        ]
        let stamp = timestamp(plan.createdAt)
        for day in plan.days where day.newCards + day.expectedReviews > 0 {
            let end = day.sessionStart.addingTimeInterval(Double(plan.sessionMinutes) * 60)
            var parts: [String] = []
            if day.newCards > 0 { parts.append("\(day.newCards) new card\(day.newCards == 1 ? "" : "s")") }
            if day.expectedReviews > 0 { parts.append("about \(day.expectedReviews) review\(day.expectedReviews == 1 ? "" : "s")") }
            lines += [
                "BEGIN:VEVENT",
                "UID:\(plan.id)-\(day.date)@studybus",
                "DTSTAMP:\(stamp)",
                "DTSTART:\(timestamp(day.sessionStart))",
                "DTEND:\(timestamp(end))",
                "SUMMARY:" + escape("Study: \(plan.title)"),
                "DESCRIPTION:" + escape(parts.joined(separator: ", ") + ". You've got this!"),
                "CATEGORIES:Study",
                "END:VEVENT",
            ]
        }
        lines.append("END:VCALENDAR")
        return lines.map(fold).joined()
    }

    /// Events the document holds (sessions with something to do).
    static func eventCount(_ plan: StudyPlan) -> Int {
        plan.days.filter { $0.newCards + $0.expectedReviews > 0 }.count
    }

    /// `20261122T170000Z`.
    static func timestamp(_ date: Date) -> String {
        let iso = ISO8601.format(date)  // 2026-11-22T17:00:00.000Z
        return iso.prefix(19).replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "") + "Z"
    }

    /// TEXT escaping of RFC 5545 §3.3.11.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ";", with: "\\;")
            .replacingOccurrences(of: ",", with: "\\,").replacingOccurrences(of: "\r\n", with: "\\n").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Folds a content line at 75 octets without splitting a UTF-8 character (§3.1).
    static func fold(_ line: String) -> String {
        var output = "", octets = 0
        for character in line {
            let size = String(character).utf8.count
            if octets + size > 75 {
                output += "\r\n "
                octets = 1
            }
            output.append(character)
            octets += size
        }
        return output + "\r\n"
    }
}
