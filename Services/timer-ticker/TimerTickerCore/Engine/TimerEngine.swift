import Bus
import Foundation
import Threads
import Wire

/// Holds every scheduled timer in memory and fires each at its deadline from a thread of its
/// own, never early. Firing only hands the due entries to `deliver` (an in-memory queue): no
/// I/O and no database write happens on this path.
///
/// ```swift
/// let engine = TimerEngine { due in completions.enqueue(due) }
/// engine.schedule(key: 42, run: 1, kind: .completion, due: engine.clock.deadline(afterMilliseconds: 5_000))
/// engine.start()
/// ```
///
/// Deadlines are engine milliseconds (``EngineClock``, monotonic), so a change of the time of
/// day moves nothing. The thread sleeps on a condition variable bound to `CLOCK_MONOTONIC` until
/// the earliest deadline, and is woken when a new deadline becomes the earliest one.
public final class TimerEngine: @unchecked Sendable {
    // @unchecked Sendable: `heap`, `stopping` and `thread` are only touched with `mutex` held;
    // the pthread objects are allocated once and freed in deinit, after the thread has ended.
    public let clock: any EngineClock
    private let deliver: @Sendable ([DueEntry]) -> Void
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var heap = TimerHeap()
    private var stopping = false
    private var threadRunning = false
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - clock: the monotonic clock; the driver thread can only wait on the real one.
    ///   - deliver: receives the entries that came due, earliest first; must not block.
    public init(clock: any EngineClock = MonotonicClock(), deliver: @escaping @Sendable ([DueEntry]) -> Void) {
        self.clock = clock
        self.deliver = deliver
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// How many entries are scheduled.
    public var count: Int { locked { heap.count } }

    /// The entry of `key`, if scheduled.
    public func entry(for key: Int64) -> (run: Int32, kind: FireKind, due: Int64)? { locked { heap.entry(for: key) } }

    /// Schedules (or reschedules) `key` at engine millisecond `due`.
    public func schedule(key: Int64, run: Int32, kind: FireKind, due: Int64) {
        let earlier = locked { heap.schedule(key: key, run: run, kind: kind, due: due) }
        if earlier { pthread_cond_signal(condition) }
    }

    /// Removes `key`'s entry, if any; it will not fire.
    @discardableResult
    public func cancel(key: Int64) -> Bool {
        locked { heap.cancel(key: key) }
    }

    /// Loads many entries at once (start-up): O(n) instead of O(n log n).
    public func load(_ entries: some Sequence<(key: Int64, run: Int32, kind: FireKind, due: Int64)>, expectedCount: Int = 0) {
        locked {
            heap.reserveCapacity(heap.count + expectedCount)
            for entry in entries { heap.appendUnordered(key: entry.key, run: entry.run, kind: entry.kind, due: entry.due) }
            heap.heapify()
        }
        pthread_cond_signal(condition)
    }

    /// One tick: pops every entry due at the clock's now and delivers them; returns how many.
    /// The driver thread calls it; tests with a manual clock call it directly.
    @discardableResult
    public func fireDue() -> Int {
        var due: [DueEntry] = []
        let now = clock.milliseconds()
        locked { heap.popDue(now: now, into: &due) }
        if !due.isEmpty { deliver(due) }
        return due.count
    }

    /// The earliest deadline, if any.
    public var nextDue: Int64? { locked { heap.nextDue } }

    // MARK: The driver thread

    /// Starts the driver thread (with the real monotonic clock).
    public func start() {
        let alreadyRunning = locked {
            defer { threadRunning = true; stopping = false }
            return threadRunning
        }
        guard !alreadyRunning else { return }
        startThread(named: "timer-engine", qualityOfService: .userInteractive) { [self] in
            blockSignals()
            drive()
            finished.signal()
        }
    }

    /// Stops the driver thread and waits for it; entries stay scheduled.
    public func stop() {
        let wasRunning = locked {
            stopping = true
            return threadRunning
        }
        guard wasRunning else { return }
        pthread_cond_signal(condition)
        finished.wait()
        locked { threadRunning = false }
    }

    private func drive() {
        while true {
            fireDue()
            pthread_mutex_lock(mutex)
            if stopping {
                pthread_mutex_unlock(mutex)
                return
            }
            // Re-check under the lock: an entry scheduled between fireDue and here signalled
            // nobody, but it is in the heap now.
            let next = heap.nextDue
            if let next, next <= clock.milliseconds() {
                pthread_mutex_unlock(mutex)
                continue
            }
            if let next {
                var deadline = timespec(tv_sec: Int(next / 1000), tv_nsec: Int(next % 1000) * 1_000_000)
                pthread_cond_timedwait(condition, mutex, &deadline)
            } else {
                pthread_cond_wait(condition, mutex)
            }
            pthread_mutex_unlock(mutex)
        }
    }

    private func blockSignals() {
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, nil)
    }
}
