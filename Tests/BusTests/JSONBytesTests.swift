@testable import Bus
import Foundation
import Testing
@testable import Wire

/// The byte-level header writer must produce exactly what the general JSON writer does.
@Suite("Header writer")
struct JSONBytesTests {
    @Test("strings are escaped as the JSON writer escapes them", arguments: [
        "", "plain", "quote\"d", "back\\slash", "line\nbreak\r\ttab", "\u{01}\u{1F}ctl", "ünïcödé ✓ 🚀", "a/b",
    ])
    func strings(_ text: String) throws {
        var writer = JSONBytes()
        writer.string(text)
        var reference = JSONWriter()
        reference.writeString(text)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == reference.text)
        #expect(try JSONValue.parse(writer.data) == .string(text))
    }

    @Test("strings scanned eight bytes at a time are escaped, parsed and skipped right wherever a special byte falls",
          arguments: ["\"", "\\", "\n", "\u{1F}", "é", "🚀"])
    func specialByteAtEveryPosition(_ special: String) throws {
        for length in 0...24 {
            for position in 0...length {
                let text = String(repeating: "a", count: position) + special + String(repeating: "b", count: length - position)
                var writer = JSONBytes()
                writer.string(text)
                var reference = JSONWriter()
                reference.writeString(text)
                #expect(String(decoding: writer.bytes, as: UTF8.self) == reference.text)
                let (parsed, skippedTo) = try writer.bytes.withUnsafeBytes { bytes in
                    var parser = JSONParser(bytes: bytes), skipper = JSONParser(bytes: bytes)
                    let parsed = try parser.parseString()
                    try skipper.skipString()
                    return (parsed, skipper.offset)
                }
                #expect(parsed == text)
                #expect(skippedTo == writer.bytes.count)
            }
        }
        // A control character inside a string is refused wherever it is.
        for position in 0...17 {
            let bytes = Array("\"".utf8) + Array(repeating: UInt8(ascii: "x"), count: position) + [0x01] + Array("x\"".utf8)
            #expect(throws: JSONParseError.self) { try bytes.withUnsafeBytes { bytes in var parser = JSONParser(bytes: bytes); _ = try parser.parseString() } }
            #expect(throws: JSONParseError.self) { try bytes.withUnsafeBytes { bytes in var parser = JSONParser(bytes: bytes); try parser.skipString() } }
        }
    }

    @Test("a number beyond Double's range is refused, not read as an infinity JSON cannot write back (found by PayloadFuzz)",
          arguments: ["9e999", "-1e400", "[1e309]", #"{"ratio":2e308}"#])
    func numberOutOfRange(_ text: String) {
        #expect(throws: JSONParseError.self) { _ = try JSONValue.parse(text) }
    }

    @Test("integers are written in decimal", arguments: [Int64.min, -1, 0, 7, 1_764_000_000_000, Int64.max])
    func integers(_ value: Int64) {
        var writer = JSONBytes()
        writer.int(value)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == String(value))
    }

    @Test("unsigned integers are written in decimal, every digit count", arguments: [UInt64(0), 9, 10, 99, 100, 1_764_000_000_000, .max])
    func unsignedIntegers(_ value: UInt64) {
        var writer = JSONBytes()
        writer.string("x")
        writer.uint(value)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "\"x\"" + String(value))
    }

    @Test("a request header is read member by member: unknown members skipped, the last of a repeated one kept, each error named", arguments: [
        (#"{"id":"a"}"#, "a|-|-|0|-"),
        (#" { "x" : {"deep":[1,{"y":null}]}, "id" : "a" , "deadline":12 ,"user":null,"meta":{"k":"v"},"idem":"i" } "#, "a|12|-|1|i"),
        (#"{"id":"first","id":"second","deadline":1.0e3}"#, "second|1000|-|0|-"),
        (#"{"id":"a","user":"u\u00e9"}"#, "a|-|ué|0|-"),
        (#"[1]"#, "request header must be a JSON object"),
        (#"{"id":"a",}"#, "request header is not valid JSON: invalid JSON at byte 10: expected a string key"),
        (#"{"id":"a"} x"#, "request header is not valid JSON: invalid JSON at byte 11: unexpected data after the value"),
        (#"{"deadline":"soon","x":[1,}"#, "request header is not valid JSON: invalid JSON at byte 26: invalid number"),
        (#"{"deadline":"soon","user":5}"#, "request header field 'deadline' must be an integer"),
        (#"{"id":"a","meta":{"k":1}}"#, "request header field 'meta.k' must be a string"),
        (#"{"id":7}"#, "request header field 'id' is missing or not a string"),
        (#"{}"#, "request header field 'id' is missing or not a string"),
        (#"{"id":""}"#, "request header field 'id' must be 1 to 64 characters"),
    ])
    func requestHeaderReading(_ json: String, _ expected: String) {
        do {
            let header = try RequestHeader.decode(Data(json.utf8))
            let read = [header.id, header.deadline.map(String.init) ?? "-", header.user ?? "-", String(header.meta.count), header.idem ?? "-"]
            #expect(read.joined(separator: "|") == expected)
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message == expected)
        }
    }

    @Test("reply and event headers ignore what they do not know and name what is missing")
    func replyAndEventHeaderReading() throws {
        let reply = try ReplyHeader.decode(Data(#"{"x":{"a":[]},"code":5,"id":"r","message":"gone","details":{"field":"x"}}"#.utf8))
        #expect(reply == ReplyHeader(id: "r", code: .notFound, message: "gone", details: .object(["field": .string("x")])))
        #expect(throws: BusError.invalidArgument("reply header field 'code' is missing or not an integer")) { try ReplyHeader.decode(Data(#"{"id":"r","code":"0"}"#.utf8)) }
        let event = try EventHeader.decode(Data(#"{"id":"e","source":"s","instance":"i","seq":3,"ts":4,"user":"u","meta":{"traceparent":"t"},"extra":true}"#.utf8))
        #expect(event == EventHeader(id: "e", source: "s", instance: "i", seq: 3, ts: 4, user: "u", meta: ["traceparent": "t"]))
        #expect(throws: BusError.invalidArgument("event header field 'seq' is missing or not an integer")) {
            try EventHeader.decode(Data(#"{"id":"e","source":"s","instance":"i","ts":4}"#.utf8))
        }
    }

    @Test("headers round-trip with every optional member")
    func roundTrip() throws {
        let request = RequestHeader(id: "c-1", deadline: 1_764_000_000_000, user: "u\"1", meta: ["traceparent": "00-ab", "b": "\n"], idem: "k")
        #expect(try RequestHeader.decode(request.encoded()) == request)
        let reply = ReplyHeader(id: "c-1", code: .invalidArgument, message: "field 'x'", details: .object(["field": .string("x")]))
        #expect(try ReplyHeader.decode(reply.encoded()) == reply)
        let event = EventHeader(id: "e-1", source: "s", instance: "h:1", seq: 42, ts: -5, user: "u", meta: ["k": "v"])
        #expect(try EventHeader.decode(event.encoded()) == event)
        #expect(String(decoding: ReplyHeader(id: "x").encoded(), as: UTF8.self) == #"{"id":"x","code":0}"#)
    }
}
