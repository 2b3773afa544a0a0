import Foundation

/// RIFF WAVE with 16-bit signed little-endian PCM, mono: what `speak` returns by default and what
/// the offline recognizer reads.
enum WAV {
    /// The 44-byte canonical header followed by `samples`.
    static func encode(_ samples: [Int16], sampleRate: Int) -> Data {
        let dataBytes = samples.count * 2
        var data = Data(capacity: 44 + dataBytes)
        func append<Value: FixedWidthInteger>(_ value: Value) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8))
        append(UInt32(36 + dataBytes))
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16))  // fmt chunk size
        append(UInt16(1))  // PCM
        append(UInt16(1))  // mono
        append(UInt32(sampleRate))
        append(UInt32(sampleRate * 2))  // bytes per second
        append(UInt16(2))  // block align
        append(UInt16(16))  // bits per sample
        data.append(contentsOf: Array("data".utf8))
        append(UInt32(dataBytes))
        samples.withUnsafeBufferPointer { buffer in
            #if _endian(little)
                data.append(contentsOf: UnsafeRawBufferPointer(buffer))
            #else
                for sample in buffer { append(sample) }
            #endif
        }
        return data
    }

    /// Little-endian 16-bit samples from raw bytes (an odd last byte is dropped).
    static func samples(fromPCM bytes: Data) -> [Int16] {
        let count = bytes.count / 2
        var samples = [Int16](repeating: 0, count: count)
        bytes.withUnsafeBytes { raw in
            for index in 0..<count { samples[index] = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: index * 2, as: Int16.self)) }
        }
        return samples
    }

    /// The samples and rate of a 16-bit PCM mono WAV as ``encode(_:sampleRate:)`` writes it
    /// (the cache's format); nil for anything else.
    static func decode(_ data: Data) -> (samples: [Int16], sampleRate: Int)? {
        guard data.count >= 44, data.prefix(4) == Data("RIFF".utf8), data.dropFirst(8).prefix(8) == Data("WAVEfmt ".utf8) else { return nil }
        func read<Value: FixedWidthInteger>(_ offset: Int, _: Value.Type) -> Value {
            data.withUnsafeBytes { Value(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: Value.self)) }
        }
        guard read(20, UInt16.self) == 1, read(22, UInt16.self) == 1, read(34, UInt16.self) == 16, data.dropFirst(36).prefix(4) == Data("data".utf8)
        else { return nil }
        let sampleRate = Int(read(24, UInt32.self))
        let bytes = min(Int(read(40, UInt32.self)), data.count - 44)
        guard (1...384_000).contains(sampleRate) else { return nil }
        return (samples(fromPCM: data.dropFirst(44).prefix(bytes)), sampleRate)
    }
}
