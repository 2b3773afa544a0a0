import Contracts
import Foundation
@testable import IngestCore
import Testing
import Wire

/// Numbers in documents are outside numbers too (docs/wire-protocol.md, addition 1).
@Suite("Absurd numbers in documents")
struct HostileNumberTests {
    @Test("an iCalendar DURATION longer than the dates' span is ignored, and the session still encodes")
    func absurdDuration() throws {
        #expect(ICalendar.duration("P" + String(repeating: "9", count: 400) + "W") == nil)
        #expect(ICalendar.duration("P1DT2H") == 93_600)
        let ics = "BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:e1\nSUMMARY:Study session\nDTSTART:20261122T100000Z\nDURATION:P99999999999999999999W\nEND:VEVENT\nEND:VCALENDAR\n"
        let document = try CalendarExtractor.extract(ics, fileName: "exam.ics")
        guard case .session(let start, let end)? = document.calendar.first?.kind else {
            Issue.record("no session in \(document.calendar)")
            return
        }
        #expect(start == ISO8601.parse("2026-11-22T10:00:00Z") && end == nil)
        #expect(throws: Never.self) { _ = try WireCoding.encode(["start": start]) }
    }

    @Test("Anki column directives outside 1…64 are ignored instead of trapping")
    func ankiColumns() throws {
        var text = "#separator:tab\n#tags column:-9223372036854775808\n#deck column:0\n"
        for column in 1...64 { text += "#guid column:\(column)\n" }
        text += "Capital of Italy?\tRome\n"
        #expect(throws: Never.self) { _ = try FlashcardTableExtractor.extract(text, delimiter: nil, fileName: "deck.txt") }
    }
}
