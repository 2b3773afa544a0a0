/// The voice commands a user can give, as a JSGF grammar for the offline recognizer: every
/// pattern that applies to the user (their own, then the built-in ones), a `*` slot holding one
/// of the phrases the request expects (`prompt`: subject names, screens, topics), optionally
/// after "the", and `[optional]` words as JSGF's.
///
/// A slot cannot hold any word: pocketsphinx's grammar search builds a lexicon tree per word a
/// slot allows, about 50 MB for a thousand words, and on a large slot it loses its way
/// (docs/benchmarks.md, "Offline speech"). So a slot holds only what the app says to expect,
/// and without a prompt the patterns with a slot are left out.
struct CommandGrammar: Sendable, Hashable {
    /// The patterns' elements, in the order of precedence.
    let patterns: [[IntentPattern.Element]]
    /// What a slot may hold, each a phrase of words.
    let slotTerms: [[String]]

    /// At most this many phrases from a prompt, of at most ``maximumTermWords`` words each.
    static let maximumTerms = 300
    static let maximumTermWords = 5

    init(patterns: [IntentPattern], prompt: String?) {
        self.patterns = patterns.map(\.elements)
        slotTerms = Self.terms(prompt ?? "")
    }

    /// Phrases separated by commas, semicolons or new lines; a prompt without any is a list
    /// of words. Repeats are left out.
    static func terms(_ prompt: String) -> [[String]] {
        let separators: Set<Character> = [",", ";", "\n"]
        let phrases = prompt.contains(where: separators.contains)
            ? prompt.split(whereSeparator: separators.contains).map { CommandText.words(String($0)) }
            : CommandText.words(prompt).map { [$0] }
        var seen: Set<[String]> = [], terms: [[String]] = []
        for phrase in phrases where !phrase.isEmpty && phrase.count <= maximumTermWords && terms.count < maximumTerms {
            if seen.insert(phrase).inserted { terms.append(phrase) }
        }
        return terms
    }

    /// The grammar in JSGF with only the words `known` says the recognizer can hear: a pattern
    /// with another word is left out, and so is a slot phrase. Nil when no pattern is left.
    func jsgf(known: (String) -> Bool) -> String? {
        let terms = slotTerms.filter { $0.allSatisfy(known) }
        var rules: [String] = []
        for elements in patterns {
            var parts: [String] = []
            var hearable = true
            for element in elements {
                switch element {
                case .word(let word):
                    hearable = hearable && known(word)
                    parts.append(word)
                case .optional(let words):
                    hearable = hearable && words.allSatisfy(known)
                    parts.append("[" + words.joined(separator: " ") + "]")
                case .wildcard:
                    hearable = hearable && !terms.isEmpty
                    parts.append("<slot>")
                }
            }
            if hearable { rules.append(parts.joined(separator: " ")) }
        }
        guard !rules.isEmpty else { return nil }
        var lines = ["#JSGF V1.0;", "grammar commands;", "public <command> = " + rules.indices.map { "<c\($0)>" }.joined(separator: " | ") + ";"]
        for (index, rule) in rules.enumerated() { lines.append("<c\(index)> = \(rule);") }
        if !terms.isEmpty {
            lines.append("<slot> = [the] <term>;")
            lines.append("<term> = " + terms.map { $0.joined(separator: " ") }.joined(separator: " | ") + ";")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
