import Foundation

/// Encodes `Encodable` values as payload JSON (wire protocol §5) by writing each value into
/// bytes as it is given.
///
/// Foundation's `JSONEncoder` first builds a tree of boxed values and then serialises the tree,
/// and every request, reply and event is encoded once: on a small call, that tree would be the
/// largest single cost. The output is the JSON `WireCoding.encoder()` writes (dates in ISO 8601
/// with milliseconds, `Data` as Base64, numbers in the same text), with keys in the order they
/// are encoded where Foundation's order is unspecified.
///
/// Writing as it goes needs containers used in order, which is how synthesized and nearly all
/// hand-written `encode(to:)` use them. A value that writes to a container it has already left,
/// mixes container kinds or asks for a super encoder makes ``encode(_:)`` throw
/// ``Unsupported``, and `WireCoding.encode` uses Foundation's encoder for that value instead.
enum PayloadEncoder {
    /// The value uses its containers in a way this encoder cannot write in one pass.
    struct Unsupported: Error {}

    static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let sink = PayloadSink()
        try sink.write(value, level: 0)
        guard !sink.misused else { throw Unsupported() }
        sink.close(downTo: 0)
        return sink.out.bytes
    }
}

/// The bytes being written, the containers open in them and the coding path, shared by every
/// encoder and container of one ``PayloadEncoder/encode(_:)``.
final class PayloadSink {
    private struct OpenContainer {
        let closer: UInt8
        let serial: Int
        var count: Int
    }

    // Written for every byte and value. Dynamic exclusivity checks are off: a sink belongs to one
    // encode call on one thread, and no access to these spans the value's own encode(to:)
    // (which calls back in); the compiler's static checks still apply.
    @exclusivity(unchecked) var out = JSONBytes(capacity: 512)
    /// Open containers, outermost first: a container at `level` is `open[level]`.
    @exclusivity(unchecked) private var open: [OpenContainer] = []
    @exclusivity(unchecked) private var serials = 0
    /// The keys down to the value being written (entries past a value's depth belong to values
    /// already written).
    @exclusivity(unchecked) private var keys: [any CodingKey] = []
    /// Set when a container was used out of order; checked once the value is written.
    @exclusivity(unchecked) var misused = false

    /// Writes `value`, whose own container (if it opens one) goes at `level`.
    func write<Value: Encodable>(_ value: Value, level: Int) throws {
        if Value.self == Date.self {
            out.date(value as! Date)
        } else if Value.self == Data.self {
            out.string((value as! Data).base64EncodedString())
        } else if Value.self == URL.self {
            out.string((value as! URL).absoluteString)
        } else if Value.self == Decimal.self {
            out.verbatim((value as! Decimal).description)
        } else {
            let written = out.bytes.count
            try value.encode(to: ValueEncoder(sink: self, level: level, depth: keys.count))
            if open.count > level {
                close(downTo: level)
            } else if out.bytes.count == written {
                out.raw("{}")  // encoded nothing: an empty object, as Foundation writes it
            }
        }
    }

    /// Writes `value` as the element of a container at `level` under `key`; the container's
    /// coding path is the first `depth` keys and then `nestedPath`.
    func write<Value: Encodable>(_ value: Value, level: Int, key: any CodingKey, depth: Int, nestedPath: [any CodingKey]) throws {
        keys.removeSubrange(depth...)
        keys.append(contentsOf: nestedPath)
        keys.append(key)
        try write(value, level: level + 1)
    }

    /// Opens a container at `level` (writing `opener`), or returns the one the value there has
    /// open already, as when a subclass and its superclass both encode into one object.
    func openContainer(level: Int, opener: UInt8, closer: UInt8) -> Int {
        if open.count > level {
            if open.count > level + 1 || open[level].closer != closer { misused = true }
            return open[level].serial
        }
        guard open.count == level else {
            misused = true
            return -1
        }
        serials += 1
        open.append(OpenContainer(closer: closer, serial: serials, count: 0))
        out.byte(opener)
        return serials
    }

    /// Starts the next element of the container at `level`: closes the containers of its
    /// previous element and writes the comma.
    func startElement(level: Int, serial: Int) throws {
        close(downTo: level + 1)
        guard open.count == level + 1, open[level].serial == serial, !misused else {
            misused = true
            throw PayloadEncoder.Unsupported()
        }
        if open[level].count > 0 { out.byte(UInt8(ascii: ",")) }
        open[level].count += 1
    }

    /// Starts the next member of the object at `level`: the comma, the key and the colon.
    func startMember(level: Int, serial: Int, key: some CodingKey) throws {
        try startElement(level: level, serial: serial)
        out.string(key.stringValue)
        out.byte(UInt8(ascii: ":"))
    }

    /// Elements written so far in the container at `level`.
    func count(level: Int, serial: Int) -> Int {
        open.count > level && open[level].serial == serial ? open[level].count : 0
    }

    /// Closes every container at `level` and deeper.
    func close(downTo level: Int) {
        while open.count > level { out.byte(open.removeLast().closer) }
    }

    func codingPath(depth: Int, then extra: [any CodingKey] = []) -> [any CodingKey] {
        Array(keys.prefix(depth)) + extra
    }

    func number<Number: BinaryFloatingPoint & LosslessStringConvertible>(_ value: Number, path: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: path(), debugDescription: "\(value) cannot be written in JSON"))
        }
        out.number(value)
    }
}

/// The encoder one value's `encode(to:)` is given.
private struct ValueEncoder: Encoder {
    let sink: PayloadSink
    let level: Int
    let depth: Int

    var codingPath: [any CodingKey] { sink.codingPath(depth: depth) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let serial = sink.openContainer(level: level, opener: UInt8(ascii: "{"), closer: UInt8(ascii: "}"))
        return KeyedEncodingContainer(PayloadKeyedContainer<Key>(sink: sink, level: level, serial: serial, depth: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let serial = sink.openContainer(level: level, opener: UInt8(ascii: "["), closer: UInt8(ascii: "]"))
        return PayloadUnkeyedContainer(sink: sink, level: level, serial: serial, depth: depth)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        PayloadSingleValue(sink: sink, level: level, depth: depth)
    }
}

private struct PayloadKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let sink: PayloadSink
    let level: Int
    let serial: Int
    let depth: Int
    var nestedPath: [any CodingKey] = []

    var codingPath: [any CodingKey] { sink.codingPath(depth: depth, then: nestedPath) }

    private func member(_ key: Key) throws { try sink.startMember(level: level, serial: serial, key: key) }

    mutating func encodeNil(forKey key: Key) throws { try member(key); sink.out.raw("null") }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try member(key); sink.out.raw(value ? "true" : "false") }
    mutating func encode(_ value: String, forKey key: Key) throws { try member(key); sink.out.string(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try member(key); try sink.number(value, path: codingPath + [key]) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try member(key); try sink.number(value, path: codingPath + [key]) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try member(key); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try member(key); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try member(key); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try member(key); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try member(key); sink.out.int(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try member(key); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try member(key); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try member(key); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try member(key); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try member(key); sink.out.uint(value) }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        try member(key)
        try sink.write(value, level: level, key: key, depth: depth, nestedPath: nestedPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let serial = nested(key, opener: UInt8(ascii: "{"), closer: UInt8(ascii: "}"))
        return KeyedEncodingContainer(PayloadKeyedContainer<NestedKey>(sink: sink, level: level + 1, serial: serial, depth: depth, nestedPath: nestedPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let serial = nested(key, opener: UInt8(ascii: "["), closer: UInt8(ascii: "]"))
        return PayloadUnkeyedContainer(sink: sink, level: level + 1, serial: serial, depth: depth, nestedPath: nestedPath + [key])
    }

    private func nested(_ key: Key, opener: UInt8, closer: UInt8) -> Int {
        guard (try? member(key)) != nil else { return -1 }
        return sink.openContainer(level: level + 1, opener: opener, closer: closer)
    }

    mutating func superEncoder() -> any Encoder { unsupportedEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { unsupportedEncoder() }

    private func unsupportedEncoder() -> any Encoder {
        sink.misused = true
        return ValueEncoder(sink: sink, level: level + 1, depth: depth)
    }
}

private struct PayloadUnkeyedContainer: UnkeyedEncodingContainer {
    /// The key of an array element in a coding path.
    private struct Index: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }

    let sink: PayloadSink
    let level: Int
    let serial: Int
    let depth: Int
    var nestedPath: [any CodingKey] = []

    var codingPath: [any CodingKey] { sink.codingPath(depth: depth, then: nestedPath) }
    var count: Int { sink.count(level: level, serial: serial) }

    private func element() throws { try sink.startElement(level: level, serial: serial) }
    private var currentKey: Index { Index(intValue: count - 1) }

    mutating func encodeNil() throws { try element(); sink.out.raw("null") }
    mutating func encode(_ value: Bool) throws { try element(); sink.out.raw(value ? "true" : "false") }
    mutating func encode(_ value: String) throws { try element(); sink.out.string(value) }
    mutating func encode(_ value: Double) throws { try element(); try sink.number(value, path: codingPath + [currentKey]) }
    mutating func encode(_ value: Float) throws { try element(); try sink.number(value, path: codingPath + [currentKey]) }
    mutating func encode(_ value: Int) throws { try element(); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { try element(); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { try element(); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { try element(); sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { try element(); sink.out.int(value) }
    mutating func encode(_ value: UInt) throws { try element(); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { try element(); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { try element(); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { try element(); sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { try element(); sink.out.uint(value) }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        try element()
        try sink.write(value, level: level, key: currentKey, depth: depth, nestedPath: nestedPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let serial = nested(opener: UInt8(ascii: "{"), closer: UInt8(ascii: "}"))
        return KeyedEncodingContainer(PayloadKeyedContainer<NestedKey>(sink: sink, level: level + 1, serial: serial, depth: depth, nestedPath: nestedPath + [currentKey]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let serial = nested(opener: UInt8(ascii: "["), closer: UInt8(ascii: "]"))
        return PayloadUnkeyedContainer(sink: sink, level: level + 1, serial: serial, depth: depth, nestedPath: nestedPath + [currentKey])
    }

    private func nested(opener: UInt8, closer: UInt8) -> Int {
        guard (try? element()) != nil else { return -1 }
        return sink.openContainer(level: level + 1, opener: opener, closer: closer)
    }

    mutating func superEncoder() -> any Encoder {
        sink.misused = true
        return ValueEncoder(sink: sink, level: level + 1, depth: depth)
    }
}

private struct PayloadSingleValue: SingleValueEncodingContainer {
    let sink: PayloadSink
    let level: Int
    let depth: Int

    var codingPath: [any CodingKey] { sink.codingPath(depth: depth) }

    mutating func encodeNil() throws { sink.out.raw("null") }
    mutating func encode(_ value: Bool) throws { sink.out.raw(value ? "true" : "false") }
    mutating func encode(_ value: String) throws { sink.out.string(value) }
    mutating func encode(_ value: Double) throws { try sink.number(value, path: codingPath) }
    mutating func encode(_ value: Float) throws { try sink.number(value, path: codingPath) }
    mutating func encode(_ value: Int) throws { sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { sink.out.int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { sink.out.int(value) }
    mutating func encode(_ value: UInt) throws { sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { sink.out.uint(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { sink.out.uint(value) }
    mutating func encode<Value: Encodable>(_ value: Value) throws { try sink.write(value, level: level) }
}
