@testable import Bus
import Foundation
import Testing
@testable import Wire

/// The payload decoder may only ever give Foundation's answer: when it decodes a document it
/// must produce the value Foundation's decoder produces, and when Foundation's fails it must
/// not decode.
@Suite("Payload decoder")
struct PayloadDecoderTests {
    enum Kind: String, Codable, Equatable { case qa, cloze }

    struct Card: Codable, Equatable {
        var front: String
        var at: Date
        var tags: [String]
        var ease: Double?
    }

    struct Document: Codable, Equatable {
        var id: String
        var count: Int
        var small: UInt8
        var big: Int64
        var ratio: Double
        var flag: Bool
        var kind: Kind
        var note: String?
        var cards: [Card]
        var map: [String: [Int]]
        var blob: Data
        var nested: [[String?]]
    }

    static let document = Document(
        id: "d-1 \"quoted\" é 🚀 \\ /", count: -42, small: 255, big: Int64.min, ratio: 0.1, flag: true, kind: .cloze, note: nil,
        cards: [Card(front: "a", at: Date(unixMilliseconds: 1_764_000_000_123), tags: ["x"], ease: 2.5),
                Card(front: "b\n", at: Date(unixMilliseconds: -1), tags: [], ease: nil)],
        map: ["one": [1], "none": []], blob: Data([0, 1, 254, 255]), nested: [[], ["a", nil]])

    private func foundation<Value: Decodable>(_ type: Value.Type, _ text: String) -> Value? {
        try? WireCoding.decoder().decode(type, from: Data(text.utf8))
    }

    private func streamed<Value: Decodable>(_ type: Value.Type, _ text: String) -> Value? {
        PayloadDecoder.decode(type, from: Data(text.utf8))
    }

    @Test("a document the encoder wrote is decoded without Foundation, to the same value")
    func roundTrip() throws {
        let data = try WireCoding.encode(Self.document)
        #expect(PayloadDecoder.decode(Document.self, from: data) == Self.document)
        #expect(try WireCoding.decode(Document.self, from: data) == Self.document)
    }

    @Test("each variant of a document decodes to Foundation's value, or not at all when Foundation fails", arguments: [
        // Accepted by both.
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[]}"#,
        #" { "front" : "f" , "at" : "2026-01-02T03:04:05.5+02:00" , "tags" : [ "a" , "b" ] , "ease" : null } "#,
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[],"ease":1e2}"#,
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[],"unknown":{"deep":[1,{"x":null}]}}"#,
        #"{"front":"\u00e9\ud83d\ude80\n","at":"2026-01-02T03:04:05Z","tags":[]}"#,
        #"{"front":"f","front":"g","at":"2026-01-02T03:04:05Z","tags":[]}"#,
        #"{"fr\u006fnt":"f","at":"2026-01-02T03:04:05Z","tags":[]}"#,
        // Refused by Foundation.
        #"{"at":"2026-01-02T03:04:05Z","tags":[]}"#,
        #"{"front":null,"at":"2026-01-02T03:04:05Z","tags":[]}"#,
        #"{"front":1,"at":"2026-01-02T03:04:05Z","tags":[]}"#,
        #"{"front":"f","at":"yesterday","tags":[]}"#,
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[1]}"#,
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[],"ease":"2"}"#,
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[]} x"#,
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[],"unknown":[1,}"#,
        #"{"front":"\ud800","at":"2026-01-02T03:04:05Z","tags":[]}"#,
        #"{"front":"f","at":"2026-01-02T03:04:05Z","tags":[]"#,
        #"[]"#, "", "null",
    ])
    func variants(_ text: String) {
        let reference = foundation(Card.self, text)
        let decoded = streamed(Card.self, text)
        if reference == nil {
            #expect(decoded == nil)
        } else if let decoded {
            #expect(decoded == reference)
        }
        #expect((try? WireCoding.decode(Card.self, from: Data(text.utf8))) == reference)
    }

    @Test("integers and doubles in every form decode as Foundation decodes them", arguments: [
        "0", "-0", "7", "-7", "255", "256", "-129", "1.0", "1e2", "1E0", "2.5", "-0.0", "0.1", "1e400", "1e-400",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551615", "123456789012345678901234567890",
    ])
    func numbers(_ number: String) {
        let text = "[\(number)]"
        #expect(streamed([Int].self, text) == nil || streamed([Int].self, text) == foundation([Int].self, text))
        #expect(streamed([Int8].self, text) == nil || streamed([Int8].self, text) == foundation([Int8].self, text))
        #expect(streamed([UInt8].self, text) == nil || streamed([UInt8].self, text) == foundation([UInt8].self, text))
        #expect(streamed([UInt64].self, text) == nil || streamed([UInt64].self, text) == foundation([UInt64].self, text))
        #expect(streamed([Double].self, text) == nil || streamed([Double].self, text) == foundation([Double].self, text))
        #expect((try? WireCoding.decode([Int].self, from: Data(text.utf8))) == foundation([Int].self, text))
        #expect((try? WireCoding.decode([Double].self, from: Data(text.utf8)))?.map(\.sign) == foundation([Double].self, text)?.map(\.sign))
        #expect(streamed([Double].self, text) == nil || streamed([Double].self, text)?.map(\.sign) == foundation([Double].self, text)?.map(\.sign))
    }

    @Test("types that try several readings (JSONValue) and types it leaves to Foundation still decode")
    func leftToFoundation() throws {
        struct Other: Codable, Equatable { var link: URL; var price: Decimal; var level: Float }
        let other = Other(link: URL(string: "https://example.com/a")!, price: Decimal(string: "1.5")!, level: 0.5)
        let data = try WireCoding.encode(other)
        #expect(PayloadDecoder.decode(Other.self, from: data) == nil)
        #expect(try WireCoding.decode(Other.self, from: data) == other)
        let value = JSONValue.object(["a": .array([.int(1), .double(1.5), .string("s"), .null, .bool(true)])])
        #expect(try WireCoding.decode(JSONValue.self, from: value.jsonData) == value)
    }

    @Test("a missing field is Foundation's error, with its coding path")
    func errors() {
        do {
            _ = try WireCoding.decode(Document.self, from: Data(#"{"id":"x"}"#.utf8))
            Issue.record("decoded a document without its fields")
        } catch let DecodingError.keyNotFound(key, _) {
            #expect(key.stringValue == "count")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("random documents of the encoder decode to what was encoded")
    func randomDocuments() throws {
        var generator = SystemRandomNumberGenerator()
        func text() -> String {
            String((0..<Int.random(in: 0..<10, using: &generator)).map { _ in "ab\"\\\n/é🚀\u{01}".randomElement(using: &generator)! })
        }
        for _ in 0..<200 {
            let cards = (0..<Int.random(in: 0..<4, using: &generator)).map { _ in
                Card(front: text(), at: Date(unixMilliseconds: Int64.random(in: -10_000_000_000_000...10_000_000_000_000, using: &generator)),
                     tags: (0..<Int.random(in: 0..<3, using: &generator)).map { _ in text() },
                     ease: Bool.random(using: &generator) ? nil : Double.random(in: -1e9...1e9, using: &generator))
            }
            let data = try WireCoding.encode(cards)
            #expect(PayloadDecoder.decode([Card].self, from: data) == cards)
        }
    }

    @Test("mutated documents (bytes changed, cut, repeated) decode as Foundation decodes them, or go to it")
    func mutations() throws {
        var generator = SystemRandomNumberGenerator()
        let original = Array(try WireCoding.encode(Self.document))
        let alphabet = Array(#"{}[],:"\ 0123456789.eE-+tfnulraxéud"#.utf8) + [0x00, 0x01, 0xFF]
        for _ in 0..<3000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[index] = alphabet.randomElement(using: &generator)!
                case 1: bytes.removeSubrange(index...)
                case 2: bytes.insert(alphabet.randomElement(using: &generator)!, at: index)
                default: bytes.remove(at: index)
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: "{")] }
            }
            let data = Data(bytes)
            let reference = try? WireCoding.decoder().decode(Document.self, from: data)
            let decoded = PayloadDecoder.decode(Document.self, from: data)
            if reference == nil {
                #expect(decoded == nil, "decoded what Foundation refuses: \(String(decoding: bytes, as: UTF8.self))")
            } else if let decoded {
                #expect(decoded == reference, "\(String(decoding: bytes, as: UTF8.self))")
            }
        }
    }
}

extension PayloadDecoder {
    /// The decoder on a document's bytes, as the bus gives them.
    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) -> Value? {
        data.withUnsafeBytes { decode(type, from: $0) }
    }
}
