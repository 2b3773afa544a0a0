import Foundation
import ZIPFoundation

/// One entry of a zip held in memory, inflated from its own compressed bytes only, its CRC-32
/// checked: ZIPFoundation's own extraction reads past an entry's data and, at the end of the
/// file, loops forever on a deflate stream that never ends. Here running out of the entry's
/// bytes is an error. For zips that arrive from outside (ingest's documents, Anki packages).
public enum ZipEntryBytes {
    /// The entry's data ends before its compressed stream does, or its CRC-32 does not match.
    public struct Damaged: Error {}

    /// Hands `entry` (named `path`) of the zip `bytes` to `consume` chunk by chunk; an error
    /// `consume` throws (a limit reached) ends the inflation and is thrown as it is.
    /// - Throws: ``Damaged``, or what `consume` throws.
    public static func inflate(_ entry: Entry, path: String, in bytes: [UInt8], consume: (Data) throws -> Void) throws {
        guard let start = localDataOffset(of: path, in: bytes), let size = Int(exactly: entry.compressedSize),
              size <= bytes.count - start else { throw Damaged() }
        let input = bytes[start..<(start + size)]
        guard entry.isCompressed else {
            let stored = Data(input)
            guard stored.crc32(checksum: 0) == entry.checksum else { throw Damaged() }
            try consume(stored)
            return
        }
        var offset = input.startIndex
        let checksum = try Data.decompress(
            size: Int64(size), bufferSize: 64 * 1024, skipCRC32: false,
            provider: { _, chunkSize in
                guard offset < input.endIndex else { throw Damaged() }
                let end = min(offset + chunkSize, input.endIndex)
                defer { offset = end }
                return Data(input[offset..<end])
            }, consumer: consume)
        guard checksum == entry.checksum else { throw Damaged() }
    }

    /// Where the data of the local file header named `path` starts: the header's 30 bytes, the
    /// name and the extra field after the first `PK\u{3}\u{4}` header with that name.
    static func localDataOffset(of path: String, in bytes: [UInt8]) -> Int? {
        let name = Array(path.utf8)
        var index = 0
        while index + 30 + name.count <= bytes.count {
            if bytes[index] == 0x50, bytes[index + 1] == 0x4B, bytes[index + 2] == 0x03, bytes[index + 3] == 0x04 {
                let nameLength = Int(bytes[index + 26]) | Int(bytes[index + 27]) << 8
                let extraLength = Int(bytes[index + 28]) | Int(bytes[index + 29]) << 8
                if nameLength == name.count, bytes[(index + 30)..<(index + 30 + nameLength)].elementsEqual(name) {
                    return index + 30 + nameLength + extraLength
                }
            }
            index += 1
        }
        return nil
    }
}
