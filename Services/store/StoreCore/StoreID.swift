import Contracts
import Foundation
import Wire

/// The store's ids: a create may carry the client's own (an id as
/// ``Field/id(_:_:maximum:allowed:)`` checks it); otherwise the store makes one.
enum StoreID {
    /// A new id: a lowercase UUID of version 7 (RFC 9562), whose leading milliseconds make
    /// new rows land at the end of the id indexes instead of all over them.
    static func new() -> String {
        let high = UInt64(Date().unixMilliseconds) << 16 | 0x7000 | UInt64.random(in: 0...0x0FFF)
        let low = 0x8000_0000_0000_0000 | UInt64.random(in: 0...0x3FFF_FFFF_FFFF_FFFF)
        // Written in place: a put makes an id for each of thousands of rows.
        return String(unsafeUninitializedCapacity: 36) { text in
            var nibble = 0
            for index in 0..<36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    text[index] = UInt8(ascii: "-")
                    continue
                }
                let word = nibble < 16 ? high : low
                let value = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (nibble % 16)) & 0xF)
                text[index] = value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
                nibble += 1
            }
            return 36
        }
    }

    /// The id a create request chose (field `id`), or a new one.
    static func givenOrNew(_ id: String?) throws(BusError) -> String {
        try Field.optionalID(id, "id") ?? new()
    }

    /// A reference to another record that may be cleared: nil and "" both mean none.
    static func reference(_ id: String?, _ field: @autoclosure () -> String) throws(BusError) -> String? {
        guard let id, !id.isEmpty else { return nil }
        return try Field.id(id, field())
    }
}

extension Field {
    /// Labels (tags, keywords): at most `maximum` of them, each not blank and at most
    /// ``StoreLimits/labelLength`` characters; surrounding white space trimmed, duplicates
    /// dropped, order kept.
    static func labels(_ values: [String]?, _ name: @autoclosure () -> String, maximum: Int) throws(BusError) -> [String] {
        guard let values else { return [] }
        try count(values, name(), in: 0...maximum)
        var seen = Set<String>()
        var result: [String] = []
        for (index, value) in values.enumerated() {
            let label = try text(value, "\(name())[\(index)]", maximum: StoreLimits.labelLength, trimming: true)
            if seen.insert(label).inserted { result.append(label) }
        }
        return result
    }
}
