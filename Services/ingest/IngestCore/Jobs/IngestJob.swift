import Contracts
import Foundation
import Synchronization

/// One material to process: its file, what to make of it, and by when.
struct IngestJob: Sendable {
    /// Unique per attempt; the idempotency key of its `materials.put`.
    let id: String
    var material: Material
    let format: IngestFormat
    let file: Data
    /// Bytes the job may unpack or take from tools, reserved in the memory budget with its file.
    let expansionAllowance: Int
    let fileName: String
    /// The charset the file's media type names (`text/html; charset=windows-1252`): for text
    /// formats it wins over what the bytes declare, as a browser reads a page.
    let charset: String?
    let generateFlashcards: Bool
    let maxFlashcards: Int
    /// Whether the material's title may be replaced by the one found in the file (the caller
    /// gave none, so it is the file name).
    let titleFromDocument: Bool
    /// The hard limit of the attempt, counted from before the material went `processing`; a
    /// recording's extends it by its length once that is known.
    let limit: JobDeadline
    /// `traceparent`, passed on to downstream calls.
    let meta: [String: String]

    var user: String { material.userId }
    var deadline: ContinuousClock.Instant { limit.instant }
    /// The same limit as a date, for downstream calls' deadlines.
    var wallDeadline: Date { limit.date }
}

/// A job's hard limit, on the monotonic clock and as a date; it only moves later.
final class JobDeadline: Sendable {
    private let value: Mutex<(instant: ContinuousClock.Instant, date: Date)>

    /// `timeout` from now.
    init(_ timeout: Duration) {
        value = Mutex((ContinuousClock.now + timeout, Date() + timeout.seconds))
    }

    var instant: ContinuousClock.Instant { value.withLock { $0.instant } }
    var date: Date { value.withLock { $0.date } }

    /// Moves the limit `extra` later.
    func extend(by extra: Duration) {
        value.withLock { $0 = ($0.instant + extra, $0.date + extra.seconds) }
    }
}

extension Duration {
    /// In seconds, with the fraction.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// Progress percentages of the stages (0 queued … 100 done).
extension IngestStage {
    var percent: Int {
        switch self {
        case .queued: 0
        case .extracting: 10
        case .chunking: 40
        case .analyzing: 50
        case .saving: 85
        case .ready, .failed: 100
        }
    }
}
