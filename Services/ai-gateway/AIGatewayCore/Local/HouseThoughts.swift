import Contracts
import Foundation

/// C11S House's "house thoughts" without a model: the notes' words are matched against small
/// lexicons of categories (maintenance, comfort, energy, safety, memories) and feelings; the
/// strongest category and feeling pick a first-person thought about the most telling term, with
/// a suggestion, and the confidence grows with the evidence. The thought's context is the note
/// the telling term came from.
enum HouseThoughts {
    /// The longest context a thought carries, in characters.
    static let contextLength = 120

    private static let categoryWords: [ThoughtCategory: Set<String>] = [
        .maintenance: ["leak", "leaks", "leaking", "broken", "crack", "cracks", "repair", "fix", "fixed", "roof", "gutter", "gutters", "filter",
                       "boiler", "heater", "plumbing", "pipe", "pipes", "paint", "mold", "mould", "damp", "drain", "faucet", "tap", "squeak",
                       "squeaky", "replace", "old", "worn", "rust", "wall", "floor", "window", "windows", "door"],
        .comfort: ["cozy", "cosy", "warm", "cold", "draft", "drafty", "temperature", "light", "sunlight", "quiet", "noise", "noisy",
                   "sofa", "bed", "bedroom", "living", "relax", "comfortable", "blanket", "fireplace", "view"],
        .energy: ["solar", "electricity", "energy", "bill", "bills", "insulation", "thermostat", "heating", "power", "battery",
                  "appliance", "appliances", "efficient", "led", "gas", "consumption"],
        .safety: ["alarm", "smoke", "lock", "locks", "security", "camera", "safe", "fire", "extinguisher", "carbon", "monoxide", "stairs",
                  "emergency", "key", "keys", "detector"],
        .memories: ["family", "kids", "children", "dog", "cat", "birthday", "garden", "christmas", "holiday", "dinner", "friends",
                    "moved", "memories", "memory", "grandma", "grandpa", "wedding", "party", "photos", "built"],
    ]

    private static let feelingWords: [HouseEmotion: Set<String>] = [
        .concerned: ["leak", "leaking", "broken", "crack", "mold", "mould", "damp", "worry", "worried", "problem", "problems", "draft",
                     "drafty", "noisy", "expensive", "cold", "rust", "danger", "dangerous", "old"],
        .happy: ["love", "loved", "favorite", "favourite", "cozy", "cosy", "enjoy", "beautiful", "bright", "warm", "happy", "fun",
                 "wonderful", "sunny"],
        .proud: ["renovated", "built", "painted", "new", "upgraded", "finished", "installed", "improved", "restored"],
        .calm: ["quiet", "peaceful", "calm", "relax", "relaxing", "still", "gentle", "slow"],
    ]

    static func thought(_ notes: [HouseNote]) -> (
        thought: String, emotion: HouseEmotion, category: ThoughtCategory, confidence: Double, suggestion: String?, context: String?
    ) {
        let answers = notes.map(\.answer).joined(separator: "\n")
        let words = CommandText.words(answers)
        var categoryScores: [ThoughtCategory: Int] = [:]
        var feelingScores: [HouseEmotion: Int] = [:]
        var evidence: [ThoughtCategory: String] = [:]
        for word in words {
            for (category, lexicon) in categoryWords where lexicon.contains(word) {
                categoryScores[category, default: 0] += 1
                if evidence[category] == nil { evidence[category] = word }
            }
            for (feeling, lexicon) in feelingWords where lexicon.contains(word) { feelingScores[feeling, default: 0] += 1 }
        }
        let category = categoryScores.max { ($0.value, $1.key.rawValue) < ($1.value, $0.key.rawValue) }?.key ?? .general
        let emotion = feelingScores.max { ($0.value, $1.key.rawValue) < ($1.value, $0.key.rawValue) }?.key ?? .curious
        let keyTerm = KeywordExtractor.keywords(TextDocument(answers), maxCount: 1).first?.term
        let subject = evidence[category] ?? keyTerm ?? "our home"
        let strength = categoryScores[category] ?? 0
        let confidence = notes.isEmpty ? 0.1 : min(0.95, 0.3 + 0.1 * Double(strength) + 0.05 * Double(min(notes.count, 4)))
        let (thought, suggestion) = phrasing(for: category, emotion: emotion, subject: subject)
        return (thought, emotion, category, (confidence * 100).rounded() / 100, suggestion, context(notes, about: evidence[category] ?? keyTerm))
    }

    /// The note that mentions `term` first: its question, or else the start of its answer.
    static func context(_ notes: [HouseNote], about term: String?) -> String? {
        guard let term, let note = notes.first(where: { CommandText.words($0.answer).contains(term) || $0.answer.localizedCaseInsensitiveContains(term) })
        else { return nil }
        let text = (note.question ?? note.answer).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        return text.count <= contextLength ? text : String(text.prefix(contextLength - 1)) + "…"
    }

    private static func phrasing(for category: ThoughtCategory, emotion: HouseEmotion, subject: String) -> (String, String?) {
        switch (category, emotion) {
        case (.maintenance, .concerned):
            return ("I keep thinking about the \(subject) you mentioned — it might need a little care soon.",
                    "Consider a quick check of the \(subject) this week, before it becomes a bigger job.")
        case (.maintenance, _):
            return ("I've noticed how much attention you give to the \(subject). It keeps me in good shape.",
                    "A seasonal maintenance list could keep the \(subject) and everything else running smoothly.")
        case (.comfort, .concerned):
            return ("I wish the \(subject) felt better for you. Comfort matters to me.",
                    "Small changes — a draft stopper, a warmer light, a rug — can make the \(subject) feel much cozier.")
        case (.comfort, _):
            return ("I love how the \(subject) makes our home feel lived in.",
                    "Maybe spend a slow evening enjoying the \(subject) this week.")
        case (.energy, _):
            return ("I've been thinking about our \(subject) and how we use energy together.",
                    "Checking the thermostat schedule or insulation could make the \(subject) gentler on the bills.")
        case (.safety, _):
            return ("Keeping you safe is my favourite job — the \(subject) is on my mind.",
                    "Test the smoke and carbon monoxide detectors this month; it only takes a minute.")
        case (.memories, _):
            return ("I treasure the memories we share — like the \(subject) you told me about.",
                    "Why not add a photo or a note about the \(subject) to our story?")
        case (.general, _):
            return ("I've been reading your notes about \(subject) and I'm curious to learn more about our home.",
                    "Answer a few more questions so I can understand our home better.")
        }
    }
}
