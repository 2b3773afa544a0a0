/// Streak arithmetic shared by study days and habit tasks.
enum Streaks {
    /// Current and best run of consecutive days in `days` (sorted ascending, no duplicates).
    /// The current run ends today, or yesterday when today has nothing yet (the day is still open).
    static func daily(_ days: [LocalDate], today: LocalDate) -> (current: Int, best: Int) {
        scheduled(days, today: today) { _ in true }
    }

    /// Current and best runs counting only days `isScheduled` says the task is due: a
    /// Monday/Wednesday habit done on both days has a run of 2 across the Tuesday between them.
    /// Check-ins on unscheduled days neither count nor break a run. Today, while still open,
    /// does not break the current run either.
    static func scheduled(_ done: [LocalDate], today: LocalDate, isScheduled: (LocalDate) -> Bool) -> (current: Int, best: Int) {
        let doneSet = Set(done)
        guard let first = done.first else { return (0, 0) }
        var best = 0, run = 0
        var day = first
        while day <= today {
            if isScheduled(day) {
                if doneSet.contains(day) {
                    run += 1
                    best = max(best, run)
                } else if day != today {
                    run = 0
                }
            }
            day = day.adding(days: 1)
        }
        return (run, best)
    }
}
