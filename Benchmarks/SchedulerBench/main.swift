import Bus
import Contracts
import Foundation
import SchedulerCore
import Wire

// The scheduler's benchmark client (run by scripts/bench-scheduler against a broker and a
// scheduler started from release builds). Prints `name value unit` lines on stdout; progress
// goes to stderr.
//
//   SchedulerBench [--cards N] [--sets N] [--reviews N] [--concurrency N] [--queries N]

func argument(_ name: String, default value: Int) -> Int {
    guard let index = CommandLine.arguments.firstIndex(of: name), index + 1 < CommandLine.arguments.count,
          let parsed = Int(CommandLine.arguments[index + 1]) else { return value }
    return parsed
}

/// Prints a result line at once (stdout is a pipe under the script).
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func note(_ text: String) {
    FileHandle.standardError.write(Data("bench: \(text)\n".utf8))
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

let cards = argument("--cards", default: 1_000_000)
let sets = argument("--sets", default: 20)
let reviews = argument("--reviews", default: 200_000)
let concurrency = argument("--concurrency", default: 128)
let queries = argument("--queries", default: 2000)
let user = "bench-\(UUID().uuidString.prefix(8))"
let options = CallOptions(user: user, timeout: .seconds(60))

// fsrs_step_ns: the FSRS-6 update in-process, no I/O.
do {
    let fsrs = FSRS()
    let ratings: [ReviewRating] = [.good, .good, .hard, .easy, .good, .again, .good, .good]
    var memory = FSRS.Memory.new(dueMs: 0)
    var now: Int64 = 0
    let steps = 2_000_000
    var checksum = 0.0
    let started = ContinuousClock.now
    for step in 0..<steps {
        if step % 40 == 0 { memory = .new(dueMs: now) }
        memory = fsrs.review(memory, rating: ratings[step & 7], at: now)
        now = memory.dueMs
        checksum += memory.stability ?? 0
    }
    let elapsed = ContinuousClock.now - started
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    note("fsrs checksum \(checksum)")
    report("fsrs_step_ns \(String(format: "%.1f", nanoseconds / Double(steps))) ns")
}

let bus = try Bus(configuration: .fromEnvironment(service: "scheduler-bench"))
var ready = false
for _ in 0..<300 where !ready {
    ready = (try? await bus.call(Reserved.health("scheduler"), Empty()))?.status == .serving
    if !ready { try await Task.sleep(for: .milliseconds(100)) }
}
guard ready else { fatalError("the scheduler did not answer _health") }

/// Runs `total` jobs with `workers` outstanding at once; returns the elapsed seconds.
func run(_ total: Int, workers: Int, _ job: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
    let started = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<workers {
            group.addTask {
                var index = worker
                while index < total {
                    try await job(index)
                    index += workers
                }
            }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - started
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

// Seed one user with `cards` cards in `sets` sets, through cards.add (1000 per call).
let batches = (cards + 999) / 1000
let seedSeconds = try await run(batches, workers: 4) { batch in
    let range = (batch * 1000)..<min(cards, batch * 1000 + 1000)
    _ = try await bus.call(Scheduler.addCards, CardsAddRequest(cards: range.map { ReviewCardAdd(cardId: "card-\($0)", setId: "set-\($0 % sets)") }), options: options)
}
note("seeded \(cards) cards in \(String(format: "%.1f", seedSeconds)) s")
// The seed's pages are flushed to disk before reviews are timed: the kernel's writeback of a
// few hundred megabytes of seed otherwise lands on the first seconds of reviews.
sync()

// review_record_per_s: each call is a committed write transaction (durable) through the bus.
let ratings: [ReviewRating] = [.good, .good, .easy, .hard, .again]
let reviewSeconds = try await run(reviews, workers: concurrency) { index in
    // Cards far apart so that no two concurrent reviews hit one card.
    let card = (index * 7919) % cards
    _ = try await bus.call(Scheduler.recordReview, ReviewRecordRequest(cardId: "card-\(card)", rating: ratings[index % ratings.count]), options: options)
}
report("review_record_per_s \(Int(Double(reviews) / reviewSeconds)) reviews/s")

// review_due_query_ms: review.due (limit 50) for the user with all those cards, one at a time,
// alternating all cards and one set, at instants from 1 to 30 days ahead. The two kinds are
// also reported apart: all cards go through every set (see DueIndex), one set is one range.
var latencies: [Double] = [], allCards: [Double] = [], oneSet: [Double] = []
var returned = 0
let now = Date()
for index in 0..<queries {
    let request = DueRequest(setId: index % 2 == 0 ? nil : "set-\(index / 2 % sets)", limit: 50,
                             at: now.addingTimeInterval(Double(1 + index % 30) * 86_400))
    let started = ContinuousClock.now
    let response = try await bus.call(Scheduler.dueCards, request, options: options)
    let elapsed = ContinuousClock.now - started
    returned += response.cards.count
    let milliseconds = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
    latencies.append(milliseconds)
    if request.setId == nil { allCards.append(milliseconds) } else { oneSet.append(milliseconds) }
}
note("due queries returned \(returned / max(queries, 1)) cards on average")
for (name, values) in [("review_due_query_ms", latencies), ("review_due_all_cards_ms", allCards), ("review_due_one_set_ms", oneSet)] where !values.isEmpty {
    let sorted = values.sorted()
    report("\(name)_p50 \(String(format: "%.3f", percentile(sorted, 0.5))) ms")
    report("\(name)_p99 \(String(format: "%.3f", percentile(sorted, 0.99))) ms")
}
await bus.shutdown()
