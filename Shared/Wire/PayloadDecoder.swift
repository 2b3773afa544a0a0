import Foundation

/// Decodes payload JSON (wire protocol §5) straight from its bytes, in the common case; where it
/// is not sure, Foundation's `JSONDecoder` (configured as `WireCoding.decoder()`) decides.
///
/// Every request, reply and event is decoded once, and Foundation's decoder would be the largest
/// single cost of a small call on the worker side. This one keeps no coding path and makes no
/// boxed values. It is strict: anything unusual — a number in exponent form for an integer, a key
/// with escapes or beyond ASCII, `Float`, `URL` or `Decimal`, an object of more than 64 members,
/// a super decoder — and every error, even one a type catches itself, make
/// ``decode(_:from:)`` return nil, and `WireCoding.decode` asks Foundation, whose answer
/// (value or error, with its coding path) is the one callers get.
package enum PayloadDecoder {
    /// The decoder could not decide; Foundation's will.
    struct Undecided: Error {}

    /// The value, or nil when Foundation's decoder must decide. Package access for the
    /// differential fuzzer, which holds it to Foundation's answer.
    package static func decode<Value: Decodable>(_ type: Value.Type, from bytes: UnsafeRawBufferPointer) -> Value? {
        // The whole document must be valid JSON, members no type reads too. An object's
        // members are checked as they are found; anything else is checked first.
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let start = parser.offset
        guard start < bytes.count else { return nil }
        let state = DecodingState(bytes: bytes)
        if bytes[start] == UInt8(ascii: "{") {
            guard let end = try? state.end(ofObjectAt: start) else { return nil }
            parser.offset = end
        } else {
            guard (try? parser.skipValue()) != nil else { return nil }
        }
        parser.skipWhitespace()
        guard parser.offset == bytes.count else { return nil }
        guard let value = try? state.decode(Value.self, at: start), !state.undecided else { return nil }
        return value
    }
}

/// The document and whether decoding gave up anywhere, shared by every decoder and container
/// of one ``PayloadDecoder/decode(_:from:)``.
private final class DecodingState {
    let bytes: UnsafeRawBufferPointer
    /// Set by every failure, so that one a type swallows (`try?`) still sends the document to
    /// Foundation's decoder.
    ///
    /// Dynamic exclusivity checks are off for the state: it belongs to one decode call on one
    /// thread, and no access to it spans the value's own init(from:) (which calls back in).
    @exclusivity(unchecked) private(set) var undecided = false
    /// Where each object scanned so far ends (just past its `}`), by where it starts: an array
    /// of objects moves past each element without reading it again.
    @exclusivity(unchecked) private var objectEnds: [Int: Int] = [:]
    /// The object scanned last (the root's, scanned twice otherwise), whose end is not in
    /// `objectEnds` yet: most payloads are one object, and need no table.
    @exclusivity(unchecked) private var lastObject: (start: Int, end: Int, members: [ObjectMember])?

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    func giveUp() -> PayloadDecoder.Undecided {
        undecided = true
        return PayloadDecoder.Undecided()
    }

    func parser(at offset: Int) -> JSONParser {
        var parser = JSONParser(bytes: bytes)
        parser.offset = offset
        return parser
    }

    /// Runs `body` on `parser`; a parse error gives up.
    private func parsing<Output>(_ parser: inout JSONParser, _ body: (inout JSONParser) throws(JSONParseError) -> Output) throws -> Output {
        do {
            return try body(&parser)
        } catch {
            throw giveUp()
        }
    }

    /// The offset of the next non-space byte at or after `offset`.
    func skipSpace(from offset: Int) -> Int {
        var parser = parser(at: offset)
        parser.skipWhitespace()
        return parser.offset
    }

    func decode<Value: Decodable>(_ type: Value.Type, at offset: Int) throws -> Value {
        if Value.self == Date.self {
            guard bytes[offset] == UInt8(ascii: "\""), let date = ISO8601.parse(utf8: try rawString(at: offset)) else { throw giveUp() }
            return date as! Value
        }
        if Value.self == Data.self {
            guard let data = Data(base64Encoded: try string(at: offset)) else { throw giveUp() }
            return data as! Value
        }
        if Value.self == URL.self || Value.self == Decimal.self || Value.self == Float.self { throw giveUp() }
        return try Value(from: ValueDecoder(state: self, offset: offset))
    }

    func isNull(at offset: Int) -> Bool { bytes[offset] == UInt8(ascii: "n") }

    func bool(at offset: Int) throws -> Bool {
        switch bytes[offset] {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: throw giveUp()
        }
    }

    func string(at offset: Int) throws -> String {
        guard bytes[offset] == UInt8(ascii: "\"") else { throw giveUp() }
        var parser = parser(at: offset)
        return try parsing(&parser) { parser throws(JSONParseError) in try parser.parseString() }
    }

    /// A string's bytes between its quotes, when they are ASCII without escapes (keys, dates).
    func rawString(at offset: Int) throws -> UnsafeRawBufferPointer {
        var end = offset + 1
        while end < bytes.count && bytes[end] != UInt8(ascii: "\"") {
            guard bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20, bytes[end] < 0x80 else { throw giveUp() }
            end += 1
        }
        guard end < bytes.count else { throw giveUp() }
        return UnsafeRawBufferPointer(rebasing: bytes[(offset + 1)..<end])
    }

    private func number(at offset: Int) throws -> JSONValue {
        guard bytes[offset] == UInt8(ascii: "-") || (bytes[offset] >= UInt8(ascii: "0") && bytes[offset] <= UInt8(ascii: "9")) else { throw giveUp() }
        var parser = parser(at: offset)
        return try parsing(&parser) { parser throws(JSONParseError) in try parser.parseNumber() }
    }

    /// An integer written as one (no fraction, no exponent) that fits `Integer`.
    func integer<Integer: FixedWidthInteger>(at offset: Int) throws -> Integer {
        guard case .int(let value) = try number(at: offset), let integer = Integer(exactly: value) else { throw giveUp() }
        return integer
    }

    func double(at offset: Int) throws -> Double {
        switch try number(at: offset) {
        case .int(let value) where value != 0 || bytes[offset] != UInt8(ascii: "-"): return Double(value)  // -0 is Foundation's
        // Foundation refuses what overflows or underflows; zeros and subnormals go to it.
        case .double(let value) where value.isNormal: return value
        default: throw giveUp()
        }
    }

    /// The members of the object at `offset`: where each key's bytes are and where its value starts.
    /// Checks its grammar on the way (only its members' values may not have been checked yet).
    func members(at offset: Int) throws -> [ObjectMember] {
        if let last = lastObject, last.start == offset { return last.members }
        guard bytes[offset] == UInt8(ascii: "{") else { throw giveUp() }
        var members: [ObjectMember] = []
        var parser = parser(at: offset + 1)
        parser.skipWhitespace()
        if parser.offset < bytes.count && bytes[parser.offset] != UInt8(ascii: "}") {
            while true {
                parser.skipWhitespace()
                guard parser.offset < bytes.count, bytes[parser.offset] == UInt8(ascii: "\"") else { throw giveUp() }
                let key = try rawString(at: parser.offset)
                parser.offset += key.count + 2
                parser.skipWhitespace()
                guard parser.offset < bytes.count, bytes[parser.offset] == UInt8(ascii: ":") else { throw giveUp() }
                parser.offset += 1
                parser.skipWhitespace()
                members.append(ObjectMember(key: key, value: parser.offset))
                guard members.count <= 64 else { throw giveUp() }
                try parsing(&parser) { parser throws(JSONParseError) in try parser.skipValue() }
                parser.skipWhitespace()
                guard parser.offset < bytes.count else { throw giveUp() }
                if bytes[parser.offset] == UInt8(ascii: "}") { break }
                guard bytes[parser.offset] == UInt8(ascii: ",") else { throw giveUp() }
                parser.offset += 1
            }
        }
        guard parser.offset < bytes.count else { throw giveUp() }
        if let last = lastObject { objectEnds[last.start] = last.end }
        lastObject = (offset, parser.offset + 1, members)
        return members
    }

    /// Where the object at `offset` ends (just past its `}`), scanning it if need be.
    func end(ofObjectAt offset: Int) throws -> Int {
        _ = try members(at: offset)
        return end(ofScannedObjectAt: offset)!
    }

    private func end(ofScannedObjectAt offset: Int) -> Int? {
        if let last = lastObject, last.start == offset { return last.end }
        return objectEnds[offset]
    }

    /// Where the value after the one at `offset` starts in its array, or where the array ends.
    func next(after offset: Int) throws -> Int {
        var parser = parser(at: offset)
        if let end = end(ofScannedObjectAt: offset) {
            parser.offset = end
        } else {
            try parsing(&parser) { parser throws(JSONParseError) in try parser.skipValue() }
        }
        parser.skipWhitespace()
        if bytes[parser.offset] == UInt8(ascii: ",") {
            parser.offset += 1
            parser.skipWhitespace()
        }
        return parser.offset
    }
}

private struct ObjectMember {
    let key: UnsafeRawBufferPointer
    let value: Int
}

private struct ValueDecoder: Decoder {
    let state: DecodingState
    let offset: Int

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedContainer<Key>(state: state, members: try state.members(at: offset)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard state.bytes[offset] == UInt8(ascii: "[") else { throw state.giveUp() }
        return UnkeyedContainer(state: state, start: offset)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValue(state: state, offset: offset)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let state: DecodingState
    let members: [ObjectMember]

    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { members.compactMap { Key(stringValue: String(decoding: $0.key, as: UTF8.self)) } }

    /// The first member named `key` (Foundation's choice when a key repeats).
    private func find(_ key: Key) -> Int? {
        var name = key.stringValue
        return name.withUTF8 { name in
            members.first { $0.key.count == name.count && (name.isEmpty || memcmp($0.key.baseAddress!, name.baseAddress!, name.count) == 0) }?.value
        }
    }

    private func value(_ key: Key) throws -> Int {
        guard let offset = find(key) else { throw state.giveUp() }
        return offset
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { state.isNull(at: try value(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try state.bool(at: value(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try state.string(at: value(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try state.double(at: value(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw state.giveUp() }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try state.integer(at: value(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try state.integer(at: value(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try state.integer(at: value(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try state.integer(at: value(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try state.integer(at: value(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try state.integer(at: value(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try state.integer(at: value(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try state.integer(at: value(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try state.integer(at: value(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try state.integer(at: value(key)) }
    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value { try state.decode(type, at: value(key)) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(state: state, offset: value(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(state: state, offset: value(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { throw state.giveUp() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw state.giveUp() }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let state: DecodingState
    /// Where the array's `[` is.
    let start: Int
    /// Where the element handed out last starts (nil before the first): the container moves
    /// past it only when asked for more, when an object element has been read and its end is
    /// known without reading it again.
    private var last: Int?
    private var first: Int
    private(set) var currentIndex = 0

    init(state: DecodingState, start: Int) {
        self.state = state
        self.start = start
        first = state.skipSpace(from: start + 1)
    }

    var codingPath: [any CodingKey] { [] }

    /// Where the next element starts, or the array's `]`.
    private var nextOffset: Int {
        get throws { try last.map(state.next(after:)) ?? first }
    }

    var isAtEnd: Bool { ((try? nextOffset).map { state.bytes[$0] == UInt8(ascii: "]") }) ?? true }

    var count: Int? {
        var count = 0
        var offset = state.skipSpace(from: start + 1)
        while state.bytes[offset] != UInt8(ascii: "]") {
            guard let next = try? state.next(after: offset) else { return nil }
            offset = next
            count += 1
        }
        return count
    }

    /// Hands out the next element; returns where it starts.
    private mutating func element() throws -> Int {
        let element = try nextOffset
        guard state.bytes[element] != UInt8(ascii: "]") else { throw state.giveUp() }
        last = element
        currentIndex += 1
        return element
    }

    mutating func decodeNil() throws -> Bool {
        let next = try nextOffset
        guard state.bytes[next] != UInt8(ascii: "]") else { throw state.giveUp() }
        guard state.isNull(at: next) else { return false }
        _ = try element()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try state.bool(at: element()) }
    mutating func decode(_ type: String.Type) throws -> String { try state.string(at: element()) }
    mutating func decode(_ type: Double.Type) throws -> Double { try state.double(at: element()) }
    mutating func decode(_ type: Float.Type) throws -> Float { throw state.giveUp() }
    mutating func decode(_ type: Int.Type) throws -> Int { try state.integer(at: element()) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try state.integer(at: element()) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try state.integer(at: element()) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try state.integer(at: element()) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try state.integer(at: element()) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try state.integer(at: element()) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try state.integer(at: element()) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try state.integer(at: element()) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try state.integer(at: element()) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try state.integer(at: element()) }
    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value { try state.decode(type, at: element()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(state: state, offset: element()).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(state: state, offset: element()).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { throw state.giveUp() }
}

private struct SingleValue: SingleValueDecodingContainer {
    let state: DecodingState
    let offset: Int

    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { state.isNull(at: offset) }
    func decode(_ type: Bool.Type) throws -> Bool { try state.bool(at: offset) }
    func decode(_ type: String.Type) throws -> String { try state.string(at: offset) }
    func decode(_ type: Double.Type) throws -> Double { try state.double(at: offset) }
    func decode(_ type: Float.Type) throws -> Float { throw state.giveUp() }
    func decode(_ type: Int.Type) throws -> Int { try state.integer(at: offset) }
    func decode(_ type: Int8.Type) throws -> Int8 { try state.integer(at: offset) }
    func decode(_ type: Int16.Type) throws -> Int16 { try state.integer(at: offset) }
    func decode(_ type: Int32.Type) throws -> Int32 { try state.integer(at: offset) }
    func decode(_ type: Int64.Type) throws -> Int64 { try state.integer(at: offset) }
    func decode(_ type: UInt.Type) throws -> UInt { try state.integer(at: offset) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try state.integer(at: offset) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try state.integer(at: offset) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try state.integer(at: offset) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try state.integer(at: offset) }
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value { try state.decode(type, at: offset) }
}
