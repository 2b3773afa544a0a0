import Bus
import Foundation
@testable import SchedulerCore
import Testing
import Wire

@Suite("Local dates, times and time zones")
struct CalendarTests {
    @Test("dates parse only as real calendar days and know their ISO weekday")
    func dates() {
        #expect(LocalDate("2026-11-22")?.description == "2026-11-22")
        #expect(LocalDate("2026-11-22")?.isoWeekday == 7)  // a Sunday
        #expect(LocalDate("2026-11-23")?.isoWeekday == 1)
        #expect(LocalDate("1970-01-01")?.dayNumber == 0)
        #expect(LocalDate("2028-02-29") != nil)
        for bad in ["2026-02-29", "2026-13-01", "2026-1-01", "26-01-01", "2026-01-01T00:00", "", "abcd-ef-gh"] {
            #expect(LocalDate(bad) == nil, "\(bad)")
        }
        #expect(LocalTime("07:05")?.minuteOfDay == 425)
        for bad in ["24:00", "7:05", "07:60", "0705"] { #expect(LocalTime(bad) == nil, "\(bad)") }
        #expect(Zone("Europe/Rome") != nil)
        for bad in ["Mars/Base", "", "europe/rome"] { #expect(Zone(bad) == nil, "\(bad)") }
    }

    @Test("a wall time skipped by spring forward moves forward by the gap; a repeated one means its first occurrence")
    func daylightSaving() throws {
        let berlin = try #require(Zone("Europe/Berlin"))
        let springForward = try #require(LocalDate("2026-03-29"))
        #expect(ISO8601.format(unixMilliseconds: berlin.instantMs(springForward, LocalTime("02:30")!)) == "2026-03-29T01:30:00.000Z")
        #expect(ISO8601.format(unixMilliseconds: berlin.instantMs(springForward, LocalTime("08:00")!)) == "2026-03-29T06:00:00.000Z")
        let fallBack = try #require(LocalDate("2026-10-25"))
        #expect(ISO8601.format(unixMilliseconds: berlin.instantMs(fallBack, LocalTime("02:30")!)) == "2026-10-25T00:30:00.000Z")
        #expect(ISO8601.format(unixMilliseconds: berlin.instantMs(fallBack, LocalTime("08:00")!)) == "2026-10-25T07:00:00.000Z")
        let (start, end) = berlin.bounds(of: fallBack)
        #expect(end - start == 25 * 3_600_000)
        let newYork = try #require(Zone("America/New_York"))
        #expect(newYork.date(atMs: instant("2026-11-22T04:59:00Z").unixMilliseconds).description == "2026-11-21")
        #expect(newYork.date(atMs: instant("2026-11-22T05:00:00Z").unixMilliseconds).description == "2026-11-22")
        let kiritimati = try #require(Zone("Pacific/Kiritimati"))  // UTC+14
        #expect(kiritimati.date(atMs: instant("2026-11-22T10:00:00Z").unixMilliseconds).description == "2026-11-23")
    }
}
