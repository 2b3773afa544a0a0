import Bus
import Foundation
import Wire

/// What the notifications say. The apps' rule (Numu, CardGenie): encouraging, never guilt —
/// no "you missed", no "you failed"; a reminder is an invitation.
enum Wording {
    static func alarmTitle(label: String) -> String {
        label.isEmpty ? "Timer done" : label
    }

    static func alarmBody(label: String) -> String {
        label.isEmpty ? "Your timer is done." : "Your timer “\(label)” is done."
    }

    static func reviewDue(dueCount: Int) -> (String, String) {
        let cards = dueCount == 1 ? "1 card is" : "\(dueCount) cards are"
        return ("Time for a quick review", "\(cards) ready when you are. A few minutes keeps them fresh.")
    }

    static func habitDue(taskName: String, systemName: String?, identity: String?) -> (String, String) {
        if let identity, !identity.isEmpty {
            return (taskName, "Ready to show up as \(identity)? \(taskName) is next. Every small step counts.")
        }
        let system = systemName.map { " for your \($0) system" } ?? ""
        return (taskName, "A small step\(system) whenever you're ready. You've got this.")
    }

    static func testDue(testName: String) -> (String, String) {
        ("\(testName) check-in", "When you're ready, log today's \(testName) and see how far you've come.")
    }

    /// A batch of reminders that fell in one window: one push listing them.
    static func reminderBatch(titles: [String]) -> (String, String) {
        let lines = titles.map { "• \($0)" }.joined(separator: "\n")
        return ("\(titles.count) gentle reminders", lines + "\nPick whichever feels easiest first — every small step counts.")
    }

    static func materialReady(title: String, flashcards: Int) -> (String, String) {
        let cards = flashcards > 0 ? " — \(flashcards) flashcard\(flashcards == 1 ? " is" : "s are") ready to study" : ""
        return ("Your material is ready", "“\(title)” has been processed\(cards).")
    }

    static func materialFailed(title: String, reason: String) -> (String, String) {
        ("“\(title)” could not be processed", "\(reason) You can try again or upload another version.")
    }

    static func endpointDisabled(name: String, type: String, since: Date, lastError: String?) -> (String, String) {
        let detail = lastError.map { " The last answer was: \($0)." } ?? ""
        return ("Your \(type) “\(name)” was paused",
                "It has not accepted notifications since \(ISO8601.format(since)).\(detail) Check the endpoint and add it again; your inbox keeps everything meanwhile.")
    }
}
