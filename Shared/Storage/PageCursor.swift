import Foundation
import GRDB
import Wire

/// Opaque page cursors: base64url of `{"l": list, "k": [sort keys of the last row]}`. A cursor
/// names its list, so one list's cursor is refused by another.
public enum PageCursor {
    /// The longest cursor accepted (4,096 characters).
    public static let maximumLength = 4096

    /// `field 'cursor' must be a cursor this list returned`.
    public static let invalid = Field.invalid("cursor", "is not a cursor this list returned")

    public static func encode(list: String, keys: [DatabaseValue]) -> String {
        let values: [JSONValue] = keys.map { value in
            switch value.storage {
            case .int64(let number): .int(number)
            case .double(let number): .double(number)
            case .string(let text): .string(text)
            case .blob, .null: .null
            }
        }
        return Base64URL.encode(Data(JSONValue.object(["l": .string(list), "k": .array(values)]).jsonText.utf8))
    }

    /// The sort keys of a cursor `list` returned.
    /// - Throws: ``invalid`` for anything else (another list's cursor, a wrong number of keys).
    public static func decode(_ cursor: String, list: String, keyCount: Int) throws(BusError) -> [DatabaseValue] {
        guard cursor.utf8.count <= maximumLength, let data = Base64URL.decode(cursor),
              let object = try? JSONValue.parse(data).objectValue,
              object["l"]?.stringValue == list, let keys = object["k"]?.arrayValue, keys.count == keyCount
        else { throw invalid }
        return keys.map { key in
            if let number = key.intValue { return number.databaseValue }
            if let number = key.doubleValue { return number.databaseValue }
            if let text = key.stringValue { return text.databaseValue }
            return .null
        }
    }
}

/// URL-safe base64 without padding, for cursors.
public enum Base64URL {
    public static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
