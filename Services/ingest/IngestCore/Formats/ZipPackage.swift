import Bus
import Foundation
import FoundationXML
import Wire
import ZIPFoundation
import ZipEntries

/// A document that is a zip of parts (DOCX, ODT, EPUB, PPTX), read within the job's
/// ``ExtractionBudget``: every byte inflated is taken from it (so all parts together stay within
/// what the job reserved of the worker's memory), an entry that inflates more than
/// `compressionRatio` times its compressed size (past the first MiB) is refused as a bomb, a part
/// larger than FoundationXML's parser reads is refused before it is unpacked further, and XML
/// that declares a DTD (entity expansion; office programs never write one) is refused before it
/// is parsed.
///
/// ZIPFoundation reads the archive's directory from the scratch file (its in-memory archive traps
/// on a directory that seeks past the end); each part is inflated from the file's bytes by
/// ``ZipEntryBytes/inflate(_:path:in:consume:)``, never by ZIPFoundation's extraction.
struct ZipPackage {
    /// How messages name a kind of document.
    struct Kind: Sendable {
        /// "Word document".
        let name: String
        /// "Word documents".
        let plural: String
        /// The program that writes them: "Word".
        let writer: String
        /// The extension to save the file again as: "docx".
        let saveAs: String
    }

    /// Inflated bytes an entry may have before its compression ratio is checked: a small part of
    /// repeated markup may legitimately compress very well.
    static let ratioGraceBytes = 1024 * 1024
    /// The most XML FoundationXML's parser reads at once: libxml2 without XML_PARSE_HUGE fails
    /// beyond 10,000,000 bytes (after parsing them all), so larger parts are refused unread.
    static let maximumXMLBytes = 10_000_000
    /// Entries listed at most (``paths(withPrefix:)``): a slide or chapter costs a parse each.
    static let maximumEntries = 20_000

    let fileName: String
    let kind: Kind
    let budget: ExtractionBudget
    private let archive: Archive
    private let bytes: [UInt8]

    /// Opens the zip `data`, whose scratch copy is at `file`.
    /// - Throws: `INVALID_ARGUMENT` when the archive's directory cannot be read.
    init(_ data: Data, file: URL, fileName: String, kind: Kind, budget: ExtractionBudget) throws(BusError) {
        self.fileName = fileName
        self.kind = kind
        self.budget = budget
        bytes = [UInt8](data)
        do {
            archive = try Archive(url: file, accessMode: .read)
        } catch {
            throw Self.damaged(fileName, kind: kind, "the zip archive is damaged or truncated")
        }
    }

    /// The file cannot be read, and why.
    func damaged(_ why: String) -> BusError { Self.damaged(fileName, kind: kind, why) }

    private static func damaged(_ fileName: String, kind: Kind, _ why: String) -> BusError {
        .invalidArgument("the \(kind.name) '\(fileName)' cannot be read: \(why); upload the complete file, saved again as .\(kind.saveAs)")
    }

    /// The file is a zip but lacks what its kind has.
    func notOfKind(missing what: String) -> BusError {
        .invalidArgument("'\(fileName)' is a zip archive but not a\(kind.name.first.map { "aeiouAEIOU".contains($0) } == true ? "n" : "") \(kind.name) (it has no \(what))")
    }

    /// The paths of the entries starting with `prefix`, in the directory's order.
    /// - Throws: `INVALID_ARGUMENT` for more than ``maximumEntries`` entries; `CANCELLED`.
    func paths(withPrefix prefix: String) throws(BusError) -> [String] {
        var paths: [String] = []
        var count = 0
        for entry in archive {
            count += 1
            guard count <= Self.maximumEntries else {
                throw .invalidArgument("'\(fileName)' is refused: its zip archive has more than \(Self.maximumEntries) entries, more than a \(kind.name) has")
            }
            if count % 1024 == 0 { try budget.checkpoint() }
            let path = entry.path
            if path.hasPrefix(prefix) { paths.append(path) }
        }
        return paths
    }

    /// Parses `xml`, the part at `path`, with `reader` (FoundationXML's parser, which aborts at
    /// its next element once the job is cancelled if `reader` checks the budget).
    /// - Throws: `INVALID_ARGUMENT` when it is not well-formed XML; `CANCELLED`.
    func parse(_ xml: Data, path: String, with reader: some XMLParserDelegate) throws(BusError) {
        let parser = XMLParser(data: xml)
        parser.delegate = reader
        let parsed = parser.parse()
        try budget.checkpoint()
        guard parsed else { throw damaged("its part \(path) is not well-formed XML") }
    }

    /// Why unpacking stopped.
    private enum Refusal: Error {
        case tooLarge, ratio, parserLimit, cancelled
    }

    /// The bytes of the zip entry at `path`, if there is one, taken from the budget. `xml`: the
    /// part is XML for FoundationXML's parser, so one with a DTD or not in UTF-8 is refused (an
    /// XHTML chapter, read by ``HTMLExtractor``, is not).
    /// - Throws: `INVALID_ARGUMENT` for a damaged entry, one over the compression ratio, more
    ///   than the budget allows, or XML with a DTD; `CANCELLED`.
    func part(_ path: String, xml: Bool = true) throws(BusError) -> Data? {
        guard let entry = archive[path] else { return nil }
        let tooLarge = BusError.invalidArgument(
            "'\(fileName)' unpacks to more XML than a \(kind.name) of its size may (\(budget.expansionAllowance / 1024) KiB: INGEST_MAX_COMPRESSION_RATIO times its size, at most INGEST_MAX_INFLATED_MB); split the document")
        let bomb = BusError.invalidArgument(
            "'\(fileName)' is refused: its part \(path) inflates to more than \(budget.compressionRatio) times its compressed size, as zip bombs do (INGEST_MAX_COMPRESSION_RATIO)")
        let (ratioLimit, overflow) = max(1, Int(clamping: entry.compressedSize)).multipliedReportingOverflow(by: budget.compressionRatio)
        let maximum = overflow ? Int.max : max(ratioLimit, Self.ratioGraceBytes)
        let parserLimit = BusError.invalidArgument(
            "the \(kind.name) '\(fileName)' cannot be read: its part \(path) has more than \(Self.maximumXMLBytes) bytes of XML, the most the XML parser reads; split the document")
        // The sizes the zip declares are checked first, then what really inflates (they may lie).
        let declared = Int(clamping: entry.uncompressedSize)
        guard declared <= maximum else { throw bomb }
        guard declared <= budget.remaining else { throw tooLarge }
        guard declared <= Self.maximumXMLBytes else { throw parserLimit }
        var content = Data()
        let budget = budget
        do {
            try ZipEntryBytes.inflate(entry, path: path, in: bytes) { chunk in
                if budget.isCancelled { throw Refusal.cancelled }
                guard content.count + chunk.count <= maximum else { throw Refusal.ratio }
                guard content.count + chunk.count <= Self.maximumXMLBytes else { throw Refusal.parserLimit }
                guard budget.take(chunk.count) else { throw Refusal.tooLarge }
                content.append(chunk)
            }
        } catch Refusal.tooLarge {
            throw tooLarge
        } catch Refusal.ratio {
            throw bomb
        } catch Refusal.parserLimit {
            throw parserLimit
        } catch Refusal.cancelled {
            throw .cancelled("the job was cancelled")
        } catch is ZipEntryBytes.Damaged {
            throw damaged("the part \(path) ends before its compressed data does")
        } catch {
            throw damaged("the part \(path) is damaged")
        }
        if xml, let problem = XMLSafety.problem(content, kind: kind) {
            throw damaged("its part \(path) \(problem)")
        }
        return content
    }
}

/// What XML an office document may hold before FoundationXML's parser (libxml2) sees it.
enum XMLSafety {
    /// Why `xml` is refused, if it is: a DTD (`<!DOCTYPE`, `<!ENTITY`: entity expansion, the
    /// "billion laughs"; office programs never write one) or an encoding other than UTF-8, in
    /// which such a declaration would not be seen here.
    static func problem(_ xml: Data, kind: ZipPackage.Kind) -> String? {
        xml.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> String? in
            if bytes.count >= 2, bytes[0] == 0xFE || bytes[0] == 0xFF || bytes[0] == 0x00 || bytes[1] == 0x00 {
                return "is not UTF-8 (as \(kind.writer) writes it)"
            }
            var index = 0
            while index + 1 < bytes.count {
                if bytes[index] == 0x3C, bytes[index + 1] == 0x21 {  // "<!"
                    let rest = UnsafeRawBufferPointer(rebasing: bytes[(index + 2)...])
                    if !rest.starts(with: "--".utf8), !rest.starts(with: "[CDATA[".utf8) {
                        return "declares a DTD, which \(kind.plural) never do"
                    }
                }
                index += 1
            }
            return nil
        }
    }
}
