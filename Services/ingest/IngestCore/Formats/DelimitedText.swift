import Wire

/// RFC 4180 delimited text: fields separated by a delimiter, rows by line ends; a field in
/// double quotes may hold delimiters, line ends and doubled quotes.
enum DelimitedText {
    /// The rows of `bytes` (UTF-8), each a list of fields; one pass.
    static func rows(_ bytes: ArraySlice<UInt8>, delimiter: UInt8, budget: ExtractionBudget) throws(BusError) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var field: [UInt8] = []
        var quoted = false, index = bytes.startIndex, fieldStarted = false
        func endField() {
            row.append(String(decoding: field, as: UTF8.self))
            field = []
            fieldStarted = false
        }
        func endRow() {
            endField()
            if !(row.count == 1 && row[0].isEmpty) { rows.append(row) }
            row = []
        }
        var steps = 0
        while index < bytes.endIndex {
            steps &+= 1
            if steps & 0xFFFF == 0 { try budget.checkpoint() }
            let byte = bytes[index]
            if quoted {
                if byte == 0x22 {
                    if index + 1 < bytes.endIndex, bytes[index + 1] == 0x22 {
                        field.append(0x22)
                        index += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(byte)
                }
            } else if byte == 0x22, !fieldStarted {
                quoted = true
                fieldStarted = true
            } else if byte == delimiter {
                endField()
            } else if byte == 0x0A || byte == 0x0D {
                if byte == 0x0D, index + 1 < bytes.endIndex, bytes[index + 1] == 0x0A { index += 1 }
                endRow()
            } else {
                field.append(byte)
                fieldStarted = true
            }
            index += 1
        }
        if fieldStarted || !field.isEmpty || !row.isEmpty { endRow() }
        return rows
    }

    /// The likely delimiter of comma-separated text: `;` (European spreadsheets) or a tab when
    /// the first line has more of them than commas, else `,`.
    static func guessDelimiter(_ firstLine: ArraySlice<UInt8>) -> UInt8 {
        let counts = [UInt8(0x2C), 0x3B, 0x09].map { delimiter in (delimiter, firstLine.filter { $0 == delimiter }.count) }
        return counts.max { $0.1 < $1.1 }.flatMap { $0.1 > 0 ? $0.0 : nil } ?? 0x2C
    }
}
