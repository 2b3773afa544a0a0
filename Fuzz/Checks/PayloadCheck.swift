import Foundation
import Wire

/// Differential: our payload decoder answers only when it is sure, and when it answers it must
/// agree with Foundation's JSONDecoder configured as the wire's (which is what callers would get
/// otherwise). The JSON parser must also read back what the writer makes of a value it parsed.
public enum PayloadCheck {
    enum Kind: String, Codable, Equatable { case card, note, deck }

    struct Inner: Codable, Equatable {
        var id: String
        var score: Double?
        var flags: [Bool]?
    }

    struct Sample: Codable, Equatable {
        var text: String
        var count: Int
        var big: Int64?
        var small: UInt8?
        var ratio: Double?
        var flag: Bool?
        var tags: [String]?
        var at: Date?
        var kind: Kind?
        var inner: Inner?
        var items: [Inner]?
        var table: [String: Int]?
    }

    public static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        if let ours = PayloadDecoder.decode(Sample.self, from: bytes) {
            let theirs: Sample
            do {
                theirs = try WireCoding.decoder().decode(Sample.self, from: Data(bytes))
            } catch {
                throw FuzzFailure("our decoder read \(ours), Foundation's refused: \(error)")
            }
            guard ours == theirs else { throw FuzzFailure("decoders disagree: ours \(ours), Foundation's \(theirs)") }
        }
        if let value = try? JSONValue.parse(Data(bytes)) {
            guard (try? JSONValue.parse(value.jsonData)) == value else { throw FuzzFailure("parsed JSON does not read back: \(value.jsonText)") }
        }
    }
}
