import Dispatch

/// Where PDFs are drawn: one serial dispatch queue, off Swift's cooperative pool (drawing a few
/// hundred pages of text blocks its thread for a second or more, and the pool has one thread
/// per core for every request of the process). One PDF at a time keeps the CPU and memory of
/// many concurrent exports to one renderer's; the others wait their turn.
public enum PDFRendering {
    private static let queue = DispatchQueue(label: "studybus.pdf-rendering", qos: .userInitiated)

    /// Runs `draw` on the rendering queue and returns its result. `draw` makes its own
    /// ``PDFCanvas`` and finishes it there: a canvas never leaves the thread that drew it.
    public static func run<Output: Sendable, Failure: Error>(
        _ draw: @escaping @Sendable () throws(Failure) -> Output
    ) async throws(Failure) -> Output {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Output, Failure>, Never>) in
            queue.async { continuation.resume(returning: Result { () throws(Failure) -> Output in try draw() }) }
        }
        return try result.get()
    }
}
