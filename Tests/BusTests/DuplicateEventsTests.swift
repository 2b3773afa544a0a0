@testable import Bus
import Testing
import Wire

@Suite("Duplicate events of a broker pair")
struct DuplicateEventsTests {
    private func header(_ source: String, _ seq: Int64, id: String? = nil, instance: String = "i1") -> EventHeader {
        EventHeader(id: id ?? "\(source)-\(seq)", source: source, instance: instance, seq: seq, ts: 1)
    }

    @Test("the second copy of an event is a duplicate; the same seq with another id (a restarted stream) is not")
    func copies() {
        var duplicates = DuplicateEvents()
        let arrivals: [(EventHeader, duplicate: Bool)] = [
            (header("a", 1), false), (header("a", 1), true),
            (header("a", 1, instance: "i2"), false), (header("b", 1), false),
            // A restarted stream: the same seq, a new id.
            (header("a", 1, id: "restarted-1"), false), (header("a", 1, id: "restarted-1"), true),
            // Out of order across the brokers: 3 before 2, then each again.
            (header("a", 3), false), (header("a", 2), false), (header("a", 3), true), (header("a", 2), true),
            // The largest seq a header may carry.
            (header("c", WireLimits.seq.upperBound), false), (header("c", WireLimits.seq.upperBound), true),
        ]
        for (index, (event, expected)) in arrivals.enumerated() {
            let duplicate = duplicates.isDuplicate(event)
            #expect(duplicate == expected, "arrival \(index): seq \(event.seq) id \(event.id)")
        }
    }

    @Test("memory is bounded: at most the stream limit of streams, whatever publishers send")
    func bounded() {
        var duplicates = DuplicateEvents()
        for stream in 0..<(DuplicateEvents.streamLimit * 3) { _ = duplicates.isDuplicate(header("s\(stream)", 1)) }
        let streams = duplicates.streamCount
        #expect(streams == DuplicateEvents.streamLimit)
        // A copy more than a window behind its first passes again (documented bound).
        _ = duplicates.isDuplicate(header("w", 1))
        for seq in 2...Int64(DuplicateEvents.window + 1) { _ = duplicates.isDuplicate(header("w", seq)) }
        let late = duplicates.isDuplicate(header("w", 1))
        #expect(!late)
    }
}
