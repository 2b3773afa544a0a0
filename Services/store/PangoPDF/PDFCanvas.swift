import CPangoCairo
import Foundation

/// A sheet of paper in PDF points (1/72 inch).
public struct PaperSize: Sendable, Equatable {
    public var width: Double
    public var height: Double
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// ISO 216 A4, 210 × 297 mm.
    public static let a4 = PaperSize(width: 595.276, height: 841.89)
    /// US Letter, 8.5 × 11 in.
    public static let letter = PaperSize(width: 612, height: 792)
}

/// A rectangle on the page, origin top left, in points.
public struct Box: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// How a block of text is set.
public struct TextStyle: Sendable, Equatable {
    /// Font size in points.
    public var size: Double
    public var bold: Bool
    /// Grey level of the ink, 0 black … 1 white.
    public var grey: Double
    /// Centred, or aligned to the start of each paragraph's direction.
    public var centred: Bool
    /// Each paragraph runs in the direction of its first letter (right to left for Arabic and
    /// Hebrew), or every paragraph runs left to right with right-to-left words inside it (a
    /// line of English naming a Hebrew set).
    public var paragraphsFollowTheirScript: Bool
    public init(size: Double, bold: Bool = false, grey: Double = 0, centred: Bool = false, paragraphsFollowTheirScript: Bool = true) {
        self.size = size
        self.bold = bold
        self.grey = grey
        self.centred = centred
        self.paragraphsFollowTheirScript = paragraphsFollowTheirScript
    }

    /// DejaVu Sans for Latin, Greek, Cyrillic, Arabic and Hebrew; WenQuanYi Micro Hei for
    /// Chinese, Japanese and Korean (fontconfig falls back between them per character).
    public static let fontFamilies = "DejaVu Sans, WenQuanYi Micro Hei"
}

/// Why a PDF could not be made.
public enum PDFCanvasError: Error, Equatable, CustomStringConvertible {
    /// The document would have more pages than the canvas was allowed.
    case tooManyPages(limit: Int)
    /// cairo reported an error (out of memory, a write that failed).
    case cairo(String)

    public var description: String {
        switch self {
        case .tooManyPages(let limit): "the document would have more than \(limit) pages"
        case .cairo(let status): "cairo: \(status)"
        }
    }
}

/// One PDF being drawn with cairo and laid out with pango: one surface and one drawing context,
/// written into memory. cairo's surfaces and pango's per-thread font maps are not thread-safe,
/// so a canvas is made, drawn and finished on one thread and is not `Sendable`.
public final class PDFCanvas {
    /// Pages begun so far (the first is begun by `init`).
    private var pageCount = 1
    private let maximumPages: Int
    private let output: PDFOutput
    private let surface: OpaquePointer
    private let cairo: OpaquePointer
    private var finished = false

    /// - Parameters:
    ///   - maximumPages: `showPage` throws `tooManyPages` rather than begin a page past this.
    ///   - title: the document's title in its metadata.
    public init(paper: PaperSize, maximumPages: Int, title: String) throws(PDFCanvasError) {
        self.maximumPages = maximumPages
        output = PDFOutput()
        let closure = Unmanaged.passUnretained(output).toOpaque()
        surface = cairo_pdf_surface_create_for_stream({ closure, data, length in
            guard let closure, let data else { return CAIRO_STATUS_WRITE_ERROR }
            Unmanaged<PDFOutput>.fromOpaque(closure).takeUnretainedValue().bytes.append(data, count: Int(length))
            return CAIRO_STATUS_SUCCESS
        }, closure, paper.width, paper.height)
        cairo = cairo_create(surface)
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE, title)
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATOR, "StudyBus")
        try check()
    }

    deinit {
        cairo_destroy(cairo)
        cairo_surface_destroy(surface)
    }

    /// Ends the current page and begins the next.
    /// - Throws: `tooManyPages` when the next page would be past the limit.
    public func showPage() throws(PDFCanvasError) {
        guard pageCount < maximumPages else { throw .tooManyPages(limit: maximumPages) }
        cairo_show_page(cairo)
        pageCount += 1
        try check()
    }

    /// Sets `text` in `box`: wrapped at word boundaries (inside a word where one is wider than
    /// the box), each paragraph in its own direction (Arabic and Hebrew right to left), and cut
    /// after the last line that fits, which then ends in "…", when it is taller than the box.
    /// Nothing is drawn outside the box, and the PDF's text is what is shown (pango's own
    /// ellipsis would carry the whole hidden rest as the "…"'s text, for search and copy).
    /// - Parameter verticallyCentred: centre the text's lines in the box's height.
    /// - Returns: the height the text took, at most the box's.
    @discardableResult
    public func text(_ text: String, in box: Box, style: TextStyle, verticallyCentred: Bool = false) -> Double {
        guard box.width > 0, box.height > 0 else { return 0 }
        let layout = makeLayout(text, width: box.width, style: style)
        defer { g_object_unref(UnsafeMutableRawPointer(layout)) }
        if height(of: layout) > box.height { cut(layout, text, toHeight: box.height) }
        let height = min(height(of: layout), box.height)
        let top = verticallyCentred ? box.y + (box.height - height) / 2 : box.y

        cairo_save(cairo)
        // The lines are cut to the box; the clip also holds a glyph's ascent or a mark that
        // reaches past its line inside it.
        cairo_rectangle(cairo, box.x, box.y, box.width, box.height)
        cairo_clip(cairo)
        cairo_set_source_rgb(cairo, style.grey, style.grey, style.grey)
        cairo_move_to(cairo, box.x, top)
        pango_cairo_show_layout(cairo, layout)
        cairo_restore(cairo)
        return height
    }

    /// Sets `layout`'s text to the lines of `text` that fit in `height` and "…": the text up to
    /// the end of the last line that fits, less a character at a time until the "…" fits on it.
    private func cut(_ layout: OpaquePointer, _ text: String, toHeight height: Double) {
        var end = 0
        let lines = pango_layout_get_iter(layout)
        defer { pango_layout_iter_free(lines) }
        repeat {
            var logical = PangoRectangle()
            pango_layout_iter_get_line_extents(lines, nil, &logical)
            guard Double(logical.y + logical.height) / Double(PANGO_SCALE) <= height, let line = pango_layout_iter_get_line_readonly(lines) else { break }
            end = Int(line.pointee.start_index + line.pointee.length)
        } while pango_layout_iter_next_line(lines) != 0
        var shown = String(decoding: text.utf8.prefix(end), as: UTF8.self)
        // A line holds at most a few hundred characters: a few hundred layouts at worst.
        while true {
            while shown.last?.isWhitespace == true { shown.removeLast() }
            pango_layout_set_text(layout, shown + "…", -1)
            if self.height(of: layout) <= height || shown.isEmpty { return }
            shown.removeLast()
        }
    }

    /// The height `text` takes wrapped to `width`, without drawing it.
    public func textHeight(_ text: String, width: Double, style: TextStyle) -> Double {
        let layout = makeLayout(text, width: width, style: style)
        defer { g_object_unref(UnsafeMutableRawPointer(layout)) }
        return height(of: layout)
    }

    /// A layout of `text` wrapped to `width`, as tall as it needs; the caller unrefs it.
    private func makeLayout(_ text: String, width: Double, style: TextStyle) -> OpaquePointer {
        let layout = pango_cairo_create_layout(cairo)!
        let font = pango_font_description_from_string("\(TextStyle.fontFamilies) \(style.bold ? "Bold " : "")\(style.size)")
        defer { pango_font_description_free(font) }
        pango_layout_set_font_description(layout, font)
        pango_layout_set_width(layout, studybus_pango_units(width))
        pango_layout_set_wrap(layout, PANGO_WRAP_WORD_CHAR)
        if !style.paragraphsFollowTheirScript {
            pango_layout_set_auto_dir(layout, 0)
            pango_context_set_base_dir(pango_layout_get_context(layout), PANGO_DIRECTION_LTR)
        }
        pango_layout_set_alignment(layout, style.centred ? PANGO_ALIGN_CENTER : PANGO_ALIGN_LEFT)
        pango_layout_set_text(layout, text, -1)
        return layout
    }

    private func height(of layout: OpaquePointer) -> Double {
        var logical = PangoRectangle()
        pango_layout_get_extents(layout, nil, &logical)
        return Double(logical.height) / Double(PANGO_SCALE)
    }

    /// A dashed line, as printed cut marks are.
    public func dashedLine(fromX x0: Double, y y0: Double, toX x1: Double, y y1: Double) {
        cairo_save(cairo)
        var dashes: [Double] = [4, 3]
        cairo_set_dash(cairo, &dashes, Int32(dashes.count), 0)
        cairo_set_line_width(cairo, 0.5)
        cairo_set_source_rgb(cairo, 0.55, 0.55, 0.55)
        cairo_move_to(cairo, x0, y0)
        cairo_line_to(cairo, x1, y1)
        cairo_stroke(cairo)
        cairo_restore(cairo)
    }

    /// Ends the document and returns the PDF file. The canvas draws nothing after this.
    public func finish() throws(PDFCanvasError) -> Data {
        precondition(!finished, "a PDF is finished once")
        finished = true
        cairo_surface_finish(surface)
        try check()
        return output.bytes
    }

    private func check() throws(PDFCanvasError) {
        for status in [cairo_status(cairo), cairo_surface_status(surface)] where status != CAIRO_STATUS_SUCCESS {
            throw .cairo(String(cString: cairo_status_to_string(status)))
        }
    }
}

/// The bytes cairo's stream writes, reached from its C callback through an unretained pointer
/// that lives as long as the canvas holding it.
private final class PDFOutput {
    var bytes = Data()
}
