import Synchronization
import Wire

/// The hand-off of one subscription's events from the I/O thread to the task iterating it.
///
/// The I/O thread adds everything it read in one pass at once and wakes the iterating task at
/// most once for it; the iterator takes everything waiting in one go and returns it event by
/// event without touching the lock again. Waking the consumer for every event would cost more
/// than the event itself.
///
/// Bounded: at most `limit` events and `byteLimit` bytes wait, counting those the iterator has
/// taken but not yet returned; beyond that the newest are dropped, and the subscriber sees the
/// jump in `seq`. An event always fits an empty buffer, however large.
final class SubscriptionBuffer: Sendable {
    private struct State {
        var events: [RawEvent] = []
        /// The bytes of `events`.
        var bytes = 0
        /// The iterator waiting for events, if it is.
        var waiter: UnsafeContinuation<Void, Never>?
        /// No more events will come (the endpoint closed, or the subscription was cancelled).
        var finished = false
        /// Removes the endpoint; called once, when the consumer goes away first.
        var onTermination: (@Sendable () -> Void)?
    }

    let limit: Int
    let byteLimit: Int
    private let state: Mutex<State>
    /// Events the iterator holds and has not returned yet, and their bytes; it updates these as
    /// it returns them.
    private let inHand = Atomic<Int>(0)
    private let inHandBytes = Atomic<Int>(0)

    init(limit: Int, byteLimit: Int = .max) {
        self.limit = max(1, limit)
        self.byteLimit = max(1, byteLimit)
        state = Mutex(State())
    }

    /// Sets what ends the subscription's endpoint when the consumer leaves (cancelled or gone).
    func setOnTermination(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.finished else { return true }
            state.onTermination = handler
            return false
        }
        if runNow { handler() }
    }

    // MARK: The I/O thread's side

    /// Adds `batch` in order, keeping as many as fit, and wakes the iterator once. Empties
    /// `batch` (keeping its capacity for the next read). Returns how many were dropped.
    @discardableResult
    func deliver(_ batch: inout [RawEvent]) -> Int {
        guard !batch.isEmpty else { return 0 }
        let (waiter, dropped) = state.withLock { state -> (UnsafeContinuation<Void, Never>?, Int) in
            guard !state.finished else { return (nil, 0) }
            var held = inHand.load(ordering: .relaxed) + state.events.count
            var heldBytes = inHandBytes.load(ordering: .relaxed) + state.bytes
            var kept = 0
            for event in batch {
                let bytes = event.byteCount
                guard held < limit, held == 0 || bytes <= byteLimit - heldBytes else { break }
                held += 1
                heldBytes += bytes
                state.bytes += bytes
                kept += 1
            }
            let dropped = batch.count - kept
            if state.events.isEmpty && dropped == 0 {
                swap(&state.events, &batch)
            } else {
                state.events.append(contentsOf: batch.prefix(kept))
            }
            let waiter = state.waiter
            state.waiter = nil
            return (waiter, dropped)
        }
        batch.removeAll(keepingCapacity: true)
        waiter?.resume()
        return dropped
    }

    /// No more events: the iterator returns what is waiting, then ends.
    func finish() {
        end(runningTerminationHandler: false)
    }

    // MARK: The iterator's side

    /// Moves every waiting event into `events` (which must be empty), and their bytes into
    /// `bytes`, waiting for at least one unless the subscription has finished. Returns `false`
    /// when it has finished and nothing is left. Cancelling the waiting task ends the subscription.
    nonisolated(nonsending) func take(into events: inout [RawEvent], bytes: inout Int) async -> Bool {
        if Task.isCancelled { terminate() }
        while true {
            if takeWaiting(into: &events, bytes: &bytes) { return true }
            if state.withLock({ $0.finished }) { return false }
            await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        guard state.events.isEmpty, !state.finished else { return true }
                        precondition(state.waiter == nil, "a subscription is iterated by one task at a time")
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                terminate()
            }
        }
    }

    private func takeWaiting(into events: inout [RawEvent], bytes: inout Int) -> Bool {
        state.withLock { state -> Bool in
            guard !state.events.isEmpty else { return false }
            swap(&state.events, &events)
            bytes = state.bytes
            state.bytes = 0
            inHand.store(events.count, ordering: .relaxed)
            inHandBytes.store(bytes, ordering: .relaxed)
            return true
        }
    }

    /// The iterator still holds `count` events of `bytes` it has not returned. Plain stores:
    /// only the iterator writes them; the I/O thread reads them when it adds events.
    func setInHand(_ count: Int, bytes: Int) {
        inHand.store(count, ordering: .relaxed)
        inHandBytes.store(bytes, ordering: .relaxed)
    }

    /// An iterator that goes away puts back the events it took and did not return, so that a
    /// later iterator of the same subscription gets them, in order.
    func giveBack(_ events: ArraySlice<RawEvent>) {
        guard !events.isEmpty else { return }
        state.withLock { state in
            state.events.insert(contentsOf: events, at: 0)
            state.bytes += events.reduce(0) { $0 + $1.byteCount }
            inHand.store(0, ordering: .relaxed)
            inHandBytes.store(0, ordering: .relaxed)
        }
    }

    /// The consumer went away (cancelled, or the subscription and its iterators are gone): ends
    /// the subscription and removes its endpoint. Events already waiting are still returned.
    func terminate() {
        end(runningTerminationHandler: true)
    }

    /// Marks the subscription finished, wakes a waiting iterator and, the first time, runs the
    /// termination handler if asked (the I/O side, finishing, has removed the endpoint itself).
    private func end(runningTerminationHandler: Bool) {
        let (handler, waiter) = state.withLock { state -> ((@Sendable () -> Void)?, UnsafeContinuation<Void, Never>?) in
            let handler = state.onTermination
            state.onTermination = nil
            state.finished = true
            let waiter = state.waiter
            state.waiter = nil
            return (handler, waiter)
        }
        if runningTerminationHandler { handler?() }
        waiter?.resume()
    }
}

/// Ends its subscription when the last copy of the subscription and its iterators is gone, as
/// a stream ends when nothing iterates it any more.
final class SubscriptionLifetime: Sendable {
    let buffer: SubscriptionBuffer

    init(buffer: SubscriptionBuffer) { self.buffer = buffer }

    deinit { buffer.terminate() }
}

/// The events an iterator has taken from the buffer and returns one by one. Owned by one
/// iterator, so it needs no lock.
final class RawEventBatch {
    private let lifetime: SubscriptionLifetime
    // Read for every event by its one iterator: unchecked, as no access spans another.
    @exclusivity(unchecked) private var events: [RawEvent] = []
    @exclusivity(unchecked) private var index = 0
    /// The bytes of the events not returned yet.
    @exclusivity(unchecked) private var bytesInHand = 0

    init(lifetime: SubscriptionLifetime) { self.lifetime = lifetime }

    /// The next event, waiting for the I/O thread if none is in hand; `nil` once the
    /// subscription has ended and everything was returned.
    nonisolated(nonsending) func next() async -> RawEvent? {
        let buffer = lifetime.buffer
        if index == events.count {
            events.removeAll(keepingCapacity: true)
            index = 0
            guard await buffer.take(into: &events, bytes: &bytesInHand) else { return nil }
        }
        let event = events[index]
        index += 1
        bytesInHand -= event.byteCount
        buffer.setInHand(events.count - index, bytes: bytesInHand)
        return event
    }

    deinit { lifetime.buffer.giveBack(events[index...]) }
}
