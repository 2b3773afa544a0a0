@testable import Bus
import Foundation
import Testing
@testable import Wire

/// The payload encoder must write what Foundation's encoder (configured as `WireCoding.encoder()`)
/// writes, and hand values it cannot stream back to Foundation.
@Suite("Payload encoder")
struct PayloadEncoderTests {
    enum Kind: String, Codable, Equatable { case qa, cloze }

    struct Inner: Codable, Equatable {
        var name: String
        var at: Date
        var tags: [String]
    }

    struct Everything: Codable, Equatable {
        var text = "quote\" back\\ slash/ line\n tab\t ctl\u{01} ünï ✓ 🚀 \u{2028}"
        var empty = ""
        var yes = true
        var integers: [Int64] = [Int64.min, -1, 0, 42, Int64.max]
        var unsigned: UInt64 = .max
        var small: Int8 = -128
        var doubles: [Double] = [0, -0.0, 1, 0.1, -2.5, 1e-7, 1e21, 123_456_789_012.5, .pi, .greatestFiniteMagnitude]
        var float: Float = 0.1
        var missing: String? = nil
        var present: Int? = 7
        var kind = Kind.cloze
        var kinds: [Kind] = [.qa, .cloze]
        var date = Date(unixMilliseconds: 1_764_000_000_123)
        var dates: [Date?] = [Date(unixMilliseconds: -86_400_001), nil]
        var blob = Data([0, 1, 2, 254, 255])
        var link = URL(string: "https://example.com/a/b?c=d")!
        var price = Decimal(string: "12.50")!
        var inner = Inner(name: "n", at: Date(unixMilliseconds: 0), tags: [])
        var inners = [Inner(name: "a", at: Date(unixMilliseconds: 1), tags: ["x", "y"]), Inner(name: "b", at: Date(unixMilliseconds: 2), tags: ["z"])]
        var map: [String: [Int]] = ["one": [1], "two": [1, 2], "none": []]
        var intKeys: [Int: String] = [1: "a", 20: "b"]
        var nested: [[[String]]] = [[], [["deep"]], [[], ["a", "b"]]]
        var json: JSONValue = .object(["a": .array([.null, .bool(false), .int(-3), .double(0.5), .string("s")]), "b": .object([:])])
    }

    private func foundation<Value: Encodable>(_ value: Value) throws -> JSONValue {
        try JSONValue.parse(WireCoding.encoder().encode(value))
    }

    private func streamed<Value: Encodable>(_ value: Value) throws -> JSONValue {
        try JSONValue.parse(Data(PayloadEncoder.encode(value)))
    }

    @Test("every kind of member is written as Foundation writes it, and reads back")
    func everything() throws {
        let value = Everything()
        #expect(try streamed(value) == foundation(value))
        #expect(try WireCoding.decode(Everything.self, from: WireCoding.encode(value)) == value)
    }

    @Test("numbers, dates and strings are the same text as Foundation's", arguments: [
        0.0, -0.0, 1, 0.1, -2.5, 1e-7, 1e21, .leastNonzeroMagnitude, 123_456_789_012.5,
    ])
    func numberText(_ number: Double) throws {
        #expect(try PayloadEncoder.encode([number]) == Array(WireCoding.encoder().encode([number])))
    }

    @Test("members are written in the order they are encoded, without the nil ones")
    func memberOrder() throws {
        let text = String(decoding: try PayloadEncoder.encode(Inner(name: "n/1", at: Date(unixMilliseconds: 1_764_000_000_000), tags: ["t"])), as: UTF8.self)
        #expect(text == #"{"name":"n/1","at":"2025-11-24T16:00:00.000Z","tags":["t"]}"#)
        struct Sparse: Encodable { var a: Int? = nil; var b = 1; var c: String? = nil }
        #expect(String(decoding: try PayloadEncoder.encode(Sparse()), as: UTF8.self) == #"{"b":1}"#)
    }

    @Test("top-level fragments and empty values")
    func fragments() throws {
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        #expect(String(decoding: try PayloadEncoder.encode("a\"b"), as: UTF8.self) == #""a\"b""#)
        #expect(String(decoding: try PayloadEncoder.encode(Nothing()), as: UTF8.self) == "{}")
        #expect(String(decoding: try PayloadEncoder.encode([Nothing(), Nothing()]), as: UTF8.self) == "[{},{}]")
        #expect(String(decoding: try PayloadEncoder.encode([String: Int]()), as: UTF8.self) == "{}")
        #expect(String(decoding: try PayloadEncoder.encode([[Int]]()), as: UTF8.self) == "[]")
    }

    @Test("a number JSON cannot hold is an error naming where it is", arguments: [Double.nan, .infinity, -.infinity])
    func nonFinite(_ number: Double) throws {
        struct Holder: Encodable { var values: [String: [Double]] }
        do {
            _ = try WireCoding.encode(Holder(values: ["x": [1, number]]))
            Issue.record("encoded \(number)")
        } catch let EncodingError.invalidValue(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["values", "x", "Index 1"])
        }
    }

    @Test("nested containers used in order stream; used out of order they go to Foundation")
    func nestedContainers() throws {
        struct InOrder: Encodable {
            enum Keys: String, CodingKey { case a, b, c }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                var a = container.nestedUnkeyedContainer(forKey: .a)
                try a.encode(1)
                var inner = a.nestedContainer(keyedBy: Keys.self)
                try inner.encode("x", forKey: .c)
                try container.encode(true, forKey: .b)
            }
        }
        #expect(String(decoding: try PayloadEncoder.encode(InOrder()), as: UTF8.self) == #"{"a":[1,{"c":"x"}],"b":true}"#)

        struct OutOfOrder: Encodable {
            enum Keys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                var a = container.nestedUnkeyedContainer(forKey: .a)
                try container.encode(1, forKey: .b)
                try a.encode(2)  // back into a container already left
            }
        }
        #expect(throws: PayloadEncoder.Unsupported.self) { try PayloadEncoder.encode(OutOfOrder()) }
        #expect(try JSONValue.parse(WireCoding.encode(OutOfOrder())) == .object(["a": .array([.int(2)]), "b": .int(1)]))
    }

    @Test("a superclass and a subclass encode into one object; super encoders go to Foundation")
    func classes() throws {
        class Base: Encodable {
            enum Keys: String, CodingKey { case base }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(1, forKey: .base)
            }
        }
        final class Derived: Base {
            enum DerivedKeys: String, CodingKey { case derived }
            override func encode(to encoder: any Encoder) throws {
                try super.encode(to: encoder)
                var container = encoder.container(keyedBy: DerivedKeys.self)
                try container.encode(2, forKey: .derived)
            }
        }
        #expect(String(decoding: try PayloadEncoder.encode([Derived()]), as: UTF8.self) == #"[{"base":1,"derived":2}]"#)

        final class WithSuper: Base {
            override func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try super.encode(to: container.superEncoder())
            }
        }
        #expect(throws: PayloadEncoder.Unsupported.self) { try PayloadEncoder.encode(WithSuper()) }
        #expect(try WireCoding.encode(WithSuper()) == WireCoding.encoder().encode(WithSuper()))
    }

    @Test("random JSON trees read back as they were")
    func randomTrees() throws {
        var generator = SystemRandomNumberGenerator()
        func tree(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &generator) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &generator))
            case 2: return .int(Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &generator))
            case 3: return .double(Double.random(in: -1e6...1e6, using: &generator).rounded() + 0.25)
            case 4: return .string(String((0..<Int.random(in: 0..<12, using: &generator)).map { _ in "ab\"\\\n/é🚀\u{01}".randomElement(using: &generator)! }))
            case 5: return .array((0..<Int.random(in: 0..<5, using: &generator)).map { _ in tree(depth + 1) })
            default:
                return .object(Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0..<5, using: &generator)).map { ("k\($0)", tree(depth + 1)) }))
            }
        }
        for _ in 0..<300 {
            let value = tree(0)
            #expect(try streamed(value) == value)
        }
    }

    @Test("ISO 8601 text of instants before 1970, at leap days and far ahead", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"), (-1, "1969-12-31T23:59:59.999Z"), (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"), (1_764_000_000_123, "2025-11-24T16:00:00.123Z"),
    ])
    func dates(_ milliseconds: Int64, _ text: String) {
        #expect(ISO8601.format(unixMilliseconds: milliseconds) == text)
        #expect(ISO8601.parse(text)?.unixMilliseconds == milliseconds)
    }
}
