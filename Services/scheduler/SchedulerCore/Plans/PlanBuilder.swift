/// Spreads new cards over the days of a plan so that the daily workload stays level.
///
/// Each new card costs a review on the day it is introduced and more on the days its
/// algorithm would bring it back if it keeps being recalled (`followUps`, offsets in days).
/// Cards are placed one at a time where they add least to the sum of squared daily loads
/// (the greedy that minimises the spread of the load), the earliest such day on ties.
///
/// `existing` may reach past the plan's last day: follow-ups landing there still count, so the
/// last days do not look cheaper than they are.
struct PlanBuilder {
    /// Reviews already due per day from the plan's first day (today's includes the overdue ones).
    var existing: [Int]
    /// Days after introduction on which a recalled card is reviewed again.
    var followUps: [Int]

    /// New cards per plan day and the expected reviews per day (existing plus follow-ups),
    /// for the first `days` days.
    func spread(newCards: Int, days: Int) -> (newCards: [Int], reviews: [Int]) {
        let horizon = existing.count
        var load = existing
        var reviews = existing
        var placed = Array(repeating: 0, count: days)
        guard days > 0, horizon >= days else { return (placed, Array(existing.prefix(days))) }
        for _ in 0..<newCards {
            var bestDay = 0, bestCost = Int.max
            for day in 0..<days {
                // Adding 1 to a day of load x adds 2x + 1 to the sum of squares.
                var cost = 2 * load[day] + 1
                for offset in followUps where day + offset < horizon { cost += 2 * load[day + offset] + 1 }
                if cost < bestCost {
                    bestCost = cost
                    bestDay = day
                }
            }
            placed[bestDay] += 1
            load[bestDay] += 1
            for offset in followUps where bestDay + offset < horizon {
                load[bestDay + offset] += 1
                reviews[bestDay + offset] += 1
            }
        }
        return (placed, Array(reviews.prefix(days)))
    }
}
