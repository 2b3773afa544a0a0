import Foundation

/// A missed stretch of one publisher's stream: `seq` jumped from `expected` to `received`.
public struct SeqGap: Sendable, Equatable, CustomStringConvertible {
    public var source: String
    public var instance: String
    public var expected: Int64
    public var received: Int64
    /// How many events were missed.
    public var missed: Int64 { received.subtractingReportingOverflow(expected).partialValue }

    public init(source: String, instance: String, expected: Int64, received: Int64) {
        self.source = source
        self.instance = instance
        self.expected = expected
        self.received = received
    }

    public var description: String {
        "missed \(missed) event(s) from \(source) \(instance): expected seq \(expected), got \(received)"
    }
}

/// Tracks the last `seq` of every `source`+`instance` stream and reports jumps.
public struct SeqTracker: Sendable {
    private var last: [String: Int64] = [:]
    /// The stream of the previous event, kept out of the dictionary: consecutive events mostly
    /// come from one stream, and this saves building a key and two lookups per event.
    private var current: (source: String, instance: String, seq: Int64)?

    public init() {}

    /// Records `header`; returns the gap before it, if events were missed. The first event of a
    /// stream, and a `seq` that goes back (a replay or a restarted stream), are not gaps.
    public mutating func observe(_ header: EventHeader) -> SeqGap? {
        let previous: Int64?
        if let current, current.source == header.source, current.instance == header.instance {
            previous = current.seq
        } else {
            if let current { last[Self.key(current.source, current.instance)] = current.seq }
            previous = last[Self.key(header.source, header.instance)]
        }
        current = (header.source, header.instance, header.seq)
        // Decoded headers hold seq within WireLimits.seq; a header built in code may not.
        guard let previous, case (let expected, false) = previous.addingReportingOverflow(1), header.seq > expected else { return nil }
        return SeqGap(source: header.source, instance: header.instance, expected: expected, received: header.seq)
    }

    private static func key(_ source: String, _ instance: String) -> String {
        source + "\u{0}" + instance
    }
}
