import Foundation
import Synchronization
import Wire

/// Events published by any task, stamped and encoded on the publishing thread, waiting in
/// publish order for the I/O thread to send them.
///
/// Publishing is a lock and an append: the I/O thread is asked to send (one command) only when
/// the queue was empty, and then takes everything queued at once, so a burst of publishes costs
/// one hand-off instead of one per event. Stamping under the lock keeps `seq` in queue order.
final class PublishQueue: Sendable {
    private struct State {
        var events: [RawEvent] = []
        var seq: Int64 = 0
        /// The I/O thread refused a send command (the bus is shut down): nothing more is queued.
        var closed = false
    }

    private let state = Mutex(State())
    private let source: String
    private let instance: String
    /// Event ids are `<prefix>-<seq>`; the prefix is random per process.
    private let idPrefix: String

    init(source: String, instance: String) {
        self.source = source
        self.instance = instance
        idPrefix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }

    /// Queues an event on this process's stream, stamping `id`, `source`, `instance`, `seq`, `ts`.
    /// Returns whether the queue was empty, i.e. whether the I/O thread must be asked to send.
    /// - Parameter checkHeader: throws if the stamped header's size (`user` and `meta` make it
    ///   any size) is refused; the event is then not queued and takes no `seq`.
    func stamp(
        topic: String, payload: Data, user: String?, meta: [String: String], ts: Int64, checkHeader: (Int) throws(BusError) -> Void
    ) throws(BusError) -> Bool {
        try state.withLock { state throws(BusError) -> Bool in
            guard !state.closed else { throw .unavailable("the bus connection is shut down") }
            let seq = state.seq + 1
            let header = EventHeader.encoded(
                id: .prefixed(idPrefix, seq), source: source, instance: instance, seq: seq, ts: ts, user: user, meta: meta)
            try checkHeader(header.count)
            state.seq = seq
            state.events.append(RawEvent(topic: topic, header: header, payload: payload))
            return state.events.count == 1
        }
    }

    /// Queues an event whose header was stamped elsewhere (a durable outbox's stream).
    func enqueue(topic: String, header: Data, payload: Data) throws(BusError) -> Bool {
        try state.withLock { state throws(BusError) -> Bool in
            guard !state.closed else { throw .unavailable("the bus connection is shut down") }
            state.events.append(RawEvent(topic: topic, header: header, payload: payload))
            return state.events.count == 1
        }
    }

    /// The I/O thread refused the send command: drops what waits and refuses what comes.
    func close() {
        state.withLock { state in
            state.closed = true
            state.events.removeAll()
        }
    }

    /// I/O thread: takes everything queued, in order, into `events` (which must be empty).
    func take(into events: inout [RawEvent]) {
        state.withLock { swap(&$0.events, &events) }
    }
}
