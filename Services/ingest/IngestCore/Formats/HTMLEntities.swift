/// HTML character references: numeric ones and the named ones study texts use.
enum HTMLEntities {
    /// `text` with the character references it holds decoded; unknown ones are left as they are.
    static func decoded(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(0x26) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x26, let (decoded, end) = reference(in: bytes, at: index) {
                out.append(contentsOf: decoded.utf8)
                index = end
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The text of the reference at `start` (an `&`) and the index after its `;`, if it is a known one.
    static func reference(in bytes: [UInt8], at start: Int) -> (text: String, end: Int)? {
        guard let end = bytes[start...].prefix(12).firstIndex(of: 0x3B), let decoded = text(named: bytes[(start + 1)..<end]) else { return nil }
        return (decoded, end + 1)
    }

    /// The text of `&name;` given `name` (without `&` and `;`), if known.
    private static func text(named name: ArraySlice<UInt8>) -> String? {
        let text = String(decoding: name, as: UTF8.self)
        if text.hasPrefix("#") {
            let digits = text.dropFirst()
            let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
            return value.flatMap(Unicode.Scalar.init).map { String(Character($0)) }
        }
        return named[text]
    }

    private static let named: [String: String] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " ", "copy": "©", "reg": "®", "trade": "™",
        "hellip": "…", "mdash": "—", "ndash": "–", "lsquo": "‘", "rsquo": "’", "ldquo": "“", "rdquo": "”", "laquo": "«",
        "raquo": "»", "bull": "•", "middot": "·", "deg": "°", "plusmn": "±", "times": "×", "divide": "÷", "euro": "€",
        "pound": "£", "cent": "¢", "yen": "¥", "sect": "§", "para": "¶", "frac12": "½", "frac14": "¼", "frac34": "¾",
        "sup2": "²", "sup3": "³", "micro": "µ", "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "pi": "π", "sigma": "σ",
        "omega": "ω", "Delta": "Δ", "Sigma": "Σ", "Omega": "Ω", "le": "≤", "ge": "≥", "ne": "≠", "asymp": "≈", "infin": "∞",
        "rarr": "→", "larr": "←", "harr": "↔", "agrave": "à", "aacute": "á", "acirc": "â", "auml": "ä", "egrave": "è",
        "eacute": "é", "ecirc": "ê", "euml": "ë", "igrave": "ì", "iacute": "í", "icirc": "î", "iuml": "ï", "ograve": "ò",
        "oacute": "ó", "ocirc": "ô", "ouml": "ö", "ugrave": "ù", "uacute": "ú", "ucirc": "û", "uuml": "ü", "ccedil": "ç",
        "ntilde": "ñ", "szlig": "ß", "Agrave": "À", "Aacute": "Á", "Egrave": "È", "Eacute": "É", "Igrave": "Ì", "Ograve": "Ò",
        "Ugrave": "Ù", "Auml": "Ä", "Ouml": "Ö", "Uuml": "Ü", "Ccedil": "Ç", "Ntilde": "Ñ", "iexcl": "¡", "iquest": "¿",
        "shy": "", "zwnj": "", "zwj": "", "thinsp": " ", "ensp": " ", "emsp": " ",
    ]
}
