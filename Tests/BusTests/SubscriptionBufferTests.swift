@testable import Bus
import Foundation
import Synchronization
import TestSupport
import Testing
@testable import Wire

/// The hand-off between the I/O thread and a subscription's iterator, driven directly.
@Suite("Subscription buffer")
struct SubscriptionBufferTests {
    private func events(_ range: ClosedRange<Int>) -> [RawEvent] {
        range.map { RawEvent(topic: "t.\($0)", header: Data(), payload: Data()) }
    }

    private func topics(_ batch: RawEventBatch, count: Int) async -> [String] {
        var topics: [String] = []
        for _ in 0..<count {
            guard let event = await batch.next() else { break }
            topics.append(event.topic)
        }
        return topics
    }

    @Test("events are handed over in order, and beyond the limit the newest are dropped")
    func boundedDropsNewest() async {
        let buffer = SubscriptionBuffer(limit: 4)
        var batch = events(1...3)
        #expect(buffer.deliver(&batch) == 0)
        #expect(batch.isEmpty)
        batch = events(4...6)
        #expect(buffer.deliver(&batch) == 2)
        let iterator = RawEventBatch(lifetime: SubscriptionLifetime(buffer: buffer))
        #expect(await topics(iterator, count: 4) == ["t.1", "t.2", "t.3", "t.4"])
    }

    @Test("events the iterator has taken but not returned count against the limit")
    func inHandCounts() async {
        let buffer = SubscriptionBuffer(limit: 4)
        var batch = events(1...4)
        buffer.deliver(&batch)
        let iterator = RawEventBatch(lifetime: SubscriptionLifetime(buffer: buffer))
        #expect(await topics(iterator, count: 1) == ["t.1"])  // takes all four, returns one
        batch = events(5...7)
        #expect(buffer.deliver(&batch) == 2)  // three still in hand: room for one
        #expect(await topics(iterator, count: 4) == ["t.2", "t.3", "t.4", "t.5"])
    }

    @Test("beyond the byte limit the newest are dropped; held bytes count until returned; one event always fits")
    func boundedInBytes() async {
        // Each event is 1 byte of topic and 99 of payload: 100 bytes.
        func sized(_ range: ClosedRange<Int>, bytes: Int = 100) -> [RawEvent] {
            range.map { RawEvent(topic: "\($0 % 10)", header: Data(), payload: Data(count: bytes - 1)) }
        }
        let buffer = SubscriptionBuffer(limit: 1000, byteLimit: 350)
        var batch = sized(1...5)
        #expect(buffer.deliver(&batch) == 2, "three of 100 bytes fit 350")
        let iterator = RawEventBatch(lifetime: SubscriptionLifetime(buffer: buffer))
        #expect(await topics(iterator, count: 1) == ["1"])  // takes three, returns one: 200 bytes in hand
        batch = sized(6...7)
        #expect(buffer.deliver(&batch) == 1)
        #expect(await topics(iterator, count: 3) == ["2", "3", "6"])
        // Empty again: an event larger than the whole limit is still delivered, alone.
        batch = sized(8...9, bytes: 1000)
        #expect(buffer.deliver(&batch) == 1)
        #expect(await topics(iterator, count: 1) == ["8"])
    }

    @Test("a waiting iterator is woken by the next batch")
    func wakesWaiter() async throws {
        let buffer = SubscriptionBuffer(limit: 100)
        let lifetime = SubscriptionLifetime(buffer: buffer)
        let received = Task { await topics(RawEventBatch(lifetime: lifetime), count: 2) }
        try await Task.sleep(for: .milliseconds(20))
        var batch = events(1...2)
        buffer.deliver(&batch)
        #expect(await received.value == ["t.1", "t.2"])
    }

    @Test("after finish the iterator returns what is waiting, then ends")
    func finishDrains() async {
        let buffer = SubscriptionBuffer(limit: 10)
        var batch = events(1...2)
        buffer.deliver(&batch)
        buffer.finish()
        batch = events(3...3)
        #expect(buffer.deliver(&batch) == 0)  // ignored once finished
        let iterator = RawEventBatch(lifetime: SubscriptionLifetime(buffer: buffer))
        #expect(await topics(iterator, count: 5) == ["t.1", "t.2"])
        #expect(await iterator.next() == nil)
    }

    @Test("cancelling the waiting task ends the subscription and runs its termination once")
    func cancellationTerminates() async throws {
        let buffer = SubscriptionBuffer(limit: 10)
        let terminations = Atomic<Int>(0)
        buffer.setOnTermination { terminations.add(1, ordering: .relaxed) }
        let lifetime = SubscriptionLifetime(buffer: buffer)
        let waiting = Task { await RawEventBatch(lifetime: lifetime).next() == nil }
        try await Task.sleep(for: .milliseconds(20))
        waiting.cancel()
        #expect(await waiting.value)
        buffer.terminate()
        #expect(terminations.load(ordering: .relaxed) == 1)
    }

    @Test("when the subscription and its iterators are gone, the subscription ends")
    func lifetimeEnds() {
        let buffer = SubscriptionBuffer(limit: 10)
        let terminations = Atomic<Int>(0)
        buffer.setOnTermination { terminations.add(1, ordering: .relaxed) }
        do {
            let lifetime = SubscriptionLifetime(buffer: buffer)
            _ = RawEventBatch(lifetime: lifetime)
        }
        #expect(terminations.load(ordering: .relaxed) == 1)
    }

    @Test("an iterator that goes away puts back what it did not return, for the next one")
    func giveBack() async {
        let buffer = SubscriptionBuffer(limit: 10)
        let lifetime = SubscriptionLifetime(buffer: buffer)
        var batch = events(1...3)
        buffer.deliver(&batch)
        do {
            let first = RawEventBatch(lifetime: lifetime)
            #expect(await topics(first, count: 1) == ["t.1"])
        }
        batch = events(4...4)
        buffer.deliver(&batch)
        #expect(await topics(RawEventBatch(lifetime: lifetime), count: 3) == ["t.2", "t.3", "t.4"])
    }
}
