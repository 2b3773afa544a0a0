import Contracts

/// Every line the scheduler says to a person. The apps' rule: encouraging, never guilt-laden —
/// no "you missed", no "you failed"; a quiet day is simply a new start.
enum Messages {
    static func afterReview(_ rating: ReviewRating, intervalDays: Double) -> String {
        switch rating {
        case .again: "Good catch: this one comes back soon so it can settle in."
        case .hard: "Nice effort: a little more practice and it will stick."
        case .good: intervalDays >= 1 ? "Well done! See you again in \(days(intervalDays))." : "Well done! One more look shortly to lock it in."
        case .easy: "Excellent! You know this one: next look in \(days(intervalDays))."
        }
    }

    static func streak(current: Int, reviewedToday: Bool) -> String {
        switch (current, reviewedToday) {
        case (0, _): "Every review is a fresh start. A few cards today get you going."
        case (_, true): "\(current) day\(current == 1 ? "" : "s") of studying in a row. Lovely consistency!"
        case (_, false): "\(current) day\(current == 1 ? "" : "s") in a row so far. A short session today keeps it growing."
        }
    }

    static func checkIn(taskName: String, streak: Int, identity: String?) -> String {
        let who = identity.map { " This is who you are becoming: \($0)." } ?? ""
        return streak > 1 ? "\(taskName): \(streak) in a row. You are living your system.\(who)" : "\(taskName) done. Every rep counts.\(who)"
    }

    static func habitSummary(done: Int, scheduled: Int) -> String {
        if scheduled == 0 { return "A free day. Rest is part of the system too." }
        if done >= scheduled { return "Everything for today is done. Your system is working." }
        if done == 0 { return "Today is open: one small step is all it takes." }
        return "\(done) of \(scheduled) done today. Keep the momentum going."
    }

    static func reviewDigest(due: Int, streak: Int) -> (title: String, body: String) {
        let cards = "\(due) card\(due == 1 ? "" : "s")"
        let body = streak > 0 ? "\(cards) ready for you. Your \(streak)-day streak is growing!" : "\(cards) ready for you. A few minutes is all it takes."
        return ("Time for a quick review", body)
    }

    static func habitReminder(task: String, cue: String?, identity: String?) -> (title: String, body: String) {
        let start = cue.map { "\($0.uppercasedFirst): a good moment for \(task)." } ?? "A good moment for \(task)."
        return ("Time for \(task)", start + (identity.map { " You are becoming \($0)." } ?? ""))
    }

    static func testReminder(test: String, best: Double?, unit: String) -> (title: String, body: String) {
        let record = best.map { " Your best so far: \(format($0)) \(unit)." } ?? ""
        return ("\(test) check-in", "Ready to see how far you have come?\(record)")
    }

    static func days(_ interval: Double) -> String {
        let whole = Int(interval.rounded())
        return whole == 1 ? "1 day" : "\(whole) days"
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}

extension String {
    var uppercasedFirst: String { prefix(1).uppercased() + dropFirst() }
}
