/// A binary min-heap ordered by `key`; used for deadlines on the I/O thread.
struct MinHeap<Key: Comparable, Value> {
    private var storage: [(key: Key, value: Value)] = []

    var isEmpty: Bool { storage.isEmpty }
    var count: Int { storage.count }
    var minimum: (key: Key, value: Value)? { storage.first }

    init() {}

    /// A heap of `entries`, built in linear time.
    init(_ entries: [(Key, Value)]) {
        storage = entries.map { (key: $0.0, value: $0.1) }
        for parent in stride(from: storage.count / 2 - 1, through: 0, by: -1) { siftDown(parent) }
    }

    mutating func insert(_ key: Key, _ value: Value) {
        storage.append((key, value))
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard storage[child].key < storage[parent].key else { break }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    mutating func removeMinimum() -> (key: Key, value: Value)? {
        guard !storage.isEmpty else { return nil }
        storage.swapAt(0, storage.count - 1)
        let top = storage.removeLast()
        siftDown(0)
        return top
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < storage.count && storage[left].key < storage[smallest].key { smallest = left }
            if right < storage.count && storage[right].key < storage[smallest].key { smallest = right }
            guard smallest != parent else { return }
            storage.swapAt(parent, smallest)
            parent = smallest
        }
    }

    mutating func removeAll() { storage.removeAll() }
}
