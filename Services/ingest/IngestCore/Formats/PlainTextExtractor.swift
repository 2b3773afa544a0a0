import Wire

/// TXT: paragraphs separated by blank lines, lines within a paragraph kept.
enum PlainTextExtractor {
    static func extract(_ text: String, budget: ExtractionBudget) throws(BusError) -> ExtractedDocument {
        var builder = DocumentBuilder()
        for paragraph in TextLines.paragraphs(TextLines.lines(Array(text.utf8))) {
            try budget.checkpoint()
            builder.paragraph(utf8: TextLines.joined(paragraph))
        }
        return builder.build()
    }
}
