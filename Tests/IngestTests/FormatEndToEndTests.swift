import Bus
import Contracts
import Foundation
@testable import IngestCore
import TestSupport
import Testing
import Wire

/// Every format, submitted through the bus, processed by ingest with the real ai-gateway (local
/// provider) and stored by the real store.
@Suite("Each format end to end through the bus into the store", .serialized)
struct FormatEndToEndTests {
    @Test("Markdown: headings start chunks and name their sections; summary, keywords and linked cards are stored")
    func markdown() async throws {
        try await withIngest { world in
            let result = try await world.submit("notes.md", IngestSubmit(fileName: "notes.md", options: IngestOptions(maxFlashcards: 5)))
            #expect(result.material.status == .ready)
            #expect(result.material.title == "Cell Biology")  // the first heading; no title was given
            #expect(result.material.sourceKind == .md)
            #expect(result.material.summary?.isEmpty == false)
            #expect(!result.material.keywords.isEmpty)
            let chunks = try await world.chunks(result.materialId)
            #expect(chunks.count == result.outcome?.chunkCount)
            #expect(chunks.contains { $0.text.hasPrefix("Mitochondria\n\nThe mitochondria is the powerhouse") })
            #expect(chunks.contains { $0.text.hasPrefix("Chloroplasts\n\n") && $0.text.contains("# not a heading: code") })
            #expect(!chunks.contains { $0.text.contains("author: Test Author") })
            #expect(chunks.allSatisfy { !$0.text.contains("](https://") && !$0.text.contains("**") })
            #expect(chunks.first { $0.text.hasPrefix("Mitochondria") }?.section == "Mitochondria")
            #expect(chunks.first { $0.text.hasPrefix("Chloroplasts") }?.section == "Chloroplasts")
            let cards = try await world.flashcards(result.materialId)
            #expect(!cards.isEmpty && cards.count <= 5)
            #expect(cards.allSatisfy { card in chunks.contains { $0.id == card.chunkId } })
            #expect(cards.allSatisfy { $0.setId == result.outcome?.setId })
            let ingested = try await world.storeEvents(Store.materialIngested)
            #expect(ingested.map(\.material.id) == [result.materialId])
        }
    }

    @Test("Markdown: every chunk of a long section carries the section's title, not only the first")
    func longSection() async throws {
        try await withIngest { world in
            let paragraph = "The Krebs cycle oxidises acetyl groups and passes electrons on to NADH and FADH2. "
            let markdown = "# Respiration\n\n## The Krebs cycle\n\n" + (1...12).map { "Paragraph \($0). " + String(repeating: paragraph, count: 4) }.joined(separator: "\n\n")
            let result = try await world.submit(data: Data(markdown.utf8), IngestSubmit(fileName: "krebs.md", options: IngestOptions(generateFlashcards: false)))
            let chunks = try await world.chunks(result.materialId)
            let inSection = chunks.filter { $0.text.contains("Paragraph") }
            #expect(inSection.count >= 3, "the section is long enough for several chunks")
            #expect(inSection.allSatisfy { $0.section == "The Krebs cycle" })
            #expect(inSection.filter { $0.text.contains("The Krebs cycle\n") }.count == 1, "the heading's line is in the first only")
        }
    }

    @Test("a title and a section of many accents or emoji are cut to the store's limit in Unicode scalars, and the material is stored")
    func unicodeTitleAtLimit() async throws {
        try await withIngest { world in
            let accented = String(repeating: "e\u{301}", count: 300)
            let scientist = "\u{1F469}\u{1F3FD}\u{200D}\u{1F52C}"
            let markdown = "# \(accented)\n\nThe introduction.\n\n## \(String(repeating: scientist, count: 60))\n\nIn the laboratory."
            let result = try await world.submit(data: Data(markdown.utf8), IngestSubmit(fileName: "accents.md", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.status == .ready)
            #expect(result.material.title.unicodeScalars.elementsEqual(String(repeating: "e\u{301}", count: 100).unicodeScalars))
            let sections = try await world.chunks(result.materialId).compactMap(\.section)
            #expect(sections.contains { $0.unicodeScalars.elementsEqual(String(repeating: scientist, count: 50).unicodeScalars) })
        }
    }

    @Test("TXT: paragraphs become chunks with offsets into the document's text")
    func plainText() async throws {
        try await withIngest { world in
            let result = try await world.submit("notes.txt", IngestSubmit(fileName: "notes.txt", title: "Revolution", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.title == "Revolution")
            #expect(result.outcome?.flashcardIds == [])
            let chunks = try await world.chunks(result.materialId)
            let text = String(decoding: try Fixture.data("notes.txt"), as: UTF8.self)
            #expect(chunks.first?.startOffset == 0)
            #expect(chunks.allSatisfy { text.contains($0.text) })
            #expect(chunks.map(\.text).joined(separator: " ").contains("The storming of the Bastille followed on 14 July."))
        }
    }

    @Test("TXT in UTF-16 with a byte order mark and in Latin-1 is read correctly")
    func encodings() async throws {
        try await withIngest { world in
            for name in ["utf16.txt", "latin1.txt"] {
                let result = try await world.submit(name)
                let text = try await world.chunks(result.materialId).map(\.text).joined(separator: "\n\n")
                #expect(text.contains("Perché la città è così bella?"), "\(name): \(text)")
                #expect(text.contains("L'università di Bologna è la più antica d'Europa."), "\(name)")
            }
        }
    }

    @Test("HTML: text without markup, scripts or styles; headings kept; the title is the page's")
    func html() async throws {
        try await withIngest { world in
            let result = try await world.submit("page.html")
            #expect(result.material.title == "Plant Cells & Tissues")
            let chunks = try await world.chunks(result.materialId)
            let text = chunks.map(\.text).joined(separator: "\n\n")
            #expect(text.contains("Plant cells have a cell wall made of cellulose. The wall gives the cell its shape — and protects it."))
            #expect(text.contains("The central vacuole stores water & nutrients.\nIt keeps the cell firm."))
            #expect(chunks.contains { $0.text.hasPrefix("Vacuoles") })
            #expect(!text.contains("secret") && !text.contains("color: red") && !text.contains("<") && !text.contains("comment"))
        }
    }

    @Test("PDF without a text layer (a scan): its pages are read by OCR, with page numbers")
    func scannedPDF() async throws {
        try await withIngest { world in
            let result = try await world.submit("scan.pdf")
            let chunks = try await world.chunks(result.materialId)
            #expect(chunks.map(\.text).joined(separator: " ").contains("powerhouse of the cell"))
            #expect(chunks.first?.pageNumber == 1)
        }
    }

    @Test("PDF: text per page with page numbers")
    func pdf() async throws {
        try await withIngest { world in
            let result = try await world.submit("lecture.pdf")
            #expect(result.material.sourceKind == .pdf)
            let chunks = try await world.chunks(result.materialId)
            #expect(Set(chunks.compactMap(\.pageNumber)) == [1, 2, 3])
            #expect(chunks.first { $0.pageNumber == 2 }?.text.contains("The mitochondria releases the energy stored in glucose.") == true)
            let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(result.outcome?.sourceDocumentId)))
            #expect(document.pageCount == 3)
        }
    }

    @Test("DOCX: paragraphs, headings by style (also a localized style name), table cells; the document's title")
    func docx() async throws {
        try await withIngest { world in
            let result = try await world.submit("report.docx")
            #expect(result.material.sourceKind == .docx)
            #expect(result.material.title == "The Water Cycle")
            let chunks = try await world.chunks(result.materialId)
            #expect(chunks.contains { $0.text.hasPrefix("The Water Cycle\n\nEvaporation\n\nThe sun heats water in oceans and lakes. Water vapour rises") })
            #expect(chunks.contains { $0.text.hasPrefix("Condensation\n\nVapour cools") })
            let text = chunks.map(\.text).joined(separator: "\n\n")
            #expect(text.contains("Precipitation\n\nClouds to ground"))
            #expect(text.contains("Rain, snow & hail\tfall back to Earth."))
        }
    }

    @Test("ODT (odfpy): headings by outline level start chunks and name their sections")
    func odt() async throws {
        try await withIngest { world in
            let result = try await world.submit("notes.odt", IngestSubmit(fileName: "notes.odt", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.sourceKind == .docx)
            let chunks = try await world.chunks(result.materialId)
            #expect(chunks.contains { $0.text.hasPrefix("Photosynthesis\n\nPlants turn light, water and carbon dioxide into sugar and oxygen.") })
            #expect(chunks.first { $0.text.hasPrefix("The light reactions") }?.section == "The light reactions")
            #expect(chunks.first { $0.text.hasPrefix("The Calvin cycle") }?.text.contains("the enzyme RuBisCO fixes carbon dioxide.") == true)
        }
    }

    @Test("EPUB (EbookLib): the spine's XHTML chapters in reading order, their headings sections; the OPF's title")
    func epub() async throws {
        try await withIngest { world in
            let result = try await world.submit("book.epub", IngestSubmit(fileName: "book.epub", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.sourceKind == .txt)
            #expect(result.material.title == "A Short History of Rome")
            let chunks = try await world.chunks(result.materialId)
            let text = chunks.map(\.text).joined(separator: "\n\n")
            let order = ["Romulus in 753 BC", "two consuls every year", "Augustus became the first emperor"].map { text.range(of: $0)?.lowerBound }
            #expect(order.allSatisfy { $0 != nil } && order == order.sorted { $0! < $1! }, "\(text)")
            #expect(chunks.first { $0.text.contains("two consuls") }?.section == "The Republic")
            #expect(!text.contains("Table of contents") && !text.contains("nav"), "the navigation document is not in the spine")
        }
    }

    @Test("PPTX (python-pptx): each slide a page, its title a heading, speaker notes kept and marked")
    func pptx() async throws {
        try await withIngest { world in
            let result = try await world.submit("slides.pptx", IngestSubmit(fileName: "slides.pptx", options: IngestOptions(generateFlashcards: false)))
            let chunks = try await world.chunks(result.materialId)
            #expect(Set(chunks.compactMap(\.pageNumber)) == [1, 2, 3])
            let first = try #require(chunks.first { $0.pageNumber == 1 })
            #expect(first.text == "Plate tectonics\n\nThe lithosphere is broken into plates.\n\nSpeaker notes: Start with the map of the plates.")
            #expect(chunks.first { $0.pageNumber == 2 }?.text.contains("Speaker notes: Ask about the San Andreas fault.") == true)
            #expect(chunks.first { $0.pageNumber == 3 }?.text == "Earthquakes\n\nStress released at faults makes earthquakes.")
            #expect(chunks.first { $0.pageNumber == 2 }?.section == "Boundaries")
            let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(result.outcome?.sourceDocumentId)))
            #expect(document.pageCount == 3)
        }
    }

    @Test("DOC, PPT and RTF of Word, PowerPoint and AbiWord: their text by catdoc and catppt")
    func legacyOffice() async throws {
        try await withIngest { world in
            for (name, words) in [("legacy.doc", "Test OLE file, saved as Word 97-2003 Document."), ("legacy.ppt", "Office Theme"), ("hello.rtf", "Hello")] {
                let result = try await world.submit(name, IngestSubmit(fileName: name, options: IngestOptions(generateFlashcards: false)))
                #expect(result.material.sourceKind == .docx)
                let chunks = try await world.chunks(result.materialId)
                #expect(chunks.map(\.text).joined(separator: "\n\n").contains(words), "\(name)")
            }
        }
    }

    @Test("CSV: rows become flashcards with their tags, linked to the chunk holding them; a quoted field keeps its comma and line break")
    func csv() async throws {
        try await withIngest { world in
            let result = try await world.submit("cards.csv")
            let cards = try await world.flashcards(result.materialId)
            #expect(cards.map(\.front) == ["What is the powerhouse of the cell?", "What does ATP store?", "Define osmosis"])
            #expect(cards.map(\.back) == ["The mitochondria", "Energy, for the cell's work", "The movement of water\nacross a membrane"])
            #expect(cards.map(\.tags) == [["biology", "cells"], ["biology"], ["biology", "transport"]])
            let chunks = try await world.chunks(result.materialId)
            for card in cards {
                let chunk = try #require(chunks.first { $0.id == card.chunkId })
                #expect(chunk.text.contains(card.front))
            }
            #expect(result.outcome?.setId != nil)
        }
    }

    @Test("TSV and Anki's plain-text export (HTML fields, tags column) import as flashcards")
    func tsvAndAnki() async throws {
        try await withIngest { world in
            let tsv = try await world.flashcards(try await world.submit("cards.tsv").materialId)
            #expect(tsv.map(\.front) == ["What is H2O?", "What is NaCl?"])
            #expect(tsv.map(\.tags) == [["chemistry"], ["chemistry"]])
            let anki = try await world.flashcards(try await world.submit("anki.txt").materialId)
            #expect(anki.map(\.front) == ["Capital of Italy?", "Capital of France?"])
            #expect(anki.map(\.back) == ["Rome", "Paris"])
            #expect(anki.map(\.tags) == [["geography", "europe"], ["geography"]])
        }
    }

    @Test("SRT and VTT: chunks carry the start of their first cue and the end of their last")
    func subtitles() async throws {
        try await withIngest { world in
            let srt = try await world.submit("lecture.srt")
            #expect(srt.material.sourceKind == .video)
            let srtChunks = try await world.chunks(srt.materialId)
            #expect(srtChunks.first?.startSeconds == 1)
            #expect(srtChunks.last?.endSeconds == 15.25)
            #expect(srtChunks.map(\.text).joined(separator: " ").contains("Welcome to the lecture on thermodynamics."))
            let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(srt.outcome?.sourceDocumentId)))
            #expect(document.durationSeconds == 15.25)

            let vtt = try await world.chunks(try await world.submit("lecture.vtt").materialId)
            #expect(vtt.first?.startSeconds == 0)
            #expect(vtt.last?.endSeconds == 72)
            let text = vtt.map(\.text).joined(separator: " ")
            #expect(text.contains("Today we study plate tectonics.") && !text.contains("Professor") && !text.contains("NOTE") && !text.contains("align"))
        }
    }

    @Test("ICS: an exam becomes a task, a study event a study session, a to-do a task; each entry is text of the material")
    func calendar() async throws {
        try await withIngest { world in
            let result = try await world.submit("calendar.ics", IngestSubmit(fileName: "calendar.ics", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.title == "Autumn term")
            #expect(result.outcome?.taskIds.count == 2)
            #expect(result.outcome?.sessionIds.count == 1)
            let tasks = try await world.store(Store.listTasks, StudyTaskList()).items
            let exam = try #require(tasks.first { $0.title == "Biology exam" })
            #expect(exam.dueAt == ISO8601DateFormatter().date(from: "2026-11-23T08:00:00Z"))  // 09:00 in Rome
            #expect(exam.materialId == result.materialId)
            let reading = try #require(tasks.first { $0.title.hasPrefix("Read chapter 3") })
            #expect(reading.title == "Read chapter 3 on mitochondria and the electron transport chain before the seminar on Friday")
            #expect(reading.dueAt == ISO8601DateFormatter().date(from: "2026-11-21T00:00:00Z"))
            let session = try await world.store(Store.getSession, RecordID(id: try #require(result.outcome?.sessionIds.first)))
            #expect(session.startedAt == ISO8601DateFormatter().date(from: "2026-11-20T16:00:00Z"))
            #expect(session.endedAt == ISO8601DateFormatter().date(from: "2026-11-20T17:30:00Z"))
            let text = try await world.chunks(result.materialId).map(\.text).joined(separator: "\n")
            #expect(text.contains("Biology exam\nWhen: 2026-11-23 09:00–11:00 (Europe/Rome)\nWhere: Room 4\nChapters 1 to 5, bring a calculator."))
            #expect(!text.contains("Reminder"))
        }
    }

    @Test("EML: the subject is the title, the plain-text alternative the body; a PDF and a calendar attachment are read, an unknown one left out")
    func email() async throws {
        try await withIngest { world in
            let result = try await world.submit("mail.eml", IngestSubmit(fileName: "mail.eml", options: IngestOptions(generateFlashcards: false)))
            #expect(result.material.title == "Compiti: la città and the exam")
            let chunks = try await world.chunks(result.materialId)
            let text = chunks.map(\.text).joined(separator: "\n\n")
            #expect(text.contains("From: Professor Rossi <rossi@example.org>"))
            #expect(text.contains("The exam covers photosynthesis and respiration. Perché no? Good luck!"))
            #expect(!text.contains("HTML ONLY VERSION"))
            #expect(chunks.contains { $0.text.hasPrefix("Attachment: energy.pdf") && $0.pageNumber == 1 })
            #expect(chunks.contains { $0.pageNumber == 2 && $0.text.contains("The mitochondria releases the energy") })
            #expect(chunks.contains { $0.text.hasPrefix("Attachment: exam.ics") })
            #expect(!text.contains("tool.bin"))
            #expect(result.outcome?.taskIds.count == 2)
            #expect(result.outcome?.sessionIds.count == 1)
        }
    }

    @Test("PNG, JPEG and HEIC (heif-enc): text by OCR")
    func images() async throws {
        try await withIngest { world in
            for name in ["scan.png", "photo.jpg", "scan.heic"] {
                let result = try await world.submit(name)
                #expect(result.material.sourceKind == .image)
                let chunks = try await world.chunks(result.materialId)
                #expect(chunks.map(\.text).joined(separator: " ").contains("powerhouse of the cell"), "\(name)")
                #expect(chunks.first?.pageNumber == 1)
            }
        }
    }

    @Test("WAV, MP3 and M4A: transcribed through ai-gateway; segments become timed chunks")
    func audio() async throws {
        try await withWhisper { world, whisper in
            for name in ["speech.wav", "speech.mp3", "speech.m4a"] {
                try await whisper.script([.object(["transcript": WhisperMock.transcript([
                    (0, 2.5, "Newton's first law is about inertia."), (2.5, 6, "A body keeps moving unless a force acts on it."),
                ])])])
                let result = try await world.submit(name)
                #expect(result.material.sourceKind == .audio, "\(name)")
                let chunks = try await world.chunks(result.materialId)
                #expect(chunks.first?.startSeconds == 0)
                #expect(chunks.last?.endSeconds == 6)
                #expect(chunks.map(\.text).joined(separator: " ").contains("Newton's first law is about inertia."))
                let document = try await world.store(Store.getSourceDocument, RecordID(id: try #require(result.outcome?.sourceDocumentId)))
                #expect(document.durationSeconds == 6)
                #expect(document.language == "english")
            }
        }
    }
}
