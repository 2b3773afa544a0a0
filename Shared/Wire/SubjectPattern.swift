/// A NATS-style subject pattern over dot-separated topics: `*` matches exactly one token, `>`
/// (last only) one or more tokens; `timer.*` matches `timer.completed`, `>` matches everything.
public struct SubjectPattern: Sendable, Equatable, CustomStringConvertible {
    private let tokens: [Substring]
    public let description: String

    /// - Throws: ``Invalid`` for empty tokens or a `>` that is not last.
    public init(_ pattern: String) throws(Invalid) {
        let tokens = pattern.split(separator: ".", omittingEmptySubsequences: false)
        guard !pattern.isEmpty, tokens.allSatisfy({ !$0.isEmpty }) else {
            throw Invalid(pattern: pattern, reason: "tokens between dots must not be empty")
        }
        if let index = tokens.firstIndex(of: ">"), index != tokens.count - 1 {
            throw Invalid(pattern: pattern, reason: "'>' may only be the last token")
        }
        self.tokens = tokens
        description = pattern
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let pattern: String
        public let reason: String
        public var description: String { "invalid pattern '\(pattern)': \(reason)" }
    }

    /// The ZeroMQ prefix to subscribe to: the literal tokens before the first wildcard.
    public var subscriptionPrefix: String {
        let literal = tokens.prefix { $0 != "*" && $0 != ">" }
        guard literal.count < tokens.count else { return tokens.joined(separator: ".") }
        return literal.isEmpty ? "" : literal.joined(separator: ".") + "."
    }

    /// Whether `topic` matches.
    public func matches(_ topic: String) -> Bool {
        let parts = topic.split(separator: ".", omittingEmptySubsequences: false)
        for (index, token) in tokens.enumerated() {
            if token == ">" { return parts.count > index }
            guard index < parts.count else { return false }
            if token != "*" && token != parts[index] { return false }
        }
        return parts.count == tokens.count
    }
}
