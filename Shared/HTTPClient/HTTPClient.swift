import CCurl
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Threads
import Wire

/// Outgoing HTTP over libcurl: one thread drives a `curl_multi` handle for every exchange of the
/// process (HTTP/1.1 and HTTP/2, connections reused and multiplexed); callers await a whole
/// response or iterate a stream of chunks.
///
/// ```swift
/// let http = try HTTPClient(logger: logger)
/// let response = try await http.send(HTTPRequest(method: "POST", url: url, headers: [("content-type", "application/json")], body: json))
/// for try await event in http.stream(request) { … }   // .head, then .body chunks
/// await http.shutdown()
/// ```
public final class HTTPClient: Sendable {
    private enum Command: Sendable {
        case start(id: Int, request: HTTPRequest, sink: TransferSink)
        case cancel(id: Int)
    }

    private struct Inbox {
        var commands: [Command] = []
        var accepting = true
    }

    private let inbox = Mutex(Inbox())
    private let counter = Atomic<Int>(0)
    // The multi handle is created here and then used only on the client's thread, except for
    // curl_multi_wakeup, which libcurl documents as callable from any thread.
    private let multi: MultiHandle
    private let finished = Mutex<[CheckedContinuation<Void, Never>]?>([])
    private let logger: Logger

    /// Starts the client's thread. With `destinationPolicy`, every connection the client opens
    /// is checked against it (``DestinationPolicy``); without, any address is reached.
    public init(logger: Logger, destinationPolicy: DestinationPolicy? = nil) throws(HTTPClientError) {
        CurlGlobal.initialize()
        guard let handle = curl_multi_init() else { throw .transport("curl_multi_init failed") }
        studybus_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        multi = MultiHandle(handle)
        self.logger = logger
        startThread(named: "studybus-http") { [self] in
            CurlLoop(multi: multi.handle, logger: logger, destinations: destinationPolicy).run(takeCommands: takeCommands)
            curl_multi_cleanup(multi.handle)
            let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
                defer { waiters = nil }
                return waiters ?? []
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Sends `request` and returns the whole response.
    /// - Throws: ``HTTPClientError`` when no response arrives (an HTTP error status is returned).
    public func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        let id = counter.add(1, ordering: .relaxed).newValue
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                    if !submit(.start(id: id, request: request, sink: .buffered(continuation))) {
                        continuation.resume(throwing: HTTPClientError.cancelled)
                    }
                }
            } onCancel: {
                _ = submit(.cancel(id: id))
            }
        } catch let error as HTTPClientError {
            throw error
        } catch {
            throw .transport("\(error)")
        }
    }

    /// Sends `request` and delivers the head and then each body chunk as it arrives. Ending the
    /// iteration early cancels the exchange.
    public func stream(_ request: HTTPRequest) -> AsyncThrowingStream<HTTPStreamEvent, any Error> {
        let id = counter.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncThrowingStream<HTTPStreamEvent, any Error>.makeStream()
        continuation.onTermination = { [weak self] _ in _ = self?.submit(.cancel(id: id)) }
        if !submit(.start(id: id, request: request, sink: .streaming(continuation))) {
            continuation.finish(throwing: HTTPClientError.cancelled)
        }
        return stream
    }

    /// Cancels every exchange in progress and stops the thread.
    public func shutdown() async {
        inbox.withLock { $0.accepting = false }
        curl_multi_wakeup(multi.handle)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = finished.withLock { waiters -> Bool in
                guard waiters != nil else { return true }
                waiters!.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func submit(_ command: Command) -> Bool {
        let accepted = inbox.withLock { inbox -> Bool in
            guard inbox.accepting else { return false }
            inbox.commands.append(command)
            return true
        }
        if accepted { curl_multi_wakeup(multi.handle) }
        return accepted
    }

    private func takeCommands() -> (starts: [(Int, HTTPRequest, TransferSink)], cancels: [Int], keepRunning: Bool) {
        inbox.withLock { inbox in
            var starts: [(Int, HTTPRequest, TransferSink)] = []
            var cancels: [Int] = []
            for command in inbox.commands {
                switch command {
                case .start(let id, let request, let sink): starts.append((id, request, sink))
                case .cancel(let id): cancels.append(id)
                }
            }
            inbox.commands.removeAll()
            return (starts, cancels, inbox.accepting)
        }
    }
}

/// Where a transfer's result goes.
enum TransferSink: Sendable {
    case buffered(CheckedContinuation<HTTPResponse, any Error>)
    case streaming(AsyncThrowingStream<HTTPStreamEvent, any Error>.Continuation)
}

/// The multi handle pointer, passed to the client's thread at start.
struct MultiHandle: @unchecked Sendable {
    // @unchecked: after init only the client's thread uses it, except curl_multi_wakeup, which
    // libcurl makes thread-safe.
    let handle: UnsafeMutableRawPointer
    init(_ handle: UnsafeMutableRawPointer) { self.handle = handle }
}

/// `curl_global_init`, once per process, before any handle exists.
enum CurlGlobal {
    private static let once: Void = { curl_global_init(Int(CURL_GLOBAL_ALL)) }()
    static func initialize() { _ = once }
}

extension HTTPClient: Service {
    /// Keeps the client until graceful shutdown, then closes it; run it before the services
    /// that use it, so that it closes after them.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
