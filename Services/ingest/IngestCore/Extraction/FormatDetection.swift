import Bus
import Contracts
import Foundation
import Wire

/// Which format a file is, and whether its bytes can be that format at all: the checks of
/// `ingest.submit` made before anything is stored.
enum FormatDetection {
    /// Every format with its file extensions, media types and what ingest makes of it.
    static let catalog: [IngestFormatInfo] = [
        info(.txt, ["txt", "text"], ["text/plain"], "Text; paragraphs by blank lines. Anki's plain-text export (#separator: header) is imported as flashcards."),
        info(.md, ["md", "markdown", "mdown", "mkd"], ["text/markdown", "text/x-markdown"], "Markdown; headings become chunk boundaries and section titles."),
        info(.html, ["html", "htm", "xhtml"], ["text/html", "application/xhtml+xml"], "Text without markup, scripts or styles; headings kept."),
        info(.pdf, ["pdf"], ["application/pdf"], "Text per page with page numbers (pdftotext)."),
        info(.docx, ["docx"], ["application/vnd.openxmlformats-officedocument.wordprocessingml.document"], "Paragraphs and headings of a Word document."),
        info(.csv, ["csv"], ["text/csv", "application/csv"], "Flashcards: front, back, tags (a header row may name them)."),
        info(.tsv, ["tsv", "tab"], ["text/tab-separated-values"], "Flashcards: front, back, tags, tab-separated."),
        info(.srt, ["srt"], ["application/x-subrip", "text/srt"], "A transcript; chunks carry start and end seconds."),
        info(.vtt, ["vtt"], ["text/vtt"], "A WebVTT transcript; chunks carry start and end seconds."),
        info(.ics, ["ics", "ical", "icalendar"], ["text/calendar"], "Calendar: events and to-dos become tasks, study events study sessions."),
        info(.eml, ["eml"], ["message/rfc822"], "An e-mail: its body (plain or HTML) and attachments of these formats."),
        info(.png, ["png"], ["image/png"], "Text by OCR (tesseract)."),
        info(.jpeg, ["jpg", "jpeg", "jpe"], ["image/jpeg", "image/jpg"], "Text by OCR (tesseract)."),
        info(.odt, ["odt"], ["application/vnd.oasis.opendocument.text"], "Paragraphs and headings of an OpenDocument text (LibreOffice)."),
        info(.epub, ["epub"], ["application/epub+zip"], "The chapters of an e-book in reading order, with their headings."),
        info(.pptx, ["pptx"], ["application/vnd.openxmlformats-officedocument.presentationml.presentation"], "Each slide a page; titles are headings, speaker notes kept and marked."),
        info(.doc, ["doc"], ["application/msword"], "Text of a Word 97-2003 document (catdoc)."),
        info(.ppt, ["ppt", "pps"], ["application/vnd.ms-powerpoint", "application/mspowerpoint"], "Text of a PowerPoint 97-2003 presentation (catppt)."),
        info(.rtf, ["rtf"], ["application/rtf", "text/rtf"], "Text of a Rich Text Format document (catdoc)."),
        info(.heic, ["heic", "heif", "hif"], ["image/heic", "image/heif", "image/heic-sequence", "image/heif-sequence"], "A HEIC/HEIF photo: text by OCR (heif-convert, tesseract)."),
        info(.wav, ["wav", "wave"], ["audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"], "Transcribed by ai-gateway, long recordings in pieces cut at silences; segments become timed chunks."),
        info(.mp3, ["mp3"], ["audio/mpeg", "audio/mp3"], "Transcribed by ai-gateway, long recordings in pieces cut at silences; segments become timed chunks."),
        info(.m4a, ["m4a", "mp4a"], ["audio/mp4", "audio/x-m4a", "audio/m4a", "audio/aac"], "Transcribed by ai-gateway, long recordings in pieces cut at silences; segments become timed chunks."),
    ]

    private static func info(_ format: IngestFormat, _ extensions: [String], _ mimeTypes: [String], _ description: String) -> IngestFormatInfo {
        IngestFormatInfo(
            format: format, extensions: extensions, mimeTypes: mimeTypes, maxBytes: format.maxBytes, sourceKind: format.sourceKind,
            description: description)
    }

    private static let byExtension: [String: IngestFormat] = Dictionary(
        catalog.flatMap { info in info.extensions.map { ($0, info.format) } }, uniquingKeysWith: { first, _ in first })
    private static let byMimeType: [String: IngestFormat] = Dictionary(
        catalog.flatMap { info in info.mimeTypes.map { ($0, info.format) } }, uniquingKeysWith: { first, _ in first })

    /// The format of a file: by its extension, else its media type, else its first bytes.
    static func format(fileName: String, mimeType: String?, data: Data) -> IngestFormat? {
        if let format = byExtension[fileExtension(fileName)] { return format }
        if let mimeType, let format = byMimeType[baseMimeType(mimeType)] { return format }
        return sniff(data)
    }

    /// Checks a file before it is stored: a known format, not empty, within the format's size
    /// limit, and bytes that can be that format.
    /// - Throws: `INVALID_ARGUMENT` naming the file and what is wrong with it.
    static func check(fileName: String, mimeType: String?, data: Data) throws(BusError) -> IngestFormat {
        guard !data.isEmpty else {
            throw .invalidArgument("the file '\(fileName)' is empty: send its bytes in the request's attachment frame")
        }
        guard let format = format(fileName: fileName, mimeType: mimeType, data: data) else {
            let names = catalog.map { $0.format.rawValue.uppercased() }.joined(separator: ", ")
            throw .invalidArgument(
                "the format of '\(fileName)'\(mimeType.map { " (\($0))" } ?? "") is not supported; ingest reads \(names) (ingest.formats lists them)")
        }
        guard data.count <= format.maxBytes else {
            let what = switch format.sourceKind {
            case .image: "an image"
            case .audio: "a recording"
            default: "a material"
            }
            throw .invalidArgument(
                "the file '\(fileName)' has \(data.count) bytes; \(what) may have at most \(format.maxBytes / 1024 / 1024) MB")
        }
        if let problem = contentProblem(format, data, charset: charset(mimeType)) {
            throw .invalidArgument("the file '\(fileName)' is not a valid \(format.rawValue.uppercased()) file: \(problem)")
        }
        return format
    }

    /// `notes.PDF` -> `pdf`.
    static func fileExtension(_ fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return "" }
        return fileName[fileName.index(after: dot)...].lowercased()
    }

    /// `text/html; charset="ISO-8859-1"` -> `ISO-8859-1`; nil when the media type names none.
    static func charset(_ mimeType: String?) -> String? {
        mimeType.flatMap { MIME.valueAndParameters($0).parameters["charset"] }.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `text/plain; charset=utf-8` -> `text/plain`.
    static func baseMimeType(_ mimeType: String) -> String {
        String(mimeType.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// The format the first bytes say, for a file with neither a known extension nor type.
    static func sniff(_ data: Data) -> IngestFormat? {
        let head = [UInt8](data.prefix(1024))
        // HEIF's `ftyp` box is an ISO media file's, as M4A's: its brand tells them apart.
        for format in [IngestFormat.pdf, .png, .jpeg, .wav, .mp3, .heic, .m4a, .rtf] where matchesSignature(format, head) { return format }
        if head.starts(with: Array("PK\u{3}\u{4}".utf8)) { return zipFormat(data) }
        let text = String(decoding: head.prefix(256), as: UTF8.self)
        if text.hasPrefix("WEBVTT") { return .vtt }
        if text.hasPrefix("BEGIN:VCALENDAR") { return .ics }
        if text.lowercased().contains("<html") || text.lowercased().hasPrefix("<!doctype html") { return .html }
        return nil
    }

    /// What makes `data` impossible as `format` (in `charset`, when its media type names one), if anything.
    private static func contentProblem(_ format: IngestFormat, _ data: Data, charset: String?) -> String? {
        let head = [UInt8](data.prefix(1024))
        switch format {
        case .pdf:
            return matchesSignature(.pdf, head) ? nil : "it does not start with %PDF-"
        case .docx:
            return head.starts(with: Array("PK\u{3}\u{4}".utf8)) ? nil : "it is not a zip archive, as a .docx is (an old .doc? save it as .docx)"
        case .odt, .epub, .pptx:
            return head.starts(with: Array("PK\u{3}\u{4}".utf8)) ? nil : "it is not a zip archive, as a .\(format.rawValue) is"
        case .doc, .ppt:
            // Word also saves RTF under .doc; catdoc reads both.
            return matchesSignature(format, head) || (format == .doc && matchesSignature(.rtf, head)) ? nil
                : "it is not an OLE2 compound file, as Office 97-2003 files are (a newer file renamed? use its .\(format.rawValue)x name)"
        case .rtf:
            return matchesSignature(.rtf, head) ? nil : "it does not start with {\\rtf"
        case .png, .jpeg, .wav, .mp3, .m4a, .heic:
            return matchesSignature(format, head) ? nil : "its first bytes are not those of a \(format.rawValue.uppercased()) file"
        case .txt, .md, .html, .csv, .tsv, .srt, .vtt, .ics, .eml:
            let sample = [UInt8](data.prefix(8192))
            // UTF-16 has zero bytes; without a mark only text of mostly ASCII shows it by itself.
            if charset?.lowercased().hasPrefix("utf-16") == true { return nil }
            let unicode16 = TextDecoding.detect(sample)
            if unicode16 == .utf16LE || unicode16 == .utf16BE { return nil }
            return sample.contains(0) ? "it holds binary data, not text" : nil
        }
    }

    /// The major brands of HEIF files (ISO/IEC 23008-12): HEVC-coded images and sequences, and
    /// the generic image brands.
    static let heifBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs", "mif1", "msf1"]

    /// Which zip-based format a zip is: ODT and EPUB name theirs in a first, stored `mimetype`
    /// entry; a PowerPoint file has `ppt/presentation.xml`; anything else is taken for a DOCX.
    static func zipFormat(_ data: Data) -> IngestFormat {
        let head = data.prefix(128)
        if head.range(of: Data("mimetypeapplication/epub+zip".utf8)) != nil { return .epub }
        if head.range(of: Data("mimetypeapplication/vnd.oasis.opendocument.text".utf8)) != nil { return .odt }
        if data.range(of: Data("ppt/presentation.xml".utf8)) != nil { return .pptx }
        return .docx
    }

    private static func matchesSignature(_ format: IngestFormat, _ head: [UInt8]) -> Bool {
        switch format {
        case .pdf:
            // %PDF- may come after a few bytes of junk, as readers allow.
            let marker = Array("%PDF-".utf8)
            return head.count >= marker.count && (0...(head.count - marker.count)).contains { head[$0..<$0 + marker.count].elementsEqual(marker) }
        case .png: return head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        case .jpeg: return head.starts(with: [0xFF, 0xD8, 0xFF])
        case .wav: return head.count >= 12 && head.starts(with: Array("RIFF".utf8)) && head[8..<12].elementsEqual(Array("WAVE".utf8))
        case .mp3: return head.starts(with: Array("ID3".utf8)) || (head.count >= 2 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0)
        case .m4a: return head.count >= 8 && head[4..<8].elementsEqual(Array("ftyp".utf8)) && !matchesSignature(.heic, head)
        case .heic:
            guard head.count >= 12, head[4..<8].elementsEqual(Array("ftyp".utf8)) else { return false }
            return heifBrands.contains(String(decoding: head[8..<12], as: UTF8.self))
        case .doc, .ppt: return head.starts(with: [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1])
        case .rtf: return head.starts(with: Array("{\\rtf".utf8))
        default: return false
        }
    }
}
