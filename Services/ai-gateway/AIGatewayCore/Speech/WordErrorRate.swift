import Foundation

/// Word error rate, the usual measure of a transcript against what was said: the fewest word
/// substitutions, deletions and insertions that turn the reference into the hypothesis
/// (Levenshtein distance over words), divided by the reference's words. 0 is perfect; it can
/// exceed 1 when the hypothesis has many extra words. scripts/bench-ai prints it per provider.
public enum WordErrorRate {
    /// Substitutions + deletions + insertions, and the reference's word count.
    public static func errors(reference: String, hypothesis: String) -> (errors: Int, words: Int) {
        let reference = words(reference), hypothesis = words(hypothesis)
        return (distance(reference, hypothesis), reference.count)
    }

    /// The rate for one pair; an empty reference scores 0 against an empty hypothesis, else 1.
    public static func rate(reference: String, hypothesis: String) -> Double {
        let (errors, words) = errors(reference: reference, hypothesis: hypothesis)
        return words == 0 ? (errors == 0 ? 0 : 1) : Double(errors) / Double(words)
    }

    /// The words as scored: lower case, letters, digits and apostrophes (curly ones made
    /// straight), everything else a separator — so "Room." and "room" are the same word.
    public static func words(_ text: String) -> [String] {
        text.lowercased().replacingOccurrences(of: "\u{2019}", with: "'")
            .split { !($0.isLetter || $0.isNumber || $0 == "'") }
            .map(String.init)
    }

    /// Levenshtein distance over words, one row at a time.
    static func distance(_ reference: [String], _ hypothesis: [String]) -> Int {
        guard !reference.isEmpty else { return hypothesis.count }
        guard !hypothesis.isEmpty else { return reference.count }
        var previous = Array(0...hypothesis.count)
        var current = previous
        for (row, word) in reference.enumerated() {
            current[0] = row + 1
            for column in 1...hypothesis.count {
                let substitution = previous[column - 1] + (word == hypothesis[column - 1] ? 0 : 1)
                current[column] = min(substitution, previous[column] + 1, current[column - 1] + 1)
            }
            swap(&previous, &current)
        }
        return previous[hypothesis.count]
    }
}
