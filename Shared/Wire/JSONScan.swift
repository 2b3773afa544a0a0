/// Finds where a run of string bytes that need no attention ends, eight bytes at a time: every
/// JSON string read and written is scanned, and payload texts run to thousands of bytes.
enum JSONScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The index of the first byte at or after `start` that is a quote, a backslash or a control
    /// character, or (unless `allowNonASCII`) a byte of a multi-byte UTF-8 sequence; `bytes.count`
    /// if there is none.
    static func plainRunEnd(_ bytes: UnsafeRawBufferPointer, from start: Int, allowNonASCII: Bool) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let count = bytes.count
        var index = start
        while index + 8 <= count {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            // A zero byte in `word ^ byte * ones` is that byte; `(x - n * ones) & ~x` has the high
            // bit set in some byte exactly when some byte of x is below n (n <= 0x80).
            var flags = hasZeroByte(word ^ (0x22 &* ones)) | hasZeroByte(word ^ (0x5C &* ones)) | ((word &- 0x20 &* ones) & ~word & highBits)
            if !allowNonASCII { flags |= word & highBits }
            if flags != 0 { break }
            index += 8
        }
        while index < count {
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            if byte == 0x22 || byte == 0x5C || byte < 0x20 || (byte >= 0x80 && !allowNonASCII) { return index }
            index += 1
        }
        return count
    }

    private static func hasZeroByte(_ word: UInt64) -> UInt64 {
        (word &- ones) & ~word & highBits
    }
}
