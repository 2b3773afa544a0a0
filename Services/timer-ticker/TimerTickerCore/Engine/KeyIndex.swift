/// Engine key -> heap slot, for keys that are database row numbers: dense, growing, mostly
/// recent. A two-level table (pages of 4,096 keys, allocated on first use and freed when empty)
/// finds a key with one memory access into its page, where a hash table of a million entries
/// costs several cache misses; memory follows the ranges of live keys, not the largest key.
struct KeyIndex: Sendable {
    private static let shift: Int64 = 12
    private static let pageSize = 1 << 12
    /// Each page holds `pageSize` slots (-1 = none) and, last, its count of live keys.
    private var pages: [Int64: [Int32]] = [:]
    /// How many keys are present.
    private(set) var count = 0

    /// The slot of `key`, if present.
    subscript(key: Int64) -> Int32? {
        guard let slot = pages[key >> Self.shift]?[Int(key & Int64(Self.pageSize - 1))], slot >= 0 else { return nil }
        return slot
    }

    /// Sets the slot of `key`, which must not be present.
    mutating func insert(_ key: Int64, slot: Int32) {
        let page = key >> Self.shift
        if pages[page] == nil {
            var fresh = [Int32](repeating: -1, count: Self.pageSize + 1)
            fresh[Self.pageSize] = 0
            pages[page] = fresh
        }
        pages[page]![Int(key & Int64(Self.pageSize - 1))] = slot
        pages[page]![Self.pageSize] += 1
        count += 1
    }

    /// Removes `key`; returns its slot if it was present.
    mutating func remove(_ key: Int64) -> Int32? {
        let page = key >> Self.shift
        let index = Int(key & Int64(Self.pageSize - 1))
        guard let slot = pages[page]?[index], slot >= 0 else { return nil }
        pages[page]![index] = -1
        pages[page]![Self.pageSize] -= 1
        if pages[page]![Self.pageSize] == 0 { pages[page] = nil }
        count -= 1
        return slot
    }
}
