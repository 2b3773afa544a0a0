import Contracts
import Foundation

/// Words that must never reach a learner (Numu: "Never 'You failed' or 'You missed'"): the
/// local templates are written without them, and remote answers that use them are rejected in
/// favour of the next provider.
public enum ToneGuard {
    static let guiltPhrases = [
        "fail", "missed", "miss ", "should have", "shouldn't have", "lazy", "disappoint", "behind", "not enough",
        "broke your", "broken streak", "lost your", "give up", "gave up", "only managed", "bad job", "poor",
        "shame", "guilt", "must try harder", "you forgot", "too slow", "worse", "weak",
    ]

    /// Whether `text` is free of guilt and shame language.
    public static func isWarm(_ text: String) -> Bool {
        let lowered = text.lowercased() + " "
        return !guiltPhrases.contains { lowered.contains($0) }
    }
}

/// Encouragement from numbers (accuracy, streak, completion), in identity-based language:
/// celebrate showing up and consistency, frame hard sessions as growth, never count what did not
/// happen. The wording varies with the numbers but is stable for the same input.
enum Encouragement {
    static func message(_ request: EncourageRequest) -> String {
        var sentences: [String] = []
        let seed = variantSeed(request)
        if let accuracy = request.accuracy {
            let percent = Int((accuracy * 100).rounded())
            let options: [String]
            switch accuracy {
            case 0.9...:
                options = ["\(percent)% correct — that's real mastery taking shape.", "\(percent)% right! You know this material deeply."]
            case 0.75..<0.9:
                options = ["\(percent)% correct — your understanding grows stronger with every card.", "\(percent)% right, and it shows how much you've learned."]
            case 0.5..<0.75:
                options = ["\(percent)% correct, and every card you revisit is strengthening your memory.", "\(percent)% right — you're building real understanding, one card at a time."]
            default:
                options = [
                    "You worked through challenging material today — that's exactly how learning happens.",
                    "The cards that felt hard today are the ones your brain is busy wiring in. Showing up for them takes courage.",
                ]
            }
            sentences.append(pick(options, seed))
        }
        if let rate = request.completionRate {
            let percent = Int((rate * 100).rounded())
            switch rate {
            case 0.999...: sentences.append("Every task done today — your systems are strong.")
            case 0.5..<0.999: sentences.append("\(percent)% of today's system is already lived. Keep going!")
            case 0.000_1..<0.5: sentences.append("Each task you complete today reinforces who you're becoming.")
            default: sentences.append("Today is a fresh chance to live your system — one small task is a great start.")
            }
        }
        if let streak = request.streak {
            switch streak {
            case 0: sentences.append("Today is a perfect day to start a new streak.")
            case 1: sentences.append("Day one — every streak starts exactly here.")
            case 2...6: sentences.append(pick(["\(streak) days in a row — consistency is becoming your thing.", "\(streak) days running. Small steps, repeated, change everything."], seed))
            case 7...29: sentences.append(pick(["\(streak) days in a row! You're proving to yourself who you are.", "A \(streak)-day streak — this is what consistency looks like."], seed))
            default: sentences.append("\(streak) days in a row — this isn't a streak anymore, it's who you are.")
            }
        }
        if let count = request.count, count > 0, request.accuracy == nil {
            sentences.append(count == 1 ? "One more step taken." : "\(count) done in this session — that adds up.")
        }
        if let identity = cleaned(request.identity) {
            sentences.append(pick(["This is what a \(identity) does.", "Every session reinforces your identity as a \(identity)."], seed))
        } else if sentences.isEmpty {
            sentences.append("Every small step you take is building the learner you're becoming.")
        } else {
            sentences.append(pick(["Small steps compound.", "Keep going — your future self will thank you."], seed))
        }
        if let name = cleaned(request.name) { sentences.insert("Nice work, \(name).", at: 0) }
        return sentences.joined(separator: " ")
    }

    /// A warm reflection on what the user wrote: names its main topics, meets difficulty with
    /// reassurance and enjoyment with celebration, and ends with one gentle next step.
    static func reflection(_ text: String, identity: String?) -> String {
        let words = Set(CommandText.words(text))
        let struggle = struggleWords.contains(where: words.contains)
        let joy = joyWords.contains(where: words.contains)
        let topics = KeywordExtractor.keywords(TextDocument(text), maxCount: 10).map(\.term)
            .filter { term in !term.lowercased().split(separator: " ").contains { notTopics.contains(String($0)) } }
            .prefix(2)
        let topic = topics.isEmpty ? "this" : topics.count == 1 ? topics[0] : "\(topics[0]) and \(topics[1])"
        var sentences: [String] = []
        if struggle {
            sentences.append("It sounds like \(topic) asked a lot of you — and you kept going anyway.")
            sentences.append("Finding something hard means you're stretching into new territory; that's where growth happens.")
        } else if joy {
            sentences.append("You're clearly enjoying \(topic) — that spark is worth noticing.")
            sentences.append("Curiosity like this is what makes learning stick.")
        } else {
            sentences.append("You spent real time with \(topic) today.")
            sentences.append("Putting it into your own words is how understanding takes root.")
        }
        if let identity = cleaned(identity) { sentences.append("That's what a \(identity) does.") }
        sentences.append(struggle
            ? "Next time, try taking just one small piece of \(topic) and explaining it to yourself out loud."
            : "What's one idea about \(topic) you could explain to a friend?")
        return sentences.joined(separator: " ")
    }

    private static let struggleWords: Set<String> = [
        "hard", "difficult", "confusing", "confused", "struggle", "struggled", "struggling", "stuck", "frustrating", "frustrated",
        "overwhelmed", "tired", "anxious", "worried", "tough", "lost",
    ]
    private static let joyWords: Set<String> = [
        "enjoy", "enjoyed", "love", "loved", "fun", "proud", "finally", "excited", "happy", "clicked", "understood", "interesting",
        "fascinating", "great",
    ]
    /// Feelings and times of day say how, not what: they are not the topic.
    private static let notTopics = struggleWords.union(joyWords).union([
        "today", "yesterday", "tonight", "tomorrow", "week", "morning", "evening", "afternoon", "night", "time", "day", "hour",
        "hours", "minutes", "studied", "learned", "read", "practiced", "session",
    ])

    private static func cleaned(_ text: String?) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        return String(text.prefix(80))
    }

    private static func pick(_ options: [String], _ seed: Int) -> String { options[seed % options.count] }

    /// The same numbers give the same words; different numbers vary them.
    private static func variantSeed(_ request: EncourageRequest) -> Int {
        let text = "\(request.accuracy ?? -1)|\(request.streak ?? -1)|\(request.completionRate ?? -1)|\(request.count ?? -1)|\(request.identity ?? "")"
        return Int(text.utf8.reduce(UInt32(2_166_136_261)) { ($0 ^ UInt32($1)) &* 16_777_619 } % 1000)
    }
}
