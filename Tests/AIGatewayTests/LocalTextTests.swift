@testable import AIGatewayCore
import Contracts
import Foundation
import Testing

@Suite("Local provider: sentences, summaries, key terms and flashcards on fixed texts")
struct LocalTextTests {
    @Test("sentences split at . ! ? but not after abbreviations, initials or decimals; headings and list items stand alone")
    func sentenceSplitting() {
        let document = TextDocument("""
            # Cells

            Dr. Smith measured 3.5 ml, e.g. of water. Was it enough? Yes! J. K. Rowling wrote it.
            - A list item without a stop
            The text goes on
            over a wrapped line.
            """)
        let sentences = document.sentences.map { (document.text(of: $0), $0.kind) }
        #expect(sentences.map(\.0) == [
            "Cells", "Dr. Smith measured 3.5 ml, e.g. of water.", "Was it enough?", "Yes!", "J. K. Rowling wrote it.",
            "A list item without a stop", "The text goes on over a wrapped line.",
        ])
        #expect(sentences.map(\.1) == [.heading, .prose, .prose, .prose, .prose, .listItem, .prose])
    }

    @Test("fenced code is not text")
    func codeIsSkipped() {
        let document = TextDocument("Intro sentence here.\n\n```swift\nlet x = 1. Not prose.\n```\n\nOutro sentence here.")
        #expect(document.sentences.map { document.text(of: $0) } == ["Intro sentence here.", "Outro sentence here."])
    }

    @Test("a summary of the photosynthesis text picks its definition and the core of each process")
    func photosynthesisSummary() {
        let summary = LocalText.summarize(Fixtures.photosynthesis, maxSentences: 3)
        #expect(summary.count == 3)
        #expect(summary.first == "Photosynthesis is the process by which green plants use sunlight to make glucose from carbon dioxide and water.")
        #expect(summary.contains { $0.contains("Calvin") || $0.contains("ATP and NADPH") })
        #expect(!summary.contains("Photosynthesis"), "a heading is not a summary sentence")
    }

    @Test("a summary skips the class announcements at the top and keeps text order")
    func notTheFirstTwoSentences() {
        let summary = LocalText.summarize(Fixtures.frenchRevolution, maxSentences: 3)
        #expect(summary.count == 3)
        #expect(!summary.contains { $0.contains("Welcome") || $0.contains("notebooks") })
        let events = ["Estates-General", "Third Estate", "Bastille", "Declaration", "Reign of Terror", "Napoleon", "French Revolution"]
        #expect(summary.allSatisfy { sentence in events.contains { sentence.contains($0) } }, "\(summary)")
        let positions = summary.map { Fixtures.frenchRevolution.range(of: $0)!.lowerBound }
        #expect(positions == positions.sorted())
        let long = LocalText.summarize(Fixtures.frenchRevolution, maxSentences: 8)
        #expect(!long.contains { $0.contains("notebooks") }, "an isolated sentence ranks last")
    }

    @Test("a summary asks for no more sentences than the text has")
    func shortText() {
        #expect(LocalText.summarize("Only one sentence with several words here.", maxSentences: 3) == ["Only one sentence with several words here."])
        #expect(LocalText.summarize("", maxSentences: 3).isEmpty)
    }

    @Test("key terms of the photosynthesis text include the obvious ones, as written")
    func photosynthesisKeywords() {
        let terms = LocalText.keywords(Fixtures.photosynthesis, maxCount: 12).map(\.term)
        for expected in ["photosynthesis", "chlorophyll", "Calvin cycle", "ATP"] {
            #expect(terms.contains(expected), "\(expected) missing from \(terms)")
        }
        #expect(!terms.contains("Calvin"), "a word that only occurs inside a chosen phrase is left out")
        #expect(!terms.contains { Stopwords.contains($0.lowercased()) })
    }

    @Test("key terms of the history text include its names and events, scored best first")
    func historyKeywords() {
        let keywords = LocalText.keywords(Fixtures.frenchRevolution, maxCount: 10)
        let terms = keywords.map(\.term)
        #expect(terms.contains("revolution") && terms.contains("French"), "\(terms)")
        #expect(!terms.contains("welcome"), "\(terms)")
        #expect(terms.contains { $0.contains("Assembly") || $0.contains("Bastille") || $0.contains("Terror") }, "\(terms)")
        #expect(keywords.first?.score == 1)
        #expect(keywords.map(\.score) == keywords.map(\.score).sorted(by: >))
    }

    @Test("flashcards: definitions, called-questions, because-questions and cloze cards, each linked to its chunk")
    func flashcards() {
        let parts = Fixtures.photosynthesis.components(separatedBy: "## The Calvin")
        let chunks = [TextChunk(id: "c1", text: parts[0]), TextChunk(id: "c2", text: "## The Calvin" + parts[1])]
        let cards = LocalText.flashcards(chunks, maxCards: 40, maxCardsPerChunk: 20)
        let byFront = Dictionary(cards.map { ($0.front, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byFront["Photosynthesis"]?.kind == .definition)
        #expect(byFront["Photosynthesis"]?.back == "The process by which green plants use sunlight to make glucose from carbon dioxide and water.")
        #expect(byFront["Photosynthesis"]?.chunkId == "c1")
        #expect(byFront["What is the green pigment in leaves called?"]?.back == "Chlorophyll")
        #expect(byFront["Why are leaves green?"]?.back == "Because they contain chlorophyll.")
        #expect(byFront["Why are leaves green?"]?.chunkId == "c2")
        #expect(byFront["Calvin cycle"]?.kind == .definition)
        let cloze = cards.filter { $0.kind == .cloze }
        #expect(!cloze.isEmpty)
        for card in cloze {
            #expect(card.front.contains("_____"))
            #expect(!card.front.contains(card.back), "the answer of '\(card.front)' shows on its front")
        }
        #expect(cards.contains { $0.kind == .qa && $0.front.contains("The Calvin cycle") }, "headings make questions")
        #expect(Set(cards.map(\.chunkId)).isSubset(of: ["c1", "c2"]))
        #expect(cards.map { $0.chunkId } == cards.map { $0.chunkId }.sorted(), "cards come in chunk order")
    }

    @Test("glossary lines become definition cards")
    func glossary() {
        let cards = LocalText.flashcards([TextChunk(id: "g", text: Fixtures.glossary)], maxCards: 10, maxCardsPerChunk: 10, kinds: [.definition])
        #expect(cards.map(\.front) == ["Mitosis", "Meiosis", "Osmosis"])
        #expect(cards.first?.back == "Cell division that produces two identical daughter cells.")
    }

    @Test("flashcard limits hold: total, per chunk, kinds")
    func flashcardLimits() {
        let chunks = (1...6).map { TextChunk(id: "c\($0)", text: Fixtures.photosynthesis) }
        let few = LocalText.flashcards(chunks, maxCards: 7, maxCardsPerChunk: 2)
        #expect(few.count == 7)
        #expect(Dictionary(grouping: few, by: \.chunkId).values.allSatisfy { $0.count <= 2 })
        let onlyCloze = LocalText.flashcards(chunks, maxCards: 10, maxCardsPerChunk: 5, kinds: [.cloze])
        #expect(!onlyCloze.isEmpty && onlyCloze.allSatisfy { $0.kind == .cloze })
    }

    @Test("the chunk heading is used as a heading when its text has none")
    func chunkHeading() {
        let text = "Mitochondria are the organelles that release energy from food. They are found in most cells. Cells that need a lot of energy have many of them."
        let cards = LocalText.flashcards([TextChunk(id: "m", text: text, heading: "Mitochondria")], maxCards: 10, maxCardsPerChunk: 10, kinds: [.qa])
        #expect(cards.contains { $0.front == "What are the key ideas of “Mitochondria”?" })
    }
}
