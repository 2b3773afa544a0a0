import Foundation

/// Deterministic English-like study notes of a given size: Markdown headings, paragraphs of
/// varied sentences over a few hundred words with Zipf-like frequencies (so there are topics
/// for TextRank and YAKE to find), definitions and "because" sentences for the flashcards.
enum StudyText {
    private static let nouns = """
        cell membrane nucleus protein enzyme energy molecule atom electron reaction acid base salt solution gas liquid \
        pressure temperature volume force mass velocity acceleration friction gravity orbit planet star galaxy light \
        wave frequency sound signal circuit current voltage resistance magnet field plant leaf root stem flower seed \
        animal species habitat ecosystem predator prey population climate weather ocean river mountain soil rock \
        mineral fossil layer volcano earthquake continent empire king queen war treaty revolution republic parliament \
        election citizen law court trade market economy tax bank price demand supply labour factory industry railway \
        city village farmer merchant colony language poem novel author character theme symbol chapter argument \
        evidence theory experiment hypothesis variable result graph equation function number fraction angle triangle \
        circle vector matrix probability sample survey memory brain neuron muscle heart blood lung bone gene \
        chromosome virus bacteria vaccine disease medicine patient
        """.split(separator: " ").map(String.init)
    private static let adjectives = """
        small large rapid slow complex simple early late modern ancient common rare strong weak stable unstable \
        natural chemical physical political social economic important central local global electric magnetic \
        solar organic liquid dense warm cold bright dark
        """.split(separator: " ").map(String.init)
    private static let verbs = """
        changes controls produces increases reduces forms contains carries transfers absorbs releases supports \
        explains describes measures affects shapes protects connects divides combines converts stores
        """.split(separator: " ").map(String.init)

    /// About `bytes` bytes of notes.
    static func generate(bytes: Int, seed: UInt64 = 42) -> String {
        var random = SplitMix(seed: seed)
        var text = ""
        var section = 0
        while text.utf8.count < bytes {
            section += 1
            let topic = zipf(nouns, &random)
            text += "## \(topic.capitalized) and the \(zipf(nouns, &random))\n\n"
            for _ in 0..<(3 + random.next(4)) {
                var paragraph: [String] = []
                for _ in 0..<(4 + random.next(5)) { paragraph.append(sentence(topic: topic, &random)) }
                text += paragraph.joined(separator: " ") + "\n\n"
            }
        }
        return text
    }

    private static func sentence(topic: String, _ random: inout SplitMix) -> String {
        let a = random.next(3) == 0 ? topic : zipf(nouns, &random)
        let b = zipf(nouns, &random), c = zipf(nouns, &random)
        let adjective = adjectives[random.next(adjectives.count)], verb = verbs[random.next(verbs.count)]
        switch random.next(7) {
        case 0: return "The \(a) is a \(adjective) \(b) that \(verb) the \(c) of the \(zipf(nouns, &random))."
        case 1: return "A \(adjective) \(a) \(verb) the \(b) because the \(c) \(verbs[random.next(verbs.count)]) the \(topic)."
        case 2: return "In the \(adjective) \(a), the \(b) \(verb) both the \(c) and the \(topic)."
        case 3: return "Scientists measured how the \(a) \(verb) the \(adjective) \(b) during the \(c)."
        case 4: return "The \(b) of a \(a) is called the \(adjective) \(c)."
        case 5: return "When the \(a) \(verb) the \(b), the \(c) becomes more \(adjective)."
        default: return "Each \(a) \(verb) a \(adjective) \(b), which \(verbs[random.next(verbs.count)]) the \(c) over time."
        }
    }

    /// A word drawn with probability falling as 1/rank.
    private static func zipf(_ words: [String], _ random: inout SplitMix) -> String {
        let harmonic = (1...words.count).reduce(0.0) { $0 + 1 / Double($1) }
        var target = Double(random.next(1_000_000)) / 1_000_000 * harmonic
        for (rank, word) in words.enumerated() {
            target -= 1 / Double(rank + 1)
            if target <= 0 { return word }
        }
        return words[words.count - 1]
    }
}

/// A small, fast, seedable random number generator (splitmix64).
struct SplitMix {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A number in 0..<bound.
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
