import Foundation

/// Appends JSON text; used for values and for the hand-built headers.
struct JSONWriter {
    var text = ""

    mutating func write(_ value: JSONValue, pretty: Bool, indent: Int) {
        switch value {
        case .null: text += "null"
        case .bool(let flag): text += flag ? "true" : "false"
        case .int(let number): text += String(number)
        case .double(let number): text += number.isFinite ? String(number) : "null"
        case .string(let string): writeString(string)
        case .array(let items):
            guard !items.isEmpty else { text += "[]"; return }
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                if pretty { newline(indent + 1) }
                write(item, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(indent) }
            text += "]"
        case .object(let members):
            guard !members.isEmpty else { text += "{}"; return }
            text += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                if pretty { newline(indent + 1) }
                writeString(key)
                text += pretty ? ": " : ":"
                write(members[key]!, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(indent) }
            text += "}"
        }
    }

    private mutating func newline(_ indent: Int) {
        text += "\n"
        text += String(repeating: "  ", count: indent)
    }

    mutating func writeString(_ string: String) {
        text += "\""
        var needsEscaping = false
        for unit in string.utf8 where unit < 0x20 || unit == 0x22 || unit == 0x5C {
            needsEscaping = true
            break
        }
        if !needsEscaping {
            text += string
        } else {
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
