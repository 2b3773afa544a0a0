import Foundation
import Synchronization
import Testing
import TimerTickerCore

/// Collects what an engine fires, with the engine time it fired at.
final class FireLog: Sendable {
    let fired = Mutex<[(entry: DueEntry, at: Int64)]>([])
    let clock: any EngineClock
    init(clock: any EngineClock) { self.clock = clock }
    func record(_ entries: [DueEntry]) {
        let now = clock.milliseconds()
        fired.withLock { $0 += entries.map { ($0, now) } }
    }
    func drain() -> [(entry: DueEntry, at: Int64)] {
        fired.withLock { fired in
            defer { fired.removeAll() }
            return fired
        }
    }
}

@Suite("Timer engine")
struct EngineTests {
    @Test("over 100,000 randomized timers with reschedules and cancels, none fires early, none more than one tick late, each once")
    func randomizedFireTimes() async throws {
        var random = SystemRandomNumberGenerator()
        let clock = ManualEngineClock(milliseconds: 1_000)
        let log = FireLog(clock: clock)
        let engine = TimerEngine(clock: clock) { log.record($0) }
        var expected: [Int64: Int64] = [:]  // key -> due of its live entry
        var cancelled = Set<Int64>()
        var nextKey: Int64 = 1
        func scheduleRandom(count: Int) {
            for _ in 0..<count {
                let key = nextKey
                nextKey += 1
                let due = engine.clock.deadline(afterMilliseconds: Int64.random(in: 0...86_400, using: &random))
                engine.schedule(key: key, run: 1, kind: .completion, due: due)
                expected[key] = due
            }
        }
        scheduleRandom(count: 90_000)
        var rounds = 0
        while engine.nextDue != nil || nextKey <= 100_000 {
            // A long CPU-bound loop: let the other tests' tasks have the cooperative threads.
            rounds += 1
            if rounds % 500 == 0 { await Task.yield() }
            // Meanwhile: new timers, reschedules and cancels of live ones.
            if nextKey <= 100_000 && Int.random(in: 0..<10, using: &random) == 0 { scheduleRandom(count: 50) }
            let key = Int64.random(in: 1..<nextKey, using: &random)
            if expected[key] != nil, Int.random(in: 0..<20, using: &random) == 0 {
                if Bool.random(using: &random) {
                    #expect(engine.cancel(key: key))
                    expected[key] = nil
                    cancelled.insert(key)
                } else {
                    let due = engine.clock.deadline(afterMilliseconds: Int64.random(in: 0...10_000, using: &random))
                    engine.schedule(key: key, run: 2, kind: .completion, due: due)
                    expected[key] = due
                }
            }
            // The driver sleeps until the earliest deadline and wakes within one tick of it.
            guard let next = engine.nextDue else { continue }
            clock.set(milliseconds: next + Int64.random(in: 0...1, using: &random))
            engine.fireDue()
            for (entry, at) in log.drain() {
                let live: Int64? = expected.removeValue(forKey: entry.key)
                let due = try #require(live, "a key fired twice, or after its cancel")
                #expect(entry.due == due)
                #expect(at >= due, "fired early: due \(due), fired \(at)")
                #expect(at <= due + 1, "fired more than one tick late: due \(due), fired \(at)")
            }
        }
        #expect(expected.isEmpty, "\(expected.count) timers never fired")
        #expect(cancelled.count > 100)
        #expect(engine.count == 0)
    }

    @Test("cancelling most entries (tombstones, then a rebuild) leaves exactly the others, popped in deadline order")
    func massCancel() {
        var heap = TimerHeap()
        var dues: [Int64: Int64] = [:]
        for key in 1...20_000 as ClosedRange<Int64> {
            let due = Int64.random(in: 0...1_000_000)
            heap.schedule(key: key, run: 1, kind: .completion, due: due)
            dues[key] = due
        }
        for key in (1...20_000 as ClosedRange<Int64>).shuffled().prefix(18_000) {
            let cancelled = heap.cancel(key: key)
            #expect(cancelled)
            dues[key] = nil
        }
        let unknown = heap.cancel(key: 0)
        #expect(!unknown)
        #expect(heap.count == 2_000)
        for key in dues.keys.shuffled().prefix(500) {
            let due = Int64.random(in: 0...1_000_000)
            heap.schedule(key: key, run: 2, kind: .discard, due: due)
            dues[key] = due
        }
        var popped: [DueEntry] = []
        heap.popDue(now: .max, into: &popped)
        #expect(popped.count == 2_000 && heap.count == 0 && heap.nextDue == nil)
        #expect(popped.map(\.due) == popped.map(\.due).sorted())
        #expect(Dictionary(uniqueKeysWithValues: popped.map { ($0.key, $0.due) }) == dues)
    }

    @Test("a deadline is rounded up to the next millisecond, so firing at it is never early")
    func deadlineRounding() {
        let clock = ManualEngineClock(milliseconds: 10)
        #expect(clock.deadline(afterMilliseconds: 5) == 15)
        #expect(clock.deadline(afterMilliseconds: -3) == 10)
        let real = MonotonicClock()
        let start = real.nanoseconds()
        let deadline = real.deadline(afterMilliseconds: 0)
        #expect(deadline * 1_000_000 >= start)
    }

    @Test("the driver thread fires on the monotonic clock, never early, and wakes for a new earliest deadline")
    func realDriver() async throws {
        let clock = MonotonicClock()
        let log = FireLog(clock: clock)
        let engine = TimerEngine { log.record($0) }
        engine.start()
        engine.schedule(key: 1, run: 1, kind: .completion, due: clock.deadline(afterMilliseconds: 60_000))
        var dues: [Int64: Int64] = [:]
        for key in 2...201 as ClosedRange<Int64> {
            let due = clock.deadline(afterMilliseconds: Int64.random(in: 0...300))
            engine.schedule(key: key, run: 1, kind: .completion, due: due)
            dues[key] = due
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while log.fired.withLock({ $0.count }) < 200 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        engine.stop()
        let fired = log.fired.withLock { $0 }
        #expect(fired.count == 200)
        #expect(fired.allSatisfy { $0.at >= dues[$0.entry.key]! })
        #expect(engine.count == 1)
    }
}
