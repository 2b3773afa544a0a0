@testable import AIGatewayCore
import Bus
import Contracts
import Foundation
import Testing
import Wire

@Suite("Voice-command intents: patterns, matching, candidates and the LRU cache")
struct IntentTests {
    let engine = IntentEngine(cacheSize: 50)

    @Test("every built-in pattern parses")
    func builtInsParse() throws {
        for command in BuiltInIntents.commands { _ = try IntentPattern(command.pattern) }
    }

    @Test("a wildcard captures one or more words into its named parameter")
    func wildcard() throws {
        let single = try engine.parse("show math materials", user: "u1")
        #expect(single.match?.intent == "showSubjectMaterials")
        #expect(single.match?.category == .navigation)
        #expect(single.match?.parameters == ["subject": "math"])
        let several = try engine.parse("Create flashcard about the water cycle", user: "u1")
        #expect(several.match?.intent == "createFlashcard")
        #expect(several.match?.category == .creation)
        #expect(several.match?.parameters == ["topic": "the water cycle"])
        #expect(try engine.parse("show materials", user: "u1").match?.intent == "showMaterials", "a wildcard needs at least one word")
    }

    @Test("optional words may be said or left out")
    func optionalWords() throws {
        #expect(try engine.parse("schedule study", user: "u1").match?.intent == "scheduleStudySession")
        #expect(try engine.parse("schedule study session", user: "u1").match?.intent == "scheduleStudySession")
        #expect(try engine.parse("create a flashcard about cells", user: "u1").match?.parameters == ["topic": "cells"])
        #expect(try engine.parse("schedule study sessions", user: "u1").match == nil)
    }

    @Test("case, punctuation and curly apostrophes do not matter")
    func normalization() throws {
        let result = try engine.parse("  What’s my PROGRESS, today?! ", user: "u1")
        #expect(result.normalized == "what's my progress today")
        #expect(result.match?.intent == "progressToday")
        #expect(result.match?.category == .query)
        #expect(try engine.parse("Review flashcards.", user: "u1").match?.category == .action)
    }

    @Test("the more specific pattern wins: literal words beat a wildcard")
    func specificity() throws {
        let result = try engine.parse("show recent materials", user: "u1")
        #expect(result.match?.intent == "recentMaterials")
        #expect(result.match?.category == .query)
    }

    @Test("a near miss returns the closest patterns with corrected parameters, not a match")
    func fuzzyCandidates() throws {
        let result = try engine.parse("shw math materals", user: "u1")
        #expect(result.match == nil)
        let best = try #require(result.candidates.first)
        #expect(best.intent == "showSubjectMaterials")
        #expect(best.parameters == ["subject": "math"])
        #expect(best.confidence > 0.5 && best.confidence < 1)
        #expect(try engine.parse("completely unrelated words", user: "u1").candidates.isEmpty)
    }

    @Test("repeated commands come from the cache")
    func cache() throws {
        #expect(try engine.parse("review my flashcards", user: "u1").cached == false)
        let again = try engine.parse("Review my flashcards!", user: "u1")
        #expect(again.cached == true)
        #expect(again.match?.intent == "reviewFlashcards")
        #expect(try engine.parse("review my flashcards", user: "u2").cached == false, "the cache is per user")
    }

    @Test("bad patterns are refused with the reason")
    func badPatterns() {
        for (pattern, reason) in [("[open * ]", "optional"), ("show [recent", "without"), ("* *", "in a row"), ("*", "literal"), ("a [b [c]]", "nest")] {
            #expect(throws: BusError.self) { _ = try IntentPattern(pattern) }
            do { _ = try IntentPattern(pattern) } catch { #expect(error.message.contains(reason), "\(pattern): \(error.message)") }
        }
    }

    @Test("the LRU cache evicts the least recently used entry, and reading refreshes an entry")
    func lruEvictionOrder() {
        var cache = LRUCache<String, Int>(capacity: 3)
        cache.set("a", 1)
        cache.set("b", 2)
        cache.set("c", 3)
        #expect(cache.get("a") == 1)
        #expect(cache.set("d", 4) == "b", "b is the least recently used")
        #expect(cache.keysByRecency == ["d", "a", "c"])
        #expect(cache.set("e", 5) == "c")
        cache.set("a", 10)
        #expect(cache.keysByRecency == ["a", "e", "d"])
        cache.remove("e")
        #expect(cache.keysByRecency == ["a", "d"])
        #expect(cache.peek("e") == nil && cache.count == 2)
        cache.set("f", 6)
        cache.set("g", 7)
        #expect(cache.keysByRecency == ["g", "f", "a"])
    }

    @Test("the intent cache holds its configured number of commands")
    func cacheSize() throws {
        let small = IntentEngine(cacheSize: 2)
        _ = try small.parse("show math materials", user: "u")
        _ = try small.parse("show art materials", user: "u")
        #expect(try small.parse("show math materials", user: "u").cached)
        _ = try small.parse("show history materials", user: "u")
        #expect(try small.parse("show art materials", user: "u").cached == false, "art was the least recent of two")
    }

    @Test("edit distance stops early beyond its limit")
    func editDistance() {
        #expect(IntentEngine.boundedEditDistance(Array("materials".utf8), Array("materals".utf8), limit: 2) == 1)
        #expect(IntentEngine.boundedEditDistance(Array("kitten".utf8), Array("sitting".utf8), limit: 1) == 2)
        #expect(IntentEngine.wordSimilarity(Array("to".utf8), Array("do".utf8)) == 0, "too short to guess")
        #expect(IntentEngine.wordSimilarity(Array("show".utf8), Array("shw".utf8)) == 0.8)
    }
}
