/// Spreads new cards over the days of a plan so that the daily workload stays level.
///
/// Each new card costs a review on the day it is introduced and more on the days its
/// algorithm would bring it back if it keeps being recalled (`followUps`, offsets in days).
/// Cards are placed one at a time on the day where the busiest day they touch is least busy,
/// the earliest such day on ties: the classic greedy for levelling load.
struct PlanBuilder {
    /// Reviews already due per plan day (today's includes the overdue ones).
    var existing: [Int]
    /// Days after introduction on which a recalled card is reviewed again.
    var followUps: [Int]

    /// New cards per day and the expected reviews per day (existing plus follow-ups).
    func spread(newCards: Int) -> (newCards: [Int], reviews: [Int]) {
        let days = existing.count
        var load = existing
        var reviews = existing
        var placed = Array(repeating: 0, count: days)
        guard days > 0 else { return ([], []) }
        for _ in 0..<newCards {
            var bestDay = 0, bestCost = Int.max
            for day in 0..<days {
                var cost = load[day] + 1
                for offset in followUps where day + offset < days { cost = max(cost, load[day + offset] + 1) }
                if cost < bestCost {
                    bestCost = cost
                    bestDay = day
                }
            }
            placed[bestDay] += 1
            load[bestDay] += 1
            for offset in followUps where bestDay + offset < days {
                load[bestDay + offset] += 1
                reviews[bestDay + offset] += 1
            }
        }
        return (placed, reviews)
    }
}
