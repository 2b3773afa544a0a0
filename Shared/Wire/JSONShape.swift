import Foundation

/// Describes the JSON a `Decodable` type reads, by decoding it once from a recording decoder:
/// `{"title":"string","tags":["string"],"kind":"qa|cloze|definition","summary?":"string"}`.
/// A `?` after a key marks an optional field.
public enum JSONShape {
    /// The shape of `type`'s JSON.
    public static func of<T: Decodable>(_ type: T.Type) -> JSONValue {
        let node = ShapeNode()
        ShapeDecoder.record(type, into: node)
        return node.shape ?? .string("any")
    }
}

final class ShapeNode {
    var shape: JSONValue?
}

/// Types whose shape the recorder names directly instead of decoding them.
private protocol ShapeLeaf {
    static var shapeName: JSONValue { get }
    static var placeholder: Self { get }
}

extension Date: ShapeLeaf {
    static var shapeName: JSONValue { .string("date-time") }
    static var placeholder: Date { Date(timeIntervalSince1970: 0) }
}
extension Data: ShapeLeaf {
    static var shapeName: JSONValue { .string("base64") }
    static var placeholder: Data { Data() }
}
extension URL: ShapeLeaf {
    static var shapeName: JSONValue { .string("url") }
    static var placeholder: URL { URL(string: "about:blank")! }
}
extension UUID: ShapeLeaf {
    static var shapeName: JSONValue { .string("uuid") }
    static var placeholder: UUID { UUID() }
}
extension Empty: ShapeLeaf {
    static var shapeName: JSONValue { .object([:]) }
    static var placeholder: Empty { Empty() }
}
extension JSONValue: ShapeLeaf {
    static var shapeName: JSONValue { .string("any") }
    static var placeholder: JSONValue { .null }
}

private protocol ShapeDictionary {
    static var valueShape: JSONValue { get }
    static var emptyValue: Self { get }
}

extension Dictionary: ShapeDictionary where Key == String, Value: Decodable {
    static var valueShape: JSONValue { .object(["<key>": JSONShape.of(Value.self)]) }
    static var emptyValue: [String: Value] { [:] }
}

private struct ShapeDecoder: Decoder {
    let node: ShapeNode
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    struct Unsupported: Error {}

    /// Records `type`'s shape into `node` and returns a placeholder value of it, if one could be made.
    @discardableResult
    static func record<T: Decodable>(_ type: T.Type, into node: ShapeNode) -> T? {
        if let leaf = type as? any ShapeLeaf.Type {
            node.shape = leaf.shapeName
            return leaf.placeholder as? T
        }
        if let wireEnum = type as? any WireEnum.Type {
            node.shape = .string(wireEnum.wireValues.joined(separator: "|"))
            return wireEnum.anyCase as? T
        }
        if let dictionary = type as? any ShapeDictionary.Type {
            node.shape = dictionary.valueShape
            return dictionary.emptyValue as? T
        }
        do {
            return try T(from: ShapeDecoder(node: node))
        } catch {
            if node.shape == nil { node.shape = .string("object") }
            return nil
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if node.shape?.objectValue == nil { node.shape = .object([:]) }
        return KeyedDecodingContainer(KeyedShape<Key>(node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        UnkeyedShape(node: node)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleShape(node: node)
    }
}

private func primitiveShape<T>(_ type: T.Type) -> JSONValue? {
    switch type {
    case is String.Type: .string("string")
    case is Bool.Type: .string("boolean")
    case is Double.Type, is Float.Type: .string("number")
    case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type,
         is UInt.Type, is UInt8.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type: .string("integer")
    default: nil
    }
}

private func placeholder<T>(_ type: T.Type) -> T? {
    switch type {
    case is String.Type: "" as? T
    case is Bool.Type: false as? T
    case is Double.Type: 0.0 as? T
    case is Float.Type: Float(0) as? T
    case is Int.Type: 0 as? T
    case is Int8.Type: Int8(0) as? T
    case is Int16.Type: Int16(0) as? T
    case is Int32.Type: Int32(0) as? T
    case is Int64.Type: Int64(0) as? T
    case is UInt.Type: UInt(0) as? T
    case is UInt8.Type: UInt8(0) as? T
    case is UInt16.Type: UInt16(0) as? T
    case is UInt32.Type: UInt32(0) as? T
    case is UInt64.Type: UInt64(0) as? T
    default: nil
    }
}

/// Records one value of any type and returns a placeholder for it.
private func recordValue<T: Decodable>(_ type: T.Type, into node: ShapeNode) throws -> T {
    if let shape = primitiveShape(type), let value = placeholder(type) {
        node.shape = shape
        return value
    }
    guard let value = ShapeDecoder.record(type, into: node) else { throw ShapeDecoder.Unsupported() }
    return value
}

private struct KeyedShape<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let node: ShapeNode
    var codingPath: [any CodingKey] = []
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    private func add(_ key: String, _ shape: JSONValue?) {
        guard case .object(var members) = node.shape ?? .object([:]) else { return }
        members[key] = shape ?? .string("any")
        node.shape = .object(members)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let child = ShapeNode()
        defer { add(key.stringValue, child.shape) }
        return try recordValue(type, into: child)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try decodeIfPresent(type, generic: key)
    }

    // The per-primitive overloads default to decodeNil + decode, which would hide optionality.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try decodeIfPresent(Bool.self, generic: key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try decodeIfPresent(String.self, generic: key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try decodeIfPresent(Double.self, generic: key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try decodeIfPresent(Float.self, generic: key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try decodeIfPresent(Int.self, generic: key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try decodeIfPresent(Int8.self, generic: key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try decodeIfPresent(Int16.self, generic: key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try decodeIfPresent(Int32.self, generic: key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try decodeIfPresent(Int64.self, generic: key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try decodeIfPresent(UInt.self, generic: key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try decodeIfPresent(UInt8.self, generic: key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try decodeIfPresent(UInt16.self, generic: key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try decodeIfPresent(UInt32.self, generic: key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try decodeIfPresent(UInt64.self, generic: key) }

    private func decodeIfPresent<T: Decodable>(_ type: T.Type, generic key: Key) throws -> T? {
        let child = ShapeNode()
        _ = try? recordValue(type, into: child)
        add(key.stringValue + "?", child.shape)
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        let child = ShapeNode()
        child.shape = .object([:])
        add(key.stringValue, child.shape)
        return KeyedDecodingContainer(KeyedShape<NestedKey>(node: child))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        add(key.stringValue, .array([]))
        return UnkeyedShape(node: ShapeNode())
    }

    func superDecoder() throws -> any Decoder { ShapeDecoder(node: node) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ShapeDecoder(node: ShapeNode()) }
}

private struct UnkeyedShape: UnkeyedDecodingContainer {
    let node: ShapeNode
    var codingPath: [any CodingKey] = []
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex >= 1 }

    init(node: ShapeNode) {
        self.node = node
        node.shape = .array([])
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let child = ShapeNode()
        defer {
            node.shape = .array([child.shape ?? .string("any")])
            currentIndex += 1
        }
        return try recordValue(type, into: child)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        return KeyedDecodingContainer(KeyedShape<NestedKey>(node: ShapeNode()))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        return UnkeyedShape(node: ShapeNode())
    }

    mutating func superDecoder() throws -> any Decoder { ShapeDecoder(node: node) }
}

private struct SingleShape: SingleValueDecodingContainer {
    let node: ShapeNode
    var codingPath: [any CodingKey] = []

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try recordValue(type, into: node)
    }
}
