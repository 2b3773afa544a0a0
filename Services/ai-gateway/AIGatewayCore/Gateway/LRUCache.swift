/// A least-recently-used cache of fixed capacity: a dictionary into a doubly linked list kept in
/// arrays (no per-entry objects). Reading an entry makes it the most recent; adding one to a
/// full cache evicts the least recent. Not thread-safe: its owner serializes access.
struct LRUCache<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var newer: Int
        var older: Int
    }

    let capacity: Int
    private var slots: [Key: Int] = [:]
    private var nodes: [Node] = []
    /// Most recent and least recent node, -1 when empty.
    private var newest = -1
    private var oldest = -1

    init(capacity: Int) {
        precondition(capacity >= 1, "an LRU cache holds at least one entry")
        self.capacity = capacity
    }

    var count: Int { slots.count }

    /// The value for `key`, which becomes the most recent.
    mutating func get(_ key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        moveToFront(slot)
        return nodes[slot].value
    }

    /// The value for `key` without changing the order.
    func peek(_ key: Key) -> Value? {
        slots[key].map { nodes[$0].value }
    }

    /// Stores `value` as the most recent; returns the evicted entry's key, if one was evicted.
    @discardableResult
    mutating func set(_ key: Key, _ value: Value) -> Key? {
        if let slot = slots[key] {
            nodes[slot].value = value
            moveToFront(slot)
            return nil
        }
        if nodes.count < capacity {
            nodes.append(Node(key: key, value: value, newer: -1, older: -1))
            let slot = nodes.count - 1
            slots[key] = slot
            linkAtFront(slot)
            return nil
        }
        // Reuse the oldest node for the new entry.
        let slot = oldest
        let evicted = nodes[slot].key
        unlink(slot)
        slots[evicted] = nil
        nodes[slot] = Node(key: key, value: value, newer: -1, older: -1)
        slots[key] = slot
        linkAtFront(slot)
        return evicted
    }

    /// Removes `key`'s entry.
    mutating func remove(_ key: Key) {
        guard let slot = slots.removeValue(forKey: key) else { return }
        unlink(slot)
        // Keep the arrays dense: move the last node into the freed slot.
        let last = nodes.count - 1
        if slot != last {
            let moved = nodes[last]
            nodes[slot] = moved
            slots[moved.key] = slot
            if moved.newer >= 0 { nodes[moved.newer].older = slot } else { newest = slot }
            if moved.older >= 0 { nodes[moved.older].newer = slot } else { oldest = slot }
        }
        nodes.removeLast()
    }

    /// The keys from most to least recent.
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            keys.append(nodes[slot].key)
            slot = nodes[slot].older
        }
        return keys
    }

    private mutating func moveToFront(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAtFront(slot)
    }

    private mutating func unlink(_ slot: Int) {
        let node = nodes[slot]
        if node.newer >= 0 { nodes[node.newer].older = node.older } else { newest = node.older }
        if node.older >= 0 { nodes[node.older].newer = node.newer } else { oldest = node.newer }
        nodes[slot].newer = -1
        nodes[slot].older = -1
    }

    private mutating func linkAtFront(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }
}
