/// The next occurrence of a short byte pattern at or after a position, for searches whose
/// starting points only move forward (a scanner's cursor): the last answer is kept, so in all
/// every byte is looked at about once, however many searches start before one match.
/// (Without it a line of ten thousand `[` looking for a `]` is searched ten thousand times.)
struct ForwardSearch {
    let pattern: [UInt8]
    /// The last search's start and its answer (nil: none up to the end).
    private var last: (from: Int, found: Int?)?

    init(_ pattern: [UInt8]) {
        precondition(!pattern.isEmpty)
        self.pattern = pattern
    }

    /// The index of the first occurrence of the pattern in `bytes` at or after `start`.
    mutating func find<Bytes: RandomAccessCollection<UInt8>>(in bytes: Bytes, from start: Int) -> Int? where Bytes.Index == Int {
        if let last, start >= last.from {
            guard let found = last.found else { return nil }
            if start <= found { return found }
        }
        var index = max(start, bytes.startIndex)
        var found: Int?
        while index + pattern.count <= bytes.endIndex {
            if bytes[index] == pattern[0], pattern.indices.dropFirst().allSatisfy({ bytes[index + $0] == pattern[$0] }) {
                found = index
                break
            }
            index += 1
        }
        last = (start, found)
        return found
    }
}
