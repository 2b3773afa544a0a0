import Contracts
import Foundation
@testable import SchedulerCore
import TestSupport
import Testing

/// The reference results of Reference/generate.py (fsrs 6.x with fuzzing off, supermemo2 3.x).
struct ReferenceRun: Decodable {
    struct FSRSStep: Decodable {
        var rating: ReviewRating
        var at: Int64
        var phase: FSRSPhase
        var step: Int?
        var stability: Double
        var difficulty: Double
        var due: Int64
    }
    struct FSRSSequence: Decodable {
        var desiredRetention: Double
        var createdAt: Int64
        var steps: [FSRSStep]
    }
    struct SM2Step: Decodable {
        var rating: ReviewRating
        var at: Int64
        var easeFactor: Double
        var intervalDays: Int
        var repetitions: Int
        var due: Int64
    }
    struct SM2Sequence: Decodable {
        var steps: [SM2Step]
    }
    var fsrsVersion: String
    var supermemo2Version: String
    var fsrs: [FSRSSequence]
    var sm2: [SM2Sequence]

    /// Runs the generator with the test virtualenv's Python (STUDYBUS_PYTHON, set by scripts/test).
    static func generate(count: Int, seed: Int) async throws -> ReferenceRun {
        let output = try await runPython([scriptPath("generate.py"), "--count", "\(count)", "--seed", "\(seed)"])
        return try JSONDecoder().decode(ReferenceRun.self, from: output)
    }
}

extension ReferenceRun {
    /// The path of a script in Reference/.
    static func scriptPath(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "Reference/\(name)").path
    }
}

@Suite("Reference parity of SM-2 and FSRS-6")
struct ReferenceParityTests {
    static let run = Task { try await ReferenceRun.generate(count: 1000, seed: 20261122) }

    @Test("FSRS-6 matches the fsrs package on 1,000 generated sequences: S and D within 1e-6, due dates exact")
    func fsrsParity() async throws {
        let reference = try await Self.run.value
        #expect(reference.fsrsVersion.hasPrefix("6."))
        #expect(reference.fsrs.count == 1000)
        var checked = 0
        for (index, sequence) in reference.fsrs.enumerated() {
            let fsrs = FSRS(desiredRetention: sequence.desiredRetention)
            var memory = FSRS.Memory.new(dueMs: sequence.createdAt)
            for (stepIndex, step) in sequence.steps.enumerated() {
                memory = fsrs.review(memory, rating: step.rating, at: step.at)
                let place = "sequence \(index) step \(stepIndex) (\(step.rating))"
                try #require(abs((memory.stability ?? .nan) - step.stability) <= 1e-6, "stability at \(place): \(memory.stability ?? .nan) vs \(step.stability)")
                try #require(abs((memory.difficulty ?? .nan) - step.difficulty) <= 1e-6, "difficulty at \(place)")
                try #require(memory.dueMs == step.due, "due at \(place): \(memory.dueMs) vs \(step.due)")
                try #require(memory.phase == step.phase && memory.step == step.step, "phase at \(place)")
                checked += 1
            }
        }
        #expect(checked > 10_000)
    }

    @Test("SM-2 matches the supermemo2 package exactly on 1,000 generated sequences")
    func sm2Parity() async throws {
        let reference = try await Self.run.value
        #expect(reference.supermemo2Version.hasPrefix("3."))
        #expect(reference.sm2.count == 1000)
        var checked = 0
        for (index, sequence) in reference.sm2.enumerated() {
            var memory = SM2.Memory.new(dueMs: 0)
            for (stepIndex, step) in sequence.steps.enumerated() {
                memory = SM2.review(memory, quality: SM2.quality(step.rating), at: step.at)
                let expected = SM2.Memory(easeFactor: step.easeFactor, intervalDays: step.intervalDays, repetitions: step.repetitions, dueMs: step.due)
                try #require(memory == expected, "sequence \(index) step \(stepIndex) (\(step.rating))")
                checked += 1
            }
        }
        #expect(checked > 10_000)
    }

    @Test("FSRS fuzzing moves review intervals of 3+ days within the reference's band and leaves shorter ones")
    func fsrsFuzz() {
        let fsrs = FSRS()
        // 10 days: band ±1.975 → 8…12 (the reference's rounding reaches 13 at the very top).
        #expect(fsrs.fuzzedDays(10, fuzz: 0) == 8)
        #expect(fsrs.fuzzedDays(10, fuzz: 0.5) == 10)
        #expect(fsrs.fuzzedDays(10, fuzz: 0.99) == 13)
        #expect(fsrs.fuzzedDays(2, fuzz: 0.99) == 2)
        var memory = FSRS.Memory.new(dueMs: 0)
        memory = fsrs.review(memory, rating: .easy, at: 0, fuzz: 0)
        #expect(memory.dueMs == Int64(fsrs.fuzzedDays(fsrs.nextIntervalDays(memory.stability!), fuzz: 0)) * 86_400_000)
    }

    @Test("SM-2 failure resets the interval and repetitions and lowers the ease by 0.54, never below 1.3")
    func sm2Failure() {
        var memory = SM2.Memory.new(dueMs: 0)
        memory = SM2.review(memory, quality: SM2.quality(.good), at: 0)
        memory = SM2.review(memory, quality: SM2.quality(.good), at: 86_400_000)
        memory = SM2.review(memory, quality: SM2.quality(.good), at: 7 * 86_400_000)
        #expect(memory.intervalDays == 15 && memory.repetitions == 3)
        memory = SM2.review(memory, quality: SM2.quality(.again), at: 22 * 86_400_000)
        #expect(memory.intervalDays == 1 && memory.repetitions == 0)
        #expect(abs(memory.easeFactor - 1.96) < 1e-12)
        memory = SM2.review(memory, quality: SM2.quality(.again), at: 23 * 86_400_000)
        memory = SM2.review(memory, quality: SM2.quality(.again), at: 24 * 86_400_000)
        #expect(memory.easeFactor == SM2.minimumEase)
    }
}
