import Contracts
import Foundation
@testable import IngestCore
import TestSupport
import Testing

/// Prose of sentences and paragraphs, with accented and non-Latin words, abbreviations and the
/// odd very long word.
func prose(paragraphs: Int, seed: UInt64) -> String {
    var random = SeededRandom(seed: seed)
    let words = ["cell", "energy", "città", "perché", "membrane", "ATP", "glucose", "光合作用", "e.g.", "Dr.", "3.14", "naïve", "oxygen", "the", "of", "and"]
    return (0..<paragraphs).map { _ in
        (0..<Int.random(in: 1...9, using: &random)).map { _ in
            var sentence = (0..<Int.random(in: 3...30, using: &random)).map { _ in words.randomElement(using: &random)! }
            if Int.random(in: 0..<40, using: &random) == 0 { sentence.append(String(repeating: "x", count: 1500)) }
            return sentence.joined(separator: " ").capitalizedFirst + [".", "!", "?", "…"].randomElement(using: &random)!
        }.joined(separator: Int.random(in: 0..<5, using: &random) == 0 ? "\n" : " ")
    }.joined(separator: "\n\n")
}

extension String {
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}

func document(_ text: String) throws -> ExtractedDocument {
    try PlainTextExtractor.extract(text, budget: .unlimited)
}

@Suite("Chunking")
struct ChunkerTests {
    let settings = ChunkingSettings(targetCharacters: 300, overlapCharacters: 60)

    /// Calls `check` with every chunk of the prose of seeds 1…20 and the document's scalars.
    func everyChunk(_ check: (Chunk, [Unicode.Scalar], UInt64) -> Void) throws {
        for seed in 1...20 as ClosedRange<UInt64> {
            let document = try document(prose(paragraphs: 30, seed: seed))
            let scalars = Array(document.string.unicodeScalars)
            for chunk in try Chunker.chunks(of: document, settings: settings) { check(chunk, scalars, seed) }
        }
    }

    @Test("each chunk's offsets point at exactly its text in the document, in Unicode scalars")
    func offsetsMatchText() throws {
        try everyChunk { chunk, scalars, seed in
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars[chunk.startOffset..<chunk.endOffset])
            #expect(String(text) == chunk.text, "seed \(seed), chunk \(chunk.ordinal)")
        }
    }

    @Test("a chunk never starts or ends inside a word")
    func wholeWords() throws {
        try everyChunk { chunk, scalars, seed in
            #expect(chunk.startOffset == 0 || scalars[chunk.startOffset - 1].properties.isWhitespace, "seed \(seed) chunk \(chunk.ordinal) starts mid-word")
            #expect(chunk.endOffset == scalars.count || scalars[chunk.endOffset].properties.isWhitespace, "seed \(seed) chunk \(chunk.ordinal) ends mid-word")
            #expect(!chunk.text.hasPrefix(" ") && !chunk.text.hasSuffix(" ") && !chunk.text.isEmpty)
        }
    }

    @Test("chunks cover every character, in order, and stay within the target unless one word is longer")
    func coverageAndSize() throws {
        for seed in 1...20 as ClosedRange<UInt64> {
            let document = try document(prose(paragraphs: 30, seed: seed))
            let chunks = try Chunker.chunks(of: document, settings: settings)
            var covered = 0
            for chunk in chunks {
                #expect(chunk.startOffset <= covered + 2, "seed \(seed): a gap before chunk \(chunk.ordinal)")  // only the blank line between
                covered = max(covered, chunk.endOffset)
                let longestWord = chunk.text.split(whereSeparator: \.isWhitespace).map { $0.unicodeScalars.count }.max() ?? 0
                #expect(chunk.text.unicodeScalars.count <= settings.targetCharacters || longestWord > settings.targetCharacters / 2,
                        "seed \(seed): chunk \(chunk.ordinal) has \(chunk.text.unicodeScalars.count) characters")
            }
            #expect(covered == document.string.unicodeScalars.count)
            #expect(chunks.map(\.ordinal) == Array(0..<chunks.count))
            #expect(chunks.map(\.startOffset) == chunks.map(\.startOffset).sorted())
        }
    }

    @Test("the same input gives the same chunks")
    func deterministic() throws {
        let document = try document(prose(paragraphs: 50, seed: 7))
        #expect(try Chunker.chunks(of: document, settings: settings) == Chunker.chunks(of: document, settings: settings))
    }

    @Test("a chunk ends at a sentence end rather than mid-sentence, and the next repeats the last sentence when it fits the overlap")
    func sentencesAndOverlap() throws {
        let sentences = (1...12).map { "Sentence number \($0) talks about cells and energy." }
        let chunks = try Chunker.chunks(of: document(sentences.joined(separator: " ")), settings: ChunkingSettings(targetCharacters: 200, overlapCharacters: 60))
        #expect(chunks.count > 1)
        for chunk in chunks.dropLast() { #expect(chunk.text.hasSuffix("energy."), "\(chunk.text)") }
        for (previous, next) in zip(chunks, chunks.dropFirst()) {
            #expect(next.startOffset < previous.endOffset)  // overlap
            #expect(next.text.hasPrefix("Sentence number"))
            let lastSentence = "Sentence number" + previous.text.components(separatedBy: "Sentence number").last!
            #expect(next.text.hasPrefix(lastSentence))
        }
    }

    @Test("a paragraph end is preferred to a sentence end in the window")
    func paragraphs() throws {
        let first = String(repeating: "Short sentence here. ", count: 6).trimmingCharacters(in: .whitespaces)
        let second = String(repeating: "Another sentence there. ", count: 12).trimmingCharacters(in: .whitespaces)
        let chunks = try Chunker.chunks(of: document(first + "\n\n" + second), settings: ChunkingSettings(targetCharacters: 200, overlapCharacters: 0))
        #expect(chunks.first?.text == first)
    }

    @Test("a heading starts a chunk and names the section of the chunks under it")
    func headings() throws {
        let text = "# Title\n## Part one\n" + String(repeating: "Words about part one. ", count: 30) + "\n\n## Part two\n\nShort part two."
        let chunks = try Chunker.chunks(of: MarkdownExtractor.extract(text, budget: .unlimited), settings: settings)
        #expect(chunks.first?.text.hasPrefix("Title\n\nPart one\n\nWords about part one.") == true)
        #expect(chunks.first?.section == "Part one")
        #expect(chunks.last?.text == "Part two\n\nShort part two.")
        #expect(chunks.last?.section == "Part two")
        #expect(chunks.dropLast().allSatisfy { $0.section == "Part one" })
    }

    @Test("a chunk keeps its page, and timed text its start and end seconds")
    func pagesAndTimes() throws {
        let pdf = try PDFExtractor.pages(Array("Page one text.\n\u{0C}Page two text.\n\u{0C}".utf8), budget: .unlimited).build()
        let pageChunks = try Chunker.chunks(of: pdf, settings: settings)
        #expect(pageChunks.map(\.page) == [1, 2])
        #expect(pageChunks.map(\.text) == ["Page one text.", "Page two text."])

        var builder = DocumentBuilder()
        for second in 0..<40 { builder.cue("Cue number \(second) of the lecture.", start: Double(second), end: Double(second) + 1) }
        let cueChunks = try Chunker.chunks(of: builder.build(), settings: ChunkingSettings(targetCharacters: 200, overlapCharacters: 40))
        #expect(cueChunks.count > 1)
        #expect(cueChunks.first?.startSeconds == 0)
        #expect(cueChunks.last?.endSeconds == 40)
        for chunk in cueChunks {
            let first = Double(chunk.text.components(separatedBy: " ")[2])!
            #expect(chunk.startSeconds == first)
            #expect(chunk.endSeconds! > chunk.startSeconds!)
        }
    }

    @Test("a word longer than the target stays whole")
    func longWord() throws {
        let word = String(repeating: "a", count: 700)
        let chunks = try Chunker.chunks(of: document("Before it. \(word) After it."), settings: settings)
        #expect(chunks.contains { $0.text.contains(word) })
    }

    @Test("a document that would make too many chunks gets bigger ones instead")
    func tooManyChunks() throws {
        let document = try document(prose(paragraphs: 200, seed: 3))
        let small = try Chunker.chunks(of: document, settings: settings)
        let capped = try Chunker.chunks(of: document, settings: settings, maxChunks: small.count / 3)
        #expect(capped.count <= small.count / 3)
    }

    @Test("time grows linearly with the text: ten times the text takes far less than a hundred times as long")
    func linear() throws {
        let small = try document(prose(paragraphs: 100, seed: 11))
        let large = try document(String(repeating: small.string + "\n\n", count: 10))
        func fastest(_ document: ExtractedDocument) throws -> Duration {
            var best = Duration.seconds(3600)
            for _ in 0..<5 {
                let started = ContinuousClock.now
                _ = try Chunker.chunks(of: document, settings: settings)
                best = min(best, ContinuousClock.now - started)
            }
            return best
        }
        let ratio = try fastest(large) / fastest(small)
        #expect(ratio < 40, "10x the text took \(ratio)x as long")
    }
}

@Suite("What ai-gateway is sent")
struct SamplingTests {
    let chunks = try! Chunker.chunks(of: document(prose(paragraphs: 400, seed: 5)), settings: ChunkingSettings(targetCharacters: 500, overlapCharacters: 50))

    @Test("a long document is sampled evenly within the byte and chunk budgets, in order")
    func evenSample() {
        let bytes = chunks.reduce(0) { $0 + $1.bytes.count } / 4
        let sample = Enricher.sample(chunks, bytes: bytes, count: .max)
        #expect(!sample.isEmpty && sample.reduce(0) { $0 + $1.bytes.count + 2 } <= bytes)
        #expect(sample.map(\.ordinal) == sample.map(\.ordinal).sorted())
        #expect(sample.last!.ordinal > chunks.count * 3 / 4)  // reaches the end of the document
        let few = Enricher.sample(chunks, bytes: .max / 2, count: 10)
        #expect(few.count == 10)
    }

    @Test("a short document is sent whole")
    func wholeDocument() {
        #expect(Enricher.sample(chunks, bytes: .max / 2, count: .max) == chunks)
    }
}
