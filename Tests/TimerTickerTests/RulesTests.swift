import Bus
import Contracts
import Foundation
import Testing
import TimerTickerCore
import Wire

@Suite("Timer rules: status machine, labels, durations, old records")
struct RulesTests {
    /// The whole status machine, written out: nil means FAILED_PRECONDITION.
    static let expected: [TimerStatus: [TimerAction: TimerOutcome?]] = [
        .running: [.pause: .becomes(.paused), .resume: nil, .stop: .becomes(.stopped), .restart: .becomes(.running),
                   .duplicate: .copied, .delete: .removed, .complete: .becomes(.completed), .update: nil],
        .paused: [.pause: nil, .resume: .becomes(.running), .stop: .becomes(.stopped), .restart: .becomes(.running),
                  .duplicate: .copied, .delete: .removed, .complete: nil, .update: .becomes(.paused)],
        .stopped: [.pause: nil, .resume: nil, .stop: nil, .restart: .becomes(.running),
                   .duplicate: .copied, .delete: .removed, .complete: nil, .update: .becomes(.stopped)],
        .completed: [.pause: nil, .resume: nil, .stop: nil, .restart: .becomes(.running),
                     .duplicate: .copied, .delete: .removed, .complete: nil, .update: nil],
    ]

    @Test("every state × every action gives the outcome of the table, and refusals name both", arguments: TimerStatus.allCases)
    func statusMachine(status: TimerStatus) throws {
        for action in TimerAction.allCases {
            let want = try #require(Self.expected[status]?[action])
            do {
                let outcome = try TimerStateMachine.apply(action, to: status)
                #expect(outcome == want, "\(action) on \(status)")
            } catch {
                #expect(want == nil, "\(action) on \(status) was refused: \(error)")
                #expect(error.code == .failedPrecondition)
                #expect(error.message.contains(status.rawValue) && error.message.contains(action.rawValue), "\(error.message)")
            }
        }
    }

    @Test("labels are trimmed, line breaks and runs of spaces collapse, control characters go")
    func labels() throws {
        #expect(try TimerRules.sanitizeLabel("  Tea  ") == "Tea")
        #expect(try TimerRules.sanitizeLabel("Pasta\n\n  al dente") == "Pasta al dente")
        #expect(try TimerRules.sanitizeLabel("a\t\tb") == "a b")
        #expect(try TimerRules.sanitizeLabel("be\u{0007}ll\u{0000}\u{001B}") == "bell")
        #expect(try TimerRules.sanitizeLabel("zero\u{200B}width") == "zero\u{200B}width")
        #expect(try TimerRules.sanitizeLabel(" \n ") == "")
        #expect(try TimerRules.sanitizeLabel("Öl 🍝") == "Öl 🍝")
    }

    @Test("a label longer than 100 characters after cleaning is INVALID_ARGUMENT naming the limit")
    func labelLimit() throws {
        #expect(try TimerRules.sanitizeLabel(String(repeating: "x", count: 100) + "   ").count == 100)
        let error = #expect(throws: BusError.self) { try TimerRules.sanitizeLabel(String(repeating: "é", count: 101)) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("100") == true && error?.message.contains("label") == true)
    }

    @Test("durations must be 1 s to 24 h with minutes and seconds below 60")
    func durations() throws {
        #expect(try TimerRules.duration(hours: 0, minutes: 0, seconds: 1).totalSeconds == 1)
        #expect(try TimerRules.duration(hours: 24, minutes: 0, seconds: 0).totalSeconds == 86_400)
        for (h, m, s, field) in [(0, 0, 0, "seconds"), (0, 0, -5, "seconds"), (-1, 30, 0, "hours"), (0, 60, 0, "minutes"),
                                 (0, 0, 60, "seconds"), (24, 0, 1, "24 hours"), (25, 0, 0, "hours")] {
            let error = #expect(throws: BusError.self) { try TimerRules.duration(hours: h, minutes: m, seconds: s) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains(field) == true, "\(error?.message ?? "")")
        }
    }

    @Test("a timer record written before the newer fields existed decodes with defaults")
    func oldRecord() throws {
        // The seed app's first TimerData: no end action, no preset, no pending deletion, no
        // remaining time, no run, no user or updatedAt.
        let old = Data("""
            {"id":"t-old","label":"Tea","hours":0,"minutes":3,"seconds":0,"isSoundOn":false,"status":"paused",
             "createdAt":"2025-08-31T10:00:00.000Z"}
            """.utf8)
        let timer = try WireCoding.decode(CountdownTimer.self, from: old)
        #expect(timer.isSoundOn == false && timer.isVibrationOn == true)
        #expect(timer.endAction == .discard && timer.presetId == nil && timer.pendingDeletionAt == nil)
        #expect(timer.remainingSeconds == 180 && timer.run == 1 && timer.endDate == nil)
        #expect(timer.updatedAt == timer.createdAt && timer.userId == "")
        // And it round-trips with every field now present.
        #expect(try WireCoding.decode(CountdownTimer.self, from: WireCoding.encode(timer)) == timer)
    }
}
