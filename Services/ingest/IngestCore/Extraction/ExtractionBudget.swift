import Synchronization
import Threads
import Wire

/// What one job's extraction may still do, shared by every parser, unpacker and tool it runs
/// (attachments of an e-mail included): whether it was cancelled, and how many bytes it may still
/// unpack from compressed parts (a Word document's zip) or take from tools (pdftotext's text).
///
/// The unpacked bytes are reserved in the worker's memory budget with the file when the job is
/// admitted (``IngestConfiguration/expansionAllowance(_:fileBytes:)``), so a zip bomb fails its
/// job instead of growing the worker past `INGEST_MEMORY_BUDGET_MB`.
///
/// Parsers run on dispatch threads, where `Task.isCancelled` does not reach: they call
/// ``checkpoint()`` in their loops, which throws once the job's task was cancelled (its time
/// limit, or shutdown).
final class ExtractionBudget: Sendable {
    /// Bytes that unpacking and tools may still produce.
    private let expandable: Atomic<Int>
    /// What the job was allowed in all, for messages.
    let expansionAllowance: Int
    /// The most one zip entry may inflate per compressed byte (`INGEST_MAX_COMPRESSION_RATIO`).
    let compressionRatio: Int
    private let cancelled = Atomic<Bool>(false)

    /// - Parameters:
    ///   - expansionAllowance: bytes the job may unpack or take from tools.
    ///   - compressionRatio: the most one zip entry may inflate per compressed byte.
    init(expansionAllowance: Int, compressionRatio: Int) {
        self.expansionAllowance = max(0, expansionAllowance)
        self.compressionRatio = max(1, compressionRatio)
        expandable = Atomic(self.expansionAllowance)
    }

    /// A budget without limits, never cancelled: for calling one parser alone (tests, fuzzing).
    static var unlimited: ExtractionBudget { ExtractionBudget(expansionAllowance: .max, compressionRatio: .max) }

    /// Stops the parsers at their next ``checkpoint()``.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    /// Throws once the job was cancelled; parsers call it in their loops (an atomic load).
    /// - Throws: `CANCELLED`.
    func checkpoint() throws(BusError) {
        if cancelled.load(ordering: .relaxed) { throw .cancelled("the job was cancelled") }
    }

    /// Bytes that unpacking and tools may still produce.
    var remaining: Int { expandable.load(ordering: .relaxed) }

    /// Takes `bytes` of the allowance; false (taking nothing) when fewer are left.
    func take(_ bytes: Int) -> Bool {
        var current = expandable.load(ordering: .relaxed)
        while true {
            guard bytes <= current else { return false }
            let (exchanged, original) = expandable.compareExchange(expected: current, desired: current - bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }
}

/// Runs `work` (a parser) off the cooperative pool, as Threads' `offThePool` does; cancelling the
/// calling task cancels `budget`, which stops the parser at its next checkpoint.
func offThePool<Output: Sendable>(
    cancelling budget: ExtractionBudget, _ work: @escaping @Sendable () throws(BusError) -> Output
) async throws(BusError) -> Output {
    let result = await withTaskCancellationHandler {
        await offThePool { () -> Result<Output, BusError> in Result { () throws(BusError) in try work() } }
    } onCancel: {
        budget.cancel()
    }
    return try result.get()
}
