import Contracts
import Foundation
@testable import IngestCore
import Testing
import Wire

/// The details of reading each format, without the bus.
@Suite("Reading formats")
struct ParserTests {
    @Test("text in UTF-8 (with or without BOM), UTF-16 (with BOM, or obviously without) and Windows-1252/Latin-1 is read correctly")
    func textEncodings() {
        let text = "Caffè “latte” costs 3 €"
        #expect(TextDecoding.decode(Data(text.utf8)).text == text)
        #expect(TextDecoding.decode(Data([0xEF, 0xBB, 0xBF]) + Data(text.utf8)) == (text, .utf8))
        #expect(TextDecoding.decode(Data([0xFE, 0xFF]) + text.data(using: .utf16BigEndian)!) == (text, .utf16BE))
        #expect(TextDecoding.decode(Data([0xFF, 0xFE]) + text.data(using: .utf16LittleEndian)!) == (text, .utf16LE))
        #expect(TextDecoding.decode("Plain ASCII in UTF-16 without a mark".data(using: .utf16LittleEndian)!).text == "Plain ASCII in UTF-16 without a mark")
        let windows = Data([0x43, 0x61, 0x66, 0x66, 0xE8, 0x20, 0x93, 0x6C, 0x61, 0x74, 0x74, 0x65, 0x94, 0x20, 0x63, 0x6F, 0x73, 0x74, 0x73, 0x20, 0x33, 0x20, 0x80])
        #expect(TextDecoding.decode(windows) == (text, .latin1))
    }

    @Test("the format comes from the extension (any case), else the media type, else the first bytes")
    func formatDetection() throws {
        #expect(FormatDetection.format(fileName: "Notes.MD", mimeType: "application/octet-stream", data: Data("x".utf8)) == .md)
        #expect(FormatDetection.format(fileName: "upload", mimeType: "text/html; charset=utf-8", data: Data("x".utf8)) == .html)
        #expect(FormatDetection.format(fileName: "upload", mimeType: nil, data: try Fixture.data("lecture.pdf")) == .pdf)
        #expect(FormatDetection.format(fileName: "upload", mimeType: nil, data: try Fixture.data("scan.png")) == .png)
        #expect(FormatDetection.format(fileName: "upload", mimeType: nil, data: try Fixture.data("lecture.vtt")) == .vtt)
        #expect(FormatDetection.format(fileName: "upload", mimeType: nil, data: Data("hello".utf8)) == nil)
        #expect(throws: Never.self) { try FormatDetection.check(fileName: "lecture.pdf", mimeType: nil, data: try Fixture.data("lecture.pdf")) }
    }

    @Test("ODT and EPUB are told by their mimetype entry, PPTX by ppt/presentation.xml, RTF by {\\rtf, HEIC by its brand (not M4A); OLE2 only by name")
    func officeAndPhotoDetection() throws {
        let sniffed: [(String, IngestFormat?)] = [
            ("notes.odt", .odt), ("book.epub", .epub), ("slides.pptx", .pptx), ("report.docx", .docx), ("hello.rtf", .rtf), ("scan.heic", .heic),
            ("speech.m4a", .m4a), ("legacy.doc", nil), ("legacy.ppt", nil),
        ]
        for (name, format) in sniffed {
            #expect(FormatDetection.format(fileName: "upload", mimeType: nil, data: try Fixture.data(name)) == format, "\(name)")
        }
        #expect(FormatDetection.format(fileName: "OLD.PPS", mimeType: nil, data: Data()) == .ppt)
        #expect(FormatDetection.format(fileName: "upload", mimeType: "image/heif", data: Data()) == .heic)
        #expect(FormatDetection.format(fileName: "upload", mimeType: "application/epub+zip", data: Data()) == .epub)
        #expect(FormatDetection.format(fileName: "upload", mimeType: "application/msword", data: Data()) == .doc)
        #expect(throws: Never.self) { try FormatDetection.check(fileName: "saved-by-word.doc", mimeType: nil, data: try Fixture.data("hello.rtf")) }
        #expect(throws: Never.self) { try FormatDetection.check(fileName: "legacy.ppt", mimeType: nil, data: try Fixture.data("legacy.ppt")) }
        #expect(throws: BusError.self) { try FormatDetection.check(fileName: "renamed.ppt", mimeType: nil, data: try Fixture.data("slides.pptx")) }
        #expect(throws: BusError.self) { try FormatDetection.check(fileName: "photo.heic", mimeType: nil, data: try Fixture.data("speech.m4a")) }
        #expect(throws: BusError.self) { try FormatDetection.check(fileName: "notes.odt", mimeType: nil, data: Data("not a zip".utf8)) }
    }

    @Test("EPUB hrefs resolve against the OPF's folder, percent-decoded, without fragments; none may leave the zip's root")
    func epubPaths() {
        #expect(EPUBExtractor.resolve("../Text/ch%201.xhtml#start", against: "OEBPS/xhtml/") == "OEBPS/Text/ch 1.xhtml")
        #expect(EPUBExtractor.resolve("chapter1.xhtml", against: "") == "chapter1.xhtml")
        #expect(EPUBExtractor.resolve("../../etc/passwd", against: "OEBPS/") == nil)
        #expect(EPUBExtractor.resolve("/etc/passwd", against: "OEBPS/") == nil)
        #expect(EPUBExtractor.resolve("https://example.com/x.xhtml", against: "") == nil)
        #expect(EPUBExtractor.resolve("#only-a-fragment", against: "OEBPS/") == nil)
    }

    @Test("Markdown: setext and ATX headings (closing hashes dropped), rules and #hashtags are not headings, front matter skipped")
    func markdown() throws {
        let document = try MarkdownExtractor.extract("""
            ---
            title: ignored
            ---
            Big title
            =========

            ## Section ##
            #hashtag is text
            ***
            Smaller
            -------
            [link text](http://x) and ![an image](i.png) and `code`.
            """, budget: .unlimited)
        let blocks = document.blocks.map { (document.string($0), $0.kind) }
        #expect(blocks.map(\.0) == ["Big title", "Section", "#hashtag is text", "Smaller", "link text and an image and code."])
        #expect(blocks.map(\.1) == [.heading(level: 1), .heading(level: 2), .paragraph, .heading(level: 2), .paragraph])
        #expect(document.title == "Big title")
    }

    @Test("HTML: character references, preformatted text, quoted > in attributes and a lone < are handled")
    func html() throws {
        let document = try HTMLExtractor.extract(Data("""
            <p title="a > b">x &lt; y &#8594; &#x3B1; &eacute;t&eacute; &unknown; 3 < 4</p>
            <pre>line one
              indented</pre>
            """.utf8), budget: .unlimited)
        #expect(document.blocks.map { document.string($0) } == ["x < y → α été &unknown; 3 < 4", "line one\n  indented"])
    }

    @Test("delimited text: quoted delimiters and line breaks, doubled quotes, CRLF, and ; or tab guessed as the delimiter")
    func delimited() throws {
        let rows = try DelimitedText.rows(Array("a,\"b, \"\"c\"\"\r\nd\"\r\ne,f\r\n".utf8)[...], delimiter: 0x2C, budget: .unlimited)
        #expect(rows == [["a", "b, \"c\"\r\nd"], ["e", "f"]])
        #expect(DelimitedText.guessDelimiter(Array("front;back;tags".utf8)[...]) == 0x3B)
        #expect(DelimitedText.guessDelimiter(Array("front\tback".utf8)[...]) == 0x09)
        #expect(DelimitedText.guessDelimiter(Array("just one".utf8)[...]) == 0x2C)
    }

    @Test("store's own CSV export reads back as cards (header names the columns, kind kept, tags split at ;)")
    func storeExportReadsBack() throws {
        let csv = "id,front,back,kind,tags,setId\r\nc1,Term,Its meaning,definition,bio;cell biology,s1\r\n"
        let document = try FlashcardTableExtractor.extract(csv, delimiter: nil, fileName: "export.csv", budget: .unlimited)
        #expect(document.cards.map(\.front) == ["Term"])
        #expect(document.cards.map(\.kind) == [.definition])
        #expect(document.cards.map(\.tags) == [["bio", "cell biology"]])
    }

    @Test("subtitle times: SRT commas, VTT dots, with or without hours")
    func subtitleTimes() {
        #expect(SubtitleExtractor.seconds("01:02:03,456") == 3723.456)
        #expect(SubtitleExtractor.seconds("02:03.5") == 123.5)
        #expect(SubtitleExtractor.seconds("nonsense") == nil)
        #expect(SubtitleExtractor.times("00:00:01.000 --> 00:00:02.500 line:0")! == (1, 2.5))
        #expect(SubtitleExtractor.stripTags("{\\an8}<b>Bold</b> &amp; plain") == "Bold & plain")
    }

    @Test("subtitle times are ASCII digits in range: exponents, infinities, signs, minute 60 and more than 1,000 hours are none")
    func subtitleTimeRanges() {
        for text in ["1e308:00", "inf:00", "-1:00", "00:60", "00:60:00", "+1:00", "1:2:3:4", "٣:00", "0x1:00", "1000:00:00.001", "00:01,"] {
            #expect(SubtitleExtractor.seconds(text) == nil, "\(text)")
        }
        #expect(SubtitleExtractor.seconds("1000:00:00") == DocumentValues.maximumMediaSeconds)
        #expect(SubtitleExtractor.seconds("125:00.25") == 7500.25)
        #expect(SubtitleExtractor.stripTags("a {{{ b") == "a {{{ b")
    }

    @Test("subtitle cues: character references decoded once (numeric and named ones too), tags removed")
    func subtitleEntities() throws {
        let srt = "1\n00:00:01,000 --> 00:00:02,000\n<i>Rock &#39;n&#39; roll</i> &amp; blues: &amp;lt; is &quot;&lt;&quot;, caf&eacute;\n"
        let document = try SubtitleExtractor.extract(srt, fileName: "song.srt", budget: .unlimited)
        #expect(document.blocks.map { document.string($0) } == ["Rock 'n' roll & blues: &lt; is \"<\", café"])
    }

    @Test("HTML in an e-mail part: the part's charset wins over the page's own declaration, as a browser reads a page by its HTTP header")
    func htmlCharsetFromOutside() throws {
        let latin1 = Data("<p>citt".utf8) + Data([0xE0]) + Data(" bella</p>".utf8)
        let document = try HTMLExtractor.extract(latin1, charset: "iso-8859-1", budget: .unlimited)
        #expect(document.blocks.map { document.string($0) } == ["città bella"])
        // A mail program that re-encoded the part leaves the page's old declaration behind.
        let reencoded = try HTMLExtractor.extract(Data("<meta charset=\"iso-8859-1\"><p>città</p>".utf8), charset: "utf-8", budget: .unlimited)
        #expect(reencoded.blocks.map { reencoded.string($0) } == ["città"])
        // With no charset outside, the page's own: these two bytes are é in UTF-8, Ã© in Latin-1.
        let declared = try HTMLExtractor.extract(Data("<meta charset=\"iso-8859-1\"><p>caf".utf8) + Data([0xC3, 0xA9]), charset: nil, budget: .unlimited)
        #expect(declared.blocks.map { declared.string($0) } == ["cafÃ©"])
    }

    @Test("Anki export without a #separator line: the delimiter is guessed from its first row, not the header")
    func ankiWithoutSeparator() throws {
        let document = try FlashcardTableExtractor.extract("#html:true\nCapital of Italy?\t<b>Rome</b>\n", delimiter: nil, fileName: "deck.txt", budget: .unlimited)
        #expect(document.cards.map(\.front) == ["Capital of Italy?"])
        #expect(document.cards.map(\.back) == ["Rome"])
    }

    @Test("text is cut to the store's limit in Unicode scalars, between characters (accents and emoji sequences kept whole)")
    func clippedToScalars() {
        let accented = String(repeating: "e\u{301}", count: 300)
        #expect(accented.clipped(toScalars: 200).unicodeScalars.elementsEqual(String(repeating: "e\u{301}", count: 100).unicodeScalars))
        #expect(accented.clipped(toScalars: 201).unicodeScalars.count == 200)
        let scientist = "\u{1F469}\u{1F3FD}\u{200D}\u{1F52C}"  // woman, skin tone, joiner, microscope: one character
        let emoji = String(repeating: scientist, count: 60)
        #expect(emoji.clipped(toScalars: 200).unicodeScalars.elementsEqual(String(repeating: scientist, count: 50).unicodeScalars))
        #expect(emoji.clipped(toScalars: 203).count == 50)
        #expect("e\u{301}\u{302}\u{303}\u{304}".clipped(toScalars: 3).unicodeScalars.count == 3, "a character longer than the limit is cut")
        #expect("short".clipped(toScalars: 200) == "short")
        #expect("".clipped(toScalars: 0) == "")
    }

    @Test("iCalendar: folded lines, escaped text, durations, floating times as UTC")
    func icalendar() throws {
        let lines = try ICalendar.contentLines("SUMMARY:Long\r\n  title\r\nDESCRIPTION:a\\, b\\nc\r\n", budget: .unlimited)
        #expect(lines == ["SUMMARY:Long title", "DESCRIPTION:a\\, b\\nc"])
        #expect(ICalendar.Property(lines[1])?.text == "a, b\nc")
        #expect(ICalendar.duration("P1DT2H30M") == 95_400)
        #expect(ICalendar.duration("PT45M") == 2700)
        #expect(ICalendar.duration("P1W") == 604_800)
        let floating = ICalendar.Property("DTSTART:20261122T100000")!
        #expect(ICalendar.date(floating) == ISO8601DateFormatter().date(from: "2026-11-22T10:00:00Z"))
        let quotedZone = ICalendar.Property("DTSTART;TZID=\"America/New_York\":20261122T100000")!
        #expect(ICalendar.date(quotedZone) == ISO8601DateFormatter().date(from: "2026-11-22T15:00:00Z"))
    }

    @Test("iCalendar numbers: fields out of range or not ASCII digits make no date, dates clamp to years 0001–9999, durations saturate")
    func icalendarRanges() {
        for value in ["00000101", "20261301", "20261100", "20261122T240000", "20261122T126000", "²⁰²⁶¹¹²⁰", "١٢٣٤٠١٠١", "2026112"] {
            #expect(ICalendar.date(ICalendar.Property(name: "DTSTART", parameters: [:], value: value)) == nil, "\(value)")
        }
        let behind = ICalendar.Property(name: "DTSTART", parameters: ["TZID": "Etc/GMT+12"], value: "99991231T235959")
        #expect(ICalendar.date(behind) == DocumentValues.latestDate)
        #expect(ICalendar.duration("P99999999999999999999W") == ICalendar.maximumDurationSeconds)
        #expect(ICalendar.duration("P\u{10}W") == nil)
        #expect(DocumentValues.adding(ICalendar.maximumDurationSeconds, to: Date(timeIntervalSince1970: 0)) == DocumentValues.latestDate)
        #expect(DocumentValues.adding(.infinity, to: Date(timeIntervalSince1970: 0)) == DocumentValues.latestDate)
        #expect(ISO8601.format(DocumentValues.latestDate) == "9999-12-31T23:59:59.999Z")
        #expect(ISO8601.format(DocumentValues.earliestDate) == "0001-01-01T00:00:00.000Z")
    }

    @Test("MIME: encoded words (adjacent ones joined), quoted-printable soft breaks, RFC 2231 file names")
    func mime() throws {
        #expect(MIME.decodeWords("=?utf-8?Q?Caff=C3=A8?= =?utf-8?B?IGxhdHRl?= today") == "Caffè latte today")
        #expect(MIME.decodeWords("Re: =?iso-8859-1?Q?citt=E0_bella?=") == "Re: città bella")
        #expect(MIME.decodeWords("no encoding =? here") == "no encoding =? here")
        #expect(String(decoding: MIME.quotedPrintable(Array("soft=\r\nbreak =3D ok".utf8)[...]), as: UTF8.self) == "softbreak = ok")
        let part = try MIMEParser.parse(Array("Content-Disposition: attachment; filename*=utf-8''n%C3%A4me.pdf\r\n\r\nbody".utf8)[...], budget: .unlimited)
        #expect(part.fileName == "näme.pdf")
        #expect(part.isAttachment)
        #expect(String(decoding: part.decodedBody, as: UTF8.self) == "body")
    }

    @Test("laid-out lines (PDF, OCR) join into running text: hyphenated words whole again, a title kept on its own line")
    func unwrappedLines() {
        let lines = TextLines.lines(Array("Photosynthesis\nPlants convert light into chemi-\ncal energy in the\nleaves. It needs water.\n".utf8))
        #expect(String(decoding: TextLines.unwrapped(lines), as: UTF8.self)
            == "Photosynthesis\nPlants convert light into chemical energy in the leaves. It needs water.")
    }
}
