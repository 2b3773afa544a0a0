/// What a scheduled entry does when it comes due.
public enum FireKind: UInt8, Sendable {
    /// A running timer reaches its end.
    case completion
    /// A completed `discard` timer reaches its `pendingDeletionAt`.
    case discard
}

/// One entry that came due.
public struct DueEntry: Sendable, Equatable {
    /// The timer's engine key (its row number in the database).
    public var key: Int64
    /// The run the entry was scheduled for; a fire for an older run is ignored.
    public var run: Int32
    /// What to do now.
    public var kind: FireKind
    /// When it was due, in engine milliseconds.
    public var due: Int64
}

/// An indexed 4-ary min-heap of timer deadlines: schedule and reschedule by key in O(log n),
/// cancel in O(1) amortized, the earliest deadline in O(1), every due entry popped in O(k log n).
///
/// Entries live in slot arrays (structure of arrays, no per-entry allocation); the heap holds
/// (deadline, slot) pairs so that sifting compares deadlines without chasing pointers, and each
/// slot remembers its heap position so that a reschedule finds its entry at once. A 4-ary heap is
/// half as deep as a binary one and its four children share one cache line.
///
/// A cancel only marks its slot dead (a tombstone) and forgets the key: the node leaves the heap
/// when it reaches the top, or when tombstones outnumber live entries and the heap is rebuilt
/// (O(n), so O(1) per cancel amortized). The top of the heap is never a tombstone.
public struct TimerHeap: Sendable {
    private struct Node {
        var due: Int64
        var slot: Int32
    }

    private var heap: [Node] = []
    private var slotKeys: [Int64] = []
    private var slotRuns: [Int32] = []
    private var slotKinds: [FireKind] = []
    private var slotPositions: [Int32] = []
    private var freeSlots: [Int32] = []
    private var slotOfKey = KeyIndex()
    private var tombstones = 0
    /// The key of a cancelled slot whose node is still in the heap.
    private static let dead = Int64.min

    /// An empty heap.
    public init() {}

    /// How many entries are scheduled.
    public var count: Int { slotOfKey.count }

    /// The earliest deadline, if any.
    public var nextDue: Int64? { heap.first?.due }

    /// Reserves room for `capacity` entries (before a bulk load).
    public mutating func reserveCapacity(_ capacity: Int) {
        heap.reserveCapacity(capacity)
        slotKeys.reserveCapacity(capacity)
        slotRuns.reserveCapacity(capacity)
        slotKinds.reserveCapacity(capacity)
        slotPositions.reserveCapacity(capacity)
    }

    /// Whether `key` is scheduled, and for which run and kind.
    public func entry(for key: Int64) -> (run: Int32, kind: FireKind, due: Int64)? {
        guard let slot = slotOfKey[key] else { return nil }
        let index = Int(slot)
        return (slotRuns[index], slotKinds[index], heap[Int(slotPositions[index])].due)
    }

    /// Schedules `key` at `due`, replacing any entry it had. Returns whether the earliest
    /// deadline moved earlier (the driver must wake up).
    @discardableResult
    public mutating func schedule(key: Int64, run: Int32, kind: FireKind, due: Int64) -> Bool {
        let previousFirst = heap.first?.due
        if let slot = slotOfKey[key] {
            let index = Int(slot)
            slotRuns[index] = run
            slotKinds[index] = kind
            let position = Int(slotPositions[index])
            let old = heap[position].due
            heap[position].due = due
            if due < old { siftUp(position) } else { siftDown(position) }
        } else {
            let slot = allocateSlot(key: key, run: run, kind: kind)
            heap.append(Node(due: due, slot: slot))
            slotPositions[Int(slot)] = Int32(heap.count - 1)
            siftUp(heap.count - 1)
        }
        purgeTop()
        return previousFirst.map { (heap.first?.due ?? due) < $0 } ?? true
    }

    /// Adds an entry without restoring heap order; call ``heapify()`` after the last one.
    /// For loading many entries at once (O(n) in total instead of O(n log n)).
    public mutating func appendUnordered(key: Int64, run: Int32, kind: FireKind, due: Int64) {
        if slotOfKey[key] != nil { cancel(key: key) }
        let slot = allocateSlot(key: key, run: run, kind: kind)
        heap.append(Node(due: due, slot: slot))
        slotPositions[Int(slot)] = Int32(heap.count - 1)
    }

    /// Restores heap order after ``appendUnordered(key:run:kind:due:)``.
    public mutating func heapify() {
        guard heap.count > 1 else { return }
        var index = (heap.count - 2) / 4
        while index >= 0 {
            siftDown(index)
            index -= 1
        }
        purgeTop()
    }

    /// Removes `key`'s entry; returns whether there was one.
    @discardableResult
    public mutating func cancel(key: Int64) -> Bool {
        guard let slot = slotOfKey.remove(key) else { return false }
        slotKeys[Int(slot)] = Self.dead
        tombstones += 1
        if slotPositions[Int(slot)] == 0 {
            purgeTop()
        } else if tombstones > 1024 && tombstones * 2 > heap.count {
            compact()
        }
        return true
    }

    /// Removes and returns every entry due at or before `now`, earliest first.
    public mutating func popDue(now: Int64, into output: inout [DueEntry]) {
        while let first = heap.first, first.due <= now {
            let index = Int(first.slot)
            let key = slotKeys[index]
            output.append(DueEntry(key: key, run: slotRuns[index], kind: slotKinds[index], due: first.due))
            _ = slotOfKey.remove(key)
            freeSlots.append(first.slot)
            removeNode(at: 0)
            purgeTop()
        }
    }

    // MARK: Internals

    /// Drops tombstones from the top until a live entry (or nothing) is there.
    private mutating func purgeTop() {
        while let first = heap.first, slotKeys[Int(first.slot)] == Self.dead {
            freeSlots.append(first.slot)
            tombstones -= 1
            removeNode(at: 0)
        }
    }

    /// Rebuilds the heap without its tombstones.
    private mutating func compact() {
        var live: [Node] = []
        live.reserveCapacity(heap.count - tombstones)
        for node in heap {
            if slotKeys[Int(node.slot)] == Self.dead {
                freeSlots.append(node.slot)
            } else {
                slotPositions[Int(node.slot)] = Int32(live.count)
                live.append(node)
            }
        }
        heap = live
        tombstones = 0
        heapify()
    }

    private mutating func allocateSlot(key: Int64, run: Int32, kind: FireKind) -> Int32 {
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            let index = Int(slot)
            slotKeys[index] = key
            slotRuns[index] = run
            slotKinds[index] = kind
        } else {
            slot = Int32(slotKeys.count)
            slotKeys.append(key)
            slotRuns.append(run)
            slotKinds.append(kind)
            slotPositions.append(0)
        }
        slotOfKey.insert(key, slot: slot)
        return slot
    }

    private mutating func removeNode(at position: Int) {
        let last = heap.removeLast()
        guard position < heap.count else { return }
        heap[position] = last
        slotPositions[Int(last.slot)] = Int32(position)
        if position > 0 && last.due < heap[(position - 1) / 4].due { siftUp(position) } else { siftDown(position) }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        let node = heap[child]
        while child > 0 {
            let parent = (child - 1) / 4
            guard node.due < heap[parent].due else { break }
            heap[child] = heap[parent]
            slotPositions[Int(heap[child].slot)] = Int32(child)
            child = parent
        }
        heap[child] = node
        slotPositions[Int(node.slot)] = Int32(child)
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let node = heap[parent]
        let count = heap.count
        while true {
            let first = 4 * parent + 1
            guard first < count else { break }
            var smallest = first
            var smallestDue = heap[first].due
            let end = min(first + 4, count)
            var child = first + 1
            while child < end {
                if heap[child].due < smallestDue {
                    smallest = child
                    smallestDue = heap[child].due
                }
                child += 1
            }
            guard smallestDue < node.due else { break }
            heap[parent] = heap[smallest]
            slotPositions[Int(heap[parent].slot)] = Int32(parent)
            parent = smallest
        }
        heap[parent] = node
        slotPositions[Int(node.slot)] = Int32(parent)
    }
}
