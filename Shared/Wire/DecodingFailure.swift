import Foundation

/// Turns a `DecodingError` into the sentence an `INVALID_ARGUMENT` reply carries, naming the
/// field by its path (`cards[2].front`). Public for services that decode nested JSON themselves
/// (a sync change's record) and want the same messages.
public enum DecodingFailure {
    /// The sentence for `error`; other errors as they describe themselves.
    public static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing field '\(path(context.codingPath + [key]))'"
        case .valueNotFound(let type, let context):
            return "field '\(path(context.codingPath))' must not be null (expected \(name(of: type)))"
        case .typeMismatch(let type, let context):
            return "field '\(path(context.codingPath))' must be \(name(of: type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "payload is not valid JSON: \(context.debugDescription)" }
            return "field '\(path(context.codingPath))' is invalid: \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text.isEmpty ? "(payload)" : text
    }

    private static func name(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is Date.Type: "an ISO 8601 date-time"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}
