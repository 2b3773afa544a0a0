import Foundation
import Wire

/// Which events a subscriber of several brokers has let through, so that an event that comes
/// through each broker is delivered once.
///
/// An event is the same event when its stream (`source`, `instance`), `seq` and `id` are: the
/// `id` tells a restarted producer's new events from the old ones with the same `seq`. Each
/// stream keeps the last ``window`` events by `seq` (a slot per `seq` modulo the window), and at
/// most ``streamLimit`` streams are kept, so memory is bounded whatever publishers send. A copy
/// arriving more than a window behind the first, or after its stream was forgotten, passes
/// again: durable consumers apply an event once by its cursor anyway.
struct DuplicateEvents {
    /// Events remembered per stream: how far one broker may lag behind the other.
    static let window = 1024
    /// Streams remembered at once; beyond it one is forgotten to make room.
    static let streamLimit = 512

    private struct Slot {
        var seq: Int64 = -1
        var id: Int = 0
    }

    private var streams: [String: [Slot]] = [:]

    /// Whether `header` was let through already; if not, it is from now on.
    mutating func isDuplicate(_ header: EventHeader) -> Bool {
        let key = header.source + "\u{0}" + header.instance
        let index = Int(header.seq.magnitude % UInt64(Self.window))
        let id = header.id.hashValue
        if streams[key] == nil {
            if streams.count >= Self.streamLimit, let forgotten = streams.keys.first { streams[forgotten] = nil }
            streams[key] = Array(repeating: Slot(), count: Self.window)
        }
        return streams[key]!.withUnsafeMutableBufferPointer { slots in
            if slots[index].seq == header.seq, slots[index].id == id { return true }
            slots[index] = Slot(seq: header.seq, id: id)
            return false
        }
    }

    /// Streams remembered now.
    var streamCount: Int { streams.count }
}
