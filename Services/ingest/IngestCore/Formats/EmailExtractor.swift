import Bus
import Contracts
import Foundation
import Wire

/// EML (an Internet message): the subject as title and heading, sender and date, the body
/// (the plain-text alternative, else the HTML one without markup), then each attachment of a
/// format ingest reads as a part of its own under "Attachment: name" — PDFs, images (OCR),
/// audio (transcribed), calendars (their events become tasks too), attached e-mails (three
/// levels deep, at most ``maximumAttachments`` of them). Attachments of other formats, too large,
/// damaged or beyond that number are left out; a missing tool or provider fails the e-mail (it
/// can be fixed and retried). MIME parts nested deeper than ``MIMEParser/maximumDepth`` fail it.
enum EmailExtractor {
    /// How deep attached e-mails are read.
    static let maximumDepth = 3
    /// Attachments read from one message (each may run a tool).
    static let maximumAttachments = 100

    static func extract(_ data: Data, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let budget = context.budget
        let (headers, body, attachments) = try await offThePool(cancelling: budget) { () throws(BusError) in
            let message: MIMEPart
            do throws(BusError) {
                message = try MIMEParser.parse(Array(data)[...], budget: budget)
            } catch where error.code == .invalidArgument {
                throw .invalidArgument("the e-mail '\(fileName)' cannot be read: \(error.message)")
            }
            guard message.headers["from"] != nil || message.headers["subject"] != nil || message.headers["content-type"] != nil else {
                throw .invalidArgument("'\(fileName)' is not an e-mail message: it has no From, Subject or Content-Type header")
            }
            var body: [ExtractedDocument] = []
            var attachments: [MIMEPart] = []
            try collect(message, body: &body, attachments: &attachments, budget: budget)
            return (message.headers, body, attachments)
        }
        var builder = DocumentBuilder()
        let subject = MIME.decodeWords(headers["subject"] ?? "").trimmingCharacters(in: .whitespaces)
        if !subject.isEmpty {
            builder.document.title = String(decoding: DocumentBuilder.singleLine(subject), as: UTF8.self)
            builder.heading(subject, level: 1)
        }
        let envelope = [("from", "From"), ("to", "To"), ("date", "Date")]
            .compactMap { key, label in headers[key].map { "\(label): \(MIME.decodeWords($0))" } }
        builder.paragraph(envelope.joined(separator: "\n"))
        for part in body { builder.append(part, heading: nil) }

        for attachment in attachments.prefix(maximumAttachments) where context.depth < maximumDepth {
            try budget.checkpoint()
            guard let document = try await read(attachment, context: context) else { continue }
            builder.append(document.document, heading: "Attachment: \(document.name)")
        }
        return builder.build()
    }

    /// Sorts the parts of `part` into body text and attachments; of alternatives, the plain one.
    /// Recursion as deep as the parts nest: at most ``MIMEParser/maximumDepth``.
    private static func collect(
        _ part: MIMEPart, body: inout [ExtractedDocument], attachments: inout [MIMEPart], budget: ExtractionBudget
    ) throws(BusError) {
        try budget.checkpoint()
        let type = part.contentType.type
        if type.hasPrefix("multipart/") {
            let children = part.parts
            if type == "multipart/alternative" {
                let texts = children.filter { !$0.isAttachment }
                let chosen = texts.first { $0.contentType.type == "text/plain" } ?? texts.first { $0.contentType.type == "text/html" } ?? texts.first
                if let chosen { try collect(chosen, body: &body, attachments: &attachments, budget: budget) }
                attachments += children.filter(\.isAttachment)
            } else {
                for child in children { try collect(child, body: &body, attachments: &attachments, budget: budget) }
            }
        } else if part.isAttachment || type == "message/rfc822" {
            attachments.append(part)
        } else if type == "text/plain" {
            body.append(try PlainTextExtractor.extract(TextDecoding.decode(part.decodedBody, charset: part.contentType.parameters["charset"]), budget: budget))
        } else if type == "text/html" {
            body.append(try HTMLExtractor.extract(part.decodedBody, charset: part.contentType.parameters["charset"], budget: budget))
        }
    }

    /// The document of an attachment, or nil when it is left out.
    private static func read(_ part: MIMEPart, context: ExtractionContext) async throws(BusError) -> (name: String, document: ExtractedDocument)? {
        let isMessage = part.contentType.type == "message/rfc822"
        let name = part.fileName ?? (isMessage ? "message.eml" : "attachment")
        let data = part.decodedBody
        guard let format = try? FormatDetection.check(fileName: name, mimeType: part.contentType.type, data: data) else { return nil }
        var inner = context
        inner.depth += 1
        do throws(BusError) {
            return (name, try await Extraction.extract(format, data, fileName: name, context: inner))
        } catch where error.code == .invalidArgument {
            return nil
        }
    }
}
