import Bus
import Contracts
import Foundation
import Synchronization
import Wire

/// MirrorBuddy's voice commands: built-in patterns plus each user's own, matched exactly (most
/// literal words wins, a user's pattern before a built-in one), else ranked by how closely the
/// command's words come to each pattern's (edit distance), with an LRU cache of recent commands.
public final class IntentEngine: Sendable {
    /// A pattern ready to match, with the command it stands for.
    struct Compiled: Sendable {
        var command: IntentCommand
        var pattern: IntentPattern
    }

    private struct CacheKey: Hashable {
        var user: String
        var generation: Int
        var words: [String]
    }

    private struct State {
        var cache: LRUCache<CacheKey, IntentParseResponse>
        /// Each user's own patterns as loaded, with the generation that keys their cache entries.
        var users: LRUCache<String, (generation: Int, commands: [Compiled])>
        var nextGeneration = 1
    }

    /// Longest command matched word by word; longer ones only get fuzzy candidates.
    static let maxCommandWords = 40

    private let builtIns: [Compiled]
    private let store: IntentStore?
    private let state: Mutex<State>

    /// An engine with the built-in patterns, a cache of `cacheSize` recent commands, and the
    /// users' own patterns kept in `store` (none when nil: built-ins only).
    public init(cacheSize: Int = 50, store: IntentStore? = nil) {
        builtIns = BuiltInIntents.commands.map { registration in
            // Built-in patterns are valid by construction (a test parses them all).
            let pattern = try! IntentPattern(registration.pattern)
            let command = IntentCommand(
                id: "builtin:" + registration.intent, userId: "", pattern: registration.pattern, intent: registration.intent,
                category: registration.category, parameters: registration.parameters ?? [], builtIn: true,
                createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0))
            return Compiled(command: command, pattern: pattern)
        }
        self.store = store
        state = Mutex(State(cache: LRUCache(capacity: max(1, cacheSize)), users: LRUCache(capacity: 10_000)))
    }

    /// Parses `text` for `user`.
    public func parse(_ text: String, user: String) throws(BusError) -> IntentParseResponse {
        let words = CommandText.words(text)
        let (generation, own) = try commands(of: user)
        let key = CacheKey(user: user, generation: generation, words: words)
        if var cached = state.withLock({ $0.cache.get(key) }) {
            cached.cached = true
            return cached
        }
        let response = Self.resolve(words, commands: own + builtIns)
        state.withLock { _ = $0.cache.set(key, response) }
        return response
    }

    /// The grammar of the commands that apply to `user`, their own first, for hearing them
    /// offline; `*` slots hold the phrases of `prompt`.
    func grammar(user: String, prompt: String?) throws(BusError) -> CommandGrammar {
        CommandGrammar(patterns: (try commands(of: user).commands + builtIns).map(\.pattern), prompt: prompt)
    }

    /// The commands that apply to `user`: their own first, then the built-ins.
    public func list(user: String) throws(BusError) -> [IntentCommand] {
        try commands(of: user).commands.map(\.command) + builtIns.map(\.command)
    }

    /// Stores `registrations` as `user`'s own (replacing same patterns); returns them as stored.
    public func register(_ registrations: [IntentRegistration], user: String, now: Date) throws(BusError) -> [IntentCommand] {
        guard let store else { throw .failedPrecondition("this gateway keeps no per-user commands") }
        for (index, registration) in registrations.enumerated() {
            let field = "commands[\(index)]"
            guard !registration.pattern.isEmpty else { throw Field.invalid("\(field).pattern", "must not be empty") }
            try Field.length(registration.pattern, "\(field).pattern", maximum: 200)
            guard !registration.intent.isEmpty else { throw Field.invalid("\(field).intent", "must not be empty") }
            try Field.length(registration.intent, "\(field).intent", maximum: 100)
            let pattern: IntentPattern
            do {
                pattern = try IntentPattern(registration.pattern)
            } catch {
                throw Field.invalid("\(field).pattern", "must be a valid pattern: \(error.message)")
            }
            if let names = registration.parameters, names.count != pattern.wildcards {
                throw Field.invalid("\(field).parameters", "must name one parameter per wildcard of the pattern (\(pattern.wildcards)), got \(names.count)")
            }
        }
        let stored = try store.upsert(registrations, user: user, now: now)
        forget(user)
        return stored
    }

    /// Removes `user`'s commands `ids`; returns what applies afterwards.
    public func remove(ids: [String], user: String) throws(BusError) -> [IntentCommand] {
        guard let store else { throw .failedPrecondition("this gateway keeps no per-user commands") }
        try store.delete(ids: ids, user: user)
        forget(user)
        return try list(user: user)
    }

    private func forget(_ user: String) {
        state.withLock { $0.users.remove(user) }
    }

    private func commands(of user: String) throws(BusError) -> (generation: Int, commands: [Compiled]) {
        if let loaded = state.withLock({ $0.users.get(user) }) { return loaded }
        let own = try store?.commands(user: user) ?? []
        let compiled = own.compactMap { command in (try? IntentPattern(command.pattern)).map { Compiled(command: command, pattern: $0) } }
        return state.withLock { state in
            let entry = (generation: state.nextGeneration, commands: compiled)
            state.nextGeneration += 1
            state.users.set(user, entry)
            return entry
        }
    }

    // MARK: Matching

    static func resolve(_ words: [String], commands: [Compiled]) -> IntentParseResponse {
        let normalized = words.joined(separator: " ")
        if words.count <= maxCommandWords {
            var best: (index: Int, match: IntentPattern.Match)?
            for (index, compiled) in commands.enumerated() {
                guard let match = compiled.pattern.match(words) else { continue }
                if let current = best?.match,
                   match.literalWords < current.literalWords
                    || (match.literalWords == current.literalWords && match.capturedWords >= current.capturedWords) {
                    continue
                }
                best = (index, match)
            }
            if let best {
                let match = intentMatch(commands[best.index], captures: best.match.captures, confidence: 1)
                return IntentParseResponse(normalized: normalized, match: match, candidates: [], cached: false)
            }
        }
        return IntentParseResponse(normalized: normalized, match: nil, candidates: candidates(words, commands: commands), cached: false)
    }

    /// The three patterns whose literal words the command comes closest to (at least half), with
    /// parameters read after correcting near-miss words to the pattern's.
    private static func candidates(_ words: [String], commands: [Compiled]) -> [IntentMatch] {
        let inputs = words.map { Array($0.utf8) }
        var scored: [(score: Double, index: Int, captures: [String])] = []
        for (index, compiled) in commands.enumerated() {
            var total = 0.0
            var corrected = words
            for (literal, target) in zip(compiled.pattern.requiredWords, compiled.pattern.requiredBytes) {
                var bestSimilarity = 0.0, bestPosition = -1
                for (position, input) in inputs.enumerated() {
                    let similarity = wordSimilarity(input, target)
                    if similarity > bestSimilarity { (bestSimilarity, bestPosition) = (similarity, position) }
                    if similarity == 1 { break }
                }
                total += bestSimilarity
                if bestSimilarity > 0, bestSimilarity < 1 { corrected[bestPosition] = literal }
            }
            var score = total / Double(compiled.pattern.requiredWords.count)
            guard score >= 0.5 else { continue }
            // A pattern the corrected command matches outright explains every word: it ranks first.
            let match = words.count <= maxCommandWords ? compiled.pattern.match(corrected) : nil
            if match != nil { score = min(1, score + 0.1) }
            scored.append((score, index, match?.captures ?? []))
        }
        scored.sort { $0.score > $1.score || ($0.score == $1.score && $0.index < $1.index) }
        return scored.prefix(3).map { intentMatch(commands[$0.index], captures: $0.captures, confidence: ($0.score * 0.9 * 100).rounded() / 100) }
    }

    private static func intentMatch(_ compiled: Compiled, captures: [String], confidence: Double) -> IntentMatch {
        var parameters: [String: String] = [:]
        let names = compiled.command.parameters
        for (position, capture) in captures.enumerated() {
            let name = position < names.count ? names[position] : (position == 0 ? "*" : "*\(position + 1)")
            parameters[name] = capture
        }
        return IntentMatch(intent: compiled.command.intent, category: compiled.command.category, pattern: compiled.command.pattern,
                           parameters: parameters, confidence: confidence)
    }

    /// 1 for the same word, 0.8 for one edit apart (words of 3+ letters), 0.6 for two edits
    /// (7+ letters), else 0.
    static func wordSimilarity(_ a: [UInt8], _ b: [UInt8]) -> Double {
        if a == b { return 1 }
        let shorter = min(a.count, b.count)
        guard shorter >= 3, abs(a.count - b.count) <= 2 else { return 0 }
        let limit = shorter >= 7 ? 2 : 1
        switch boundedEditDistance(a, b, limit: limit) {
        case 1: return 0.8
        case 2 where limit == 2: return 0.6
        default: return 0
        }
    }

    /// Levenshtein distance, or `limit + 1` as soon as it must exceed `limit` (two rows on the
    /// stack: this runs for every pattern word on a cache miss).
    static func boundedEditDistance(_ a: [UInt8], _ b: [UInt8], limit: Int) -> Int {
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 2 * (b.count + 1)) { buffer in
            var previous = UnsafeMutableBufferPointer(rebasing: buffer[0...b.count])
            var current = UnsafeMutableBufferPointer(rebasing: buffer[(b.count + 1)...])
            for j in 0...b.count { previous[j] = j }
            for i in 1...a.count {
                current[0] = i
                var rowMinimum = i
                for j in 1...b.count {
                    let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                    current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
                    rowMinimum = min(rowMinimum, current[j])
                }
                if rowMinimum > limit { return limit + 1 }
                swap(&previous, &current)
            }
            return previous[b.count]
        }
    }
}

/// MirrorBuddy's voice commands, as its developer notes list them.
enum BuiltInIntents {
    static let commands: [IntentRegistration] = [
        .init(pattern: "show materials", intent: "showMaterials", category: .navigation),
        .init(pattern: "show * materials", intent: "showSubjectMaterials", category: .navigation, parameters: ["subject"]),
        .init(pattern: "go to [the] *", intent: "navigate", category: .navigation, parameters: ["destination"]),
        .init(pattern: "open [the] *", intent: "open", category: .navigation, parameters: ["destination"]),
        .init(pattern: "create [a] flashcard about *", intent: "createFlashcard", category: .creation, parameters: ["topic"]),
        .init(pattern: "add [a] material from *", intent: "addMaterial", category: .creation, parameters: ["source"]),
        .init(pattern: "schedule study [session]", intent: "scheduleStudySession", category: .creation),
        .init(pattern: "what's my progress [today]", intent: "progressToday", category: .query),
        .init(pattern: "show recent materials", intent: "recentMaterials", category: .query),
        .init(pattern: "list upcoming tasks", intent: "upcomingTasks", category: .query),
        .init(pattern: "start [a] study session", intent: "startStudySession", category: .action),
        .init(pattern: "review [my] flashcards", intent: "reviewFlashcards", category: .action),
        .init(pattern: "mark task as done", intent: "completeTask", category: .action),
    ]
}
