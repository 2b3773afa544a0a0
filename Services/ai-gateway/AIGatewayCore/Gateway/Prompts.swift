import Bus
import Contracts
import Foundation
import Wire

/// What each method asks a remote model, and how its answer is read back. An answer that does
/// not have the promised shape throws `malformed`, so the next provider of the chain answers.
enum Prompts {
    /// The study context given to the tutor, at most this many characters of material.
    static let contextCharacters = 24_000

    static func summarize(_ text: String, maxSentences: Int) -> Prompt {
        Prompt(system: """
            You summarize study material for a student. Answer with the summary only: at most \(maxSentences) \
            sentence(s) of plain prose, no title, no list, no preamble.
            """, messages: [ChatMessage(role: .user, content: text)], temperature: 0.2)
    }

    /// The summary's sentences (at most `maxSentences`).
    static func sentences(_ answer: String, maxSentences: Int) throws(ProviderError) -> [String] {
        let document = TextDocument(answer)
        let sentences = document.sentences.filter { $0.kind != .heading }.map { document.text(of: $0) }
        guard !sentences.isEmpty else { throw .malformed("the summary is empty") }
        return Array(sentences.prefix(maxSentences))
    }

    static func keywords(_ text: String, maxCount: Int) -> Prompt {
        Prompt(system: """
            Extract the \(maxCount) most important key terms of the text: words or short phrases of at most three words, \
            as they appear in it. Answer with a JSON array of strings, most important first, and nothing else.
            """, messages: [ChatMessage(role: .user, content: text)], temperature: 0, json: true)
    }

    static func keywordList(_ answer: String, maxCount: Int) throws(ProviderError) -> [Keyword] {
        let json = try parseJSON(answer)
        let items = json.arrayValue ?? json["keywords"]?.arrayValue ?? json["terms"]?.arrayValue
        guard let items else { throw .malformed("expected a JSON array of key terms") }
        var seen = Set<String>()
        let terms = items.compactMap { $0.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty && seen.insert($0.lowercased()).inserted }
            .prefix(maxCount)
        guard !terms.isEmpty else { throw .malformed("the list of key terms is empty") }
        return terms.enumerated().map { Keyword(term: $0.element, score: Double(terms.count - $0.offset) / Double(terms.count)) }
    }

    static func flashcards(_ chunks: [TextChunk], maxCards: Int, maxPerChunk: Int, kinds: Set<FlashcardKind>) -> Prompt {
        let kindText = FlashcardKind.allCases.filter(kinds.contains).map { kind -> String in
            switch kind {
            case .qa: "qa (a question on the front, its answer on the back)"
            case .cloze: "cloze (a sentence from the text with its key term replaced by _____ on the front, the term on the back)"
            case .definition: "definition (a term on the front, its definition on the back)"
            }
        }.joined(separator: "; ")
        let material = chunks.map { chunk in
            "[chunk \(chunk.id)]" + (chunk.heading.map { "\n# \($0)" } ?? "") + "\n" + chunk.text
        }.joined(separator: "\n\n")
        return Prompt(system: """
            You write flashcards that help a student remember study material. Make at most \(maxCards) cards in all and at \
            most \(maxPerChunk) per chunk, of these kinds: \(kindText). Use only facts from the chunks. Answer with a JSON \
            array of objects {"chunkId": string, "kind": string, "front": string, "back": string}, where chunkId is the id \
            of the chunk the card comes from, and nothing else.
            """, messages: [ChatMessage(role: .user, content: material)], temperature: 0.3, json: true)
    }

    static func flashcardList(_ answer: String, chunks: [TextChunk], maxCards: Int, maxPerChunk: Int, kinds: Set<FlashcardKind>) throws(ProviderError) -> [GeneratedCard] {
        let json = try parseJSON(answer)
        guard let items = json.arrayValue ?? json["cards"]?.arrayValue ?? json["flashcards"]?.arrayValue else {
            throw .malformed("expected a JSON array of cards")
        }
        let order = Dictionary(chunks.enumerated().map { ($0.element.id, $0.offset) }, uniquingKeysWith: { first, _ in first })
        var perChunk: [String: Int] = [:]
        var cards: [GeneratedCard] = []
        for item in items where cards.count < maxCards {
            guard let chunkId = item["chunkId"]?.stringValue, order[chunkId] != nil,
                  let kind = item["kind"]?.stringValue.flatMap(FlashcardKind.init(rawValue:)), kinds.contains(kind),
                  let front = item["front"]?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines), !front.isEmpty,
                  let back = item["back"]?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines), !back.isEmpty,
                  perChunk[chunkId, default: 0] < maxPerChunk
            else { continue }
            perChunk[chunkId, default: 0] += 1
            cards.append(GeneratedCard(chunkId: chunkId, kind: kind, front: front, back: back))
        }
        guard !cards.isEmpty || items.isEmpty else { throw .malformed("no card names a given chunk with a valid kind, front and back") }
        return cards.enumerated().sorted { (order[$0.element.chunkId]!, $0.offset) < (order[$1.element.chunkId]!, $1.offset) }.map(\.element)
    }

    private static let warmth = """
        Speak warmly and in identity-based language (who the person is becoming, e.g. "this is what a consistent \
        reader does"). Celebrate showing up and consistency. Never use guilt or shame: never mention failing, missing, \
        falling behind or what did not happen. Plain text, no lists.
        """

    static func reflect(_ text: String, identity: String?) -> Prompt {
        Prompt(system: "You are a warm study companion. In two or three sentences, reflect back what the person explored or did in what they wrote, and end with one gentle question or next step."
            + (identity.map { " They see themselves as: \($0)." } ?? "") + " " + warmth,
            messages: [ChatMessage(role: .user, content: text)], temperature: 0.7)
    }

    static func encourage(_ request: EncourageRequest) -> Prompt {
        var facts: [String] = []
        if let accuracy = request.accuracy { facts.append("accuracy in this session: \(Int((accuracy * 100).rounded()))%") }
        if let streak = request.streak { facts.append("streak: \(streak) day(s) in a row") }
        if let rate = request.completionRate { facts.append("share of today's tasks done: \(Int((rate * 100).rounded()))%") }
        if let count = request.count { facts.append("items done in this session: \(count)") }
        if let identity = request.identity { facts.append("identity they are building: \(identity)") }
        if let name = request.name { facts.append("first name: \(name)") }
        return Prompt(system: "Write one to three short sentences of encouragement for a learner, from the facts given. " + warmth,
                      messages: [ChatMessage(role: .user, content: facts.joined(separator: "\n"))], temperature: 0.8)
    }

    /// A warm answer, or `unusable` when it is empty or uses guilt language.
    static func warmText(_ answer: String) throws(ProviderError) -> String {
        let text = answer.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw .unusable("the answer is empty") }
        guard ToneGuard.isWarm(text) else { throw .unusable("the answer uses guilt language") }
        return text
    }

    static func thought(_ notes: [HouseNote]) -> Prompt {
        let text = notes.map { note in (note.question.map { "Q: \($0)\n" } ?? "") + "A: \(note.answer)" }.joined(separator: "\n\n")
        return Prompt(system: """
            You are the friendly voice of the owner's home ("the house"). From the owner's notes about their home, write one \
            short thought in the first person, as the house. Answer with a JSON object {"thought": string, "emotion": one of \
            \(HouseEmotion.wireValues.joined(separator: "|")), "category": one of \(ThoughtCategory.wireValues.joined(separator: "|")), \
            "confidence": number from 0 to 1, "suggestion": string or null, "context": the question of the note the thought \
            comes from, or null} and nothing else.
            """, messages: [ChatMessage(role: .user, content: text)], temperature: 0.7, json: true)
    }

    static func houseThought(_ answer: String) throws(ProviderError) -> HouseThoughtOutput {
        let json = try parseJSON(answer)
        guard let thought = json["thought"]?.stringValue, !thought.isEmpty,
              let emotion = json["emotion"]?.stringValue.flatMap(HouseEmotion.init(rawValue:)),
              let category = json["category"]?.stringValue.flatMap(ThoughtCategory.init(rawValue:))
        else { throw .malformed("expected {thought, emotion, category, confidence, suggestion} with known emotion and category") }
        let confidence = min(1, max(0, json["confidence"]?.doubleValue ?? 0.5))
        let context = json["context"]?.stringValue.flatMap { $0.isEmpty ? nil : String($0.prefix(HouseThoughts.contextLength)) }
        return HouseThoughtOutput(
            thought: thought, emotion: emotion, category: category, confidence: confidence, suggestion: json["suggestion"]?.stringValue, context: context)
    }

    /// The tutor's prompt: its instruction with the study context, then the conversation's last
    /// five messages (system messages of the request join the instruction).
    static func chat(_ messages: [ChatMessage], context: StudyContext?, maxTokens: Int?, temperature: Double?) -> Prompt {
        var system = """
            You are a patient, encouraging tutor. Answer the student's question clearly and briefly, check understanding \
            with a follow-up question when it helps, and base your answer on the study material below when it is relevant.
            """
        for message in messages where message.role == .system { system += "\n\n" + message.content }
        if let context {
            if let title = context.title { system += "\n\nStudy material: \(title)" }
            var budget = contextCharacters
            for chunk in context.chunks ?? [] where budget > 0 {
                let text = String(chunk.text.prefix(budget))
                budget -= text.count
                system += "\n\n" + (chunk.heading.map { "## \($0)\n" } ?? "") + text
            }
            let cards = (context.flashcards ?? []).prefix(30)
            if !cards.isEmpty {
                system += "\n\nThe student's flashcards:\n" + cards.map { "- Q: \($0.front) A: \($0.back)" }.joined(separator: "\n")
            }
        }
        let turns = messages.filter { $0.role != .system }.suffix(AIGatewayLimits.chatContextMessages)
        return Prompt(system: system, messages: Array(turns), maxTokens: maxTokens, temperature: temperature ?? 0.7)
    }

    /// Parses a JSON answer, tolerating a Markdown code fence around it.
    static func parseJSON(_ answer: String) throws(ProviderError) -> JSONValue {
        var text = answer.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("```") {
            text = String(text.drop { $0 != "\n" }.dropFirst())
            if let fence = text.range(of: "```", options: .backwards) { text = String(text[..<fence.lowerBound]) }
        }
        do {
            return try JSONValue.parse(text)
        } catch {
            throw .malformed("expected JSON, got: \(answer.prefix(120))")
        }
    }
}

/// A house thought without its generation info (what is cached).
struct HouseThoughtOutput: Codable, Sendable, Equatable {
    var thought: String
    var emotion: HouseEmotion
    var category: ThoughtCategory
    var confidence: Double
    var suggestion: String?
    var context: String?
}
