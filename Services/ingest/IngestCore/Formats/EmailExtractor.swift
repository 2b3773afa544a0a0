import Bus
import Contracts
import Foundation
import Threads
import Wire

/// EML (an Internet message): the subject as title and heading, sender and date, the body
/// (the plain-text alternative, else the HTML one without markup), then each attachment of a
/// format ingest reads as a part of its own under "Attachment: name" — PDFs, images (OCR),
/// audio (transcribed), calendars (their events become tasks too), attached e-mails (three
/// levels deep). Attachments of other formats, too large, or damaged are left out; a missing
/// tool or provider fails the e-mail (it can be fixed and retried).
enum EmailExtractor {
    /// How deep attached e-mails are read.
    static let maximumDepth = 3

    static func extract(_ data: Data, fileName: String, context: ExtractionContext) async throws(BusError) -> ExtractedDocument {
        let (headers, body, attachments) = try await offThePool { () throws(BusError) in
            let message = MIMEPart(Array(data)[...])
            guard message.headers["from"] != nil || message.headers["subject"] != nil || message.headers["content-type"] != nil else {
                throw .invalidArgument("'\(fileName)' is not an e-mail message: it has no From, Subject or Content-Type header")
            }
            var body: [ExtractedDocument] = []
            var attachments: [MIMEPart] = []
            collect(message, body: &body, attachments: &attachments)
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

        for attachment in attachments where context.depth < maximumDepth {
            guard let document = try await read(attachment, context: context) else { continue }
            builder.append(document.document, heading: "Attachment: \(document.name)")
        }
        return builder.build()
    }

    /// Sorts the parts of `part` into body text and attachments; of alternatives, the plain one.
    private static func collect(_ part: MIMEPart, body: inout [ExtractedDocument], attachments: inout [MIMEPart]) {
        let type = part.contentType.type
        if type.hasPrefix("multipart/") {
            let children = part.parts
            if type == "multipart/alternative" {
                let texts = children.filter { !$0.isAttachment }
                let chosen = texts.first { $0.contentType.type == "text/plain" } ?? texts.first { $0.contentType.type == "text/html" } ?? texts.first
                if let chosen { collect(chosen, body: &body, attachments: &attachments) }
                attachments += children.filter(\.isAttachment)
            } else {
                for child in children { collect(child, body: &body, attachments: &attachments) }
            }
        } else if part.isAttachment || type == "message/rfc822" {
            attachments.append(part)
        } else if type == "text/plain" {
            body.append(PlainTextExtractor.extract(TextDecoding.decode(part.decodedBody, charset: part.contentType.parameters["charset"])))
        } else if type == "text/html" {
            body.append(HTMLExtractor.extract(part.decodedBody, charset: part.contentType.parameters["charset"]))
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
