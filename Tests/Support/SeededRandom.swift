import Glibc

/// Deterministic "random" numbers: erand48 with a state of our own, the same on every run.
public struct SeededRandom: RandomNumberGenerator {
    private var state: [UInt16]
    public init(seed: UInt64) { state = [UInt16(truncatingIfNeeded: seed), UInt16(truncatingIfNeeded: seed >> 16), 0x330E] }
    public mutating func next() -> UInt64 { UInt64(erand48(&state) * Double(UInt64.max >> 11)) << 11 }
}
